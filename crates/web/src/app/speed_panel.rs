//! The speed check: one button runs the bandwidth probe and a greedy decode of the loaded model
//! (128 tokens, or fewer once 20 s have passed: speed.rs), then shows a card — adapter,
//! browser, GB/s, tok/s, MBU, cost per dispatch, where the device sits among the presets — to
//! copy as Markdown or share as a link.

use super::link::send;
use super::share::Share;
use super::state::State;
use crate::browser::browser_name;
use crate::params::Settings;
use crate::protocol::{GenerateRequest, ToWorker};
use crate::route::Panel;
use crate::speed::{DECODE_SECONDS, DECODE_TOKENS, PROMPT, SpeedResult};
use leptos::prelude::*;
use tokscope_core::sampling::SamplingParams;

#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    Idle,
    Probing,
    Decoding,
    Done(SpeedResult),
    Failed(String),
}

/// Starts the check: the probe first where a GPU runs the model, else straight to decoding.
pub fn start(state: State) {
    match state.model.get_untracked() {
        Some(m) if m.backend.gpu => {
            state.speed.set(Stage::Probing);
            state.status.set("Speed check: measuring read bandwidth…".into());
            send(&ToWorker::Probe, None);
        }
        Some(_) => decode(state),
        None => state.speed.set(Stage::Failed("no model is loaded yet".into())),
    }
}

/// The check's decode: greedy, end-of-text ignored; state.rs stops it early when time is up.
pub fn decode(state: State) {
    state.speed.set(Stage::Decoding);
    fixed_decode(state, DECODE_TOKENS);
    state
        .status
        .set(format!("Speed check: decoding up to {DECODE_TOKENS} tokens…"));
}

/// A measurement's decode: `tokens` greedy tokens from a fixed prompt, end-of-text ignored
/// (the speed check and the precision dial).
pub fn fixed_decode(state: State, tokens: usize) {
    state.begin_run();
    send(
        &ToWorker::Generate(GenerateRequest {
            prompt: PROMPT.into(),
            chat: false,
            sampling: SamplingParams {
                temperature: 0.0,
                ..Default::default()
            },
            max_tokens: tokens,
            ignore_eos: true,
        }),
        None,
    );
}

/// The card's figures once the decode is done.
pub fn result(state: State) -> Stage {
    let (tok_s, tokens) = state.meter.with_untracked(|m| (m.mean_tok_s(), m.count()));
    let (Some(m), Some(tok_s)) = (state.model.get_untracked(), tok_s) else {
        return Stage::Failed("the decode produced no timed tokens".into());
    };
    let probe = state.probe.get_untracked().filter(|_| m.backend.gpu);
    let ua = web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .unwrap_or_default();
    Stage::Done(SpeedResult {
        adapter: m.backend.label.clone(),
        browser: browser_name(&ua),
        model: m.name.clone(),
        gb_s: probe.map(|p| p.read_gb_s),
        dispatch_us: probe.map(|p| p.dispatch_us),
        latency: probe.map(|p| p.latency),
        gpu_gb_s: probe.and_then(|p| p.gpu_read_gb_s),
        gpu_dispatch_us: probe.and_then(|p| p.gpu_dispatch_us),
        dispatches: m.backend.dispatches_per_token.filter(|_| probe.is_some()),
        tok_s,
        tokens,
        bytes_per_token: m.bytes_per_token,
    })
}

#[component]
fn Card(result: SpeedResult, shared: bool) -> impl IntoView {
    let md = result.to_markdown();
    let floor = result.floor();
    let shown = RwSignal::new(String::new());
    let note = RwSignal::new("");
    let opt = |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |x| format!("{x:.digits$}"));
    let pairs = Signal::derive({
        let r = result.clone();
        move || r.to_pairs()
    });
    view! {
        <div class="result-card" data-testid="speed-card">
            {shared.then(|| view! { <p class="note" data-testid="speed-shared">"A shared result, measured on the device that made the link."</p> })}
            <dl class="figures">
                <dt>"Adapter"</dt><dd data-testid="speed-adapter">{result.adapter.clone()}</dd>
                <dt>"Browser"</dt><dd data-testid="speed-browser">{result.browser.clone()}</dd>
                <dt>"Model"</dt><dd>{result.model.clone()}</dd>
                <dt>"Read bandwidth"</dt><dd><span data-testid="speed-gbs">{opt(result.gb_s, 2)}</span>" GB/s (probe)"
                    {result.gpu_gb_s.map(|g| view! { ", "<span data-testid="speed-gpu-gbs">{format!("{g:.2}")}</span>" GB/s on the GPU's clock" })}</dd>
                <dt>"Decode"</dt><dd><span data-testid="speed-tok-s">{format!("{:.1}", result.tok_s)}</span>
                    {result.over()}</dd>
                <dt>"MBU"</dt><dd data-testid="speed-mbu">{result.mbu().map_or("– (no GPU probe on the CPU engine)".into(), |m| format!("{:.0} %", 100.0 * m))}</dd>
                <dt>"Cost per dispatch"</dt><dd><span data-testid="speed-dispatch">{opt(result.dispatch_us, 1)}</span>" µs"
                    {result.gpu_dispatch_us.map(|g| view! { ", "<span data-testid="speed-gpu-dispatch">{format!("{g:.1}")}</span>" µs on the GPU's clock" })}</dd>
                <dt>"Completion latency"</dt><dd data-testid="speed-latency">{result.latency_text()}</dd>
                <dt>"Floor model"</dt><dd data-testid="speed-floor">{floor.map_or("– (needs the GPU probe)".into(), |(_, f)| format!("{:.1} tok/s: {:.3} ms of bytes + {:.3} ms of fixed cost a token", f.tok_s, f.bytes_s * 1e3, f.fixed_s * 1e3))}</dd>
                <dt>"Among the presets"</dt><dd data-testid="speed-placement">{result.placement().unwrap_or_else(|| "–".into())}</dd>
            </dl>
            {floor.map(|(inputs, f)| view! {
                <p class="explain" data-testid="speed-floor-sentence">{inputs.sentence(&f)}" "{f.measured_sentence(result.tok_s).unwrap_or_default()}</p>
            })}
            <div class="share">
                <button data-testid="speed-copy-markdown" on:click=move |_| {
                    super::share::copy(&md, note);
                    shown.set(md.clone());
                }>"Copy as Markdown"</button>
                <span class="caption" aria-live="polite">{move || note.get()}</span>
            </div>
            <Show when=move || !shown.get().is_empty()>
                <textarea class="shared" readonly rows="8" data-testid="speed-markdown" aria-label="the result as Markdown"
                    prop:value=move || shown.get()></textarea>
            </Show>
            <Share panel=Panel::Speed pairs/>
        </div>
    }
}

#[component]
pub fn SpeedPanel(
    state: State,
    shared: Option<SpeedResult>,
    /// The precision and batch dials inside the card (the guided path shows them as steps of their own).
    #[prop(default = true)]
    dials: bool,
) -> impl IntoView {
    let busy = move || matches!(state.speed.get(), Stage::Probing | Stage::Decoding);
    let ready = move || state.model.get().is_some() && !state.running.get() && !busy();
    view! {
        <section class="card speed" id="speed" aria-labelledby="speed-h">
            <h2 id="speed-h">"Speed check"</h2>
            <p class="explain">"Measures this device: how fast its GPU reads memory (a streaming kernel shaped like the model's) and what one more dispatch costs, each from the difference between a short and a long submit, so the browser's wait for the GPU is not counted in them; that wait is the completion latency, measured on its own; "
                {format!("then decodes {DECODE_TOKENS} tokens of the loaded model (fewer where that takes over {DECODE_SECONDS:.0} s). MBU says how much of that bandwidth decoding uses.")}</p>
            <button class="primary" data-testid="speed-run" disabled=move || !ready() on:click=move |_| start(state)>"Run the speed check"</button>
            <p class="caption" data-testid="speed-stage" aria-live="polite">{move || match state.speed.get() {
                Stage::Idle => String::new(),
                Stage::Probing => "Measuring read bandwidth…".into(),
                Stage::Decoding => format!("Decoding up to {DECODE_TOKENS} tokens…"),
                Stage::Done(_) => "Done.".into(),
                Stage::Failed(e) => format!("The speed check failed: {e}"),
            }}</p>
            {move || match state.speed.get() {
                Stage::Done(r) => Some(view! { <Card result=r shared=false/> }.into_any()),
                _ => shared.clone().map(|r| view! { <Card result=r shared=true/> }.into_any()),
            }}
            {dials.then(|| view! {
                <super::dial_panel::DialPanel state/>
                <super::batch_panel::BatchPanel state/>
            })}
        </section>
    }
}
