//! The speed check: one button runs the bandwidth probe and a greedy decode of the loaded model
//! (128 tokens, or fewer once 20 s have passed: speed.rs), then shows a card — adapter,
//! browser, GB/s, tok/s, MBU, cost per dispatch, where the device sits among the presets — to
//! copy as Markdown or share as a link.

use super::share::Share;
use super::state::State;
use super::state::stages::SpeedStage as Stage;
use crate::params::Settings;
use crate::route::Panel;
use crate::speed::{DECODE_SECONDS, DECODE_TOKENS, SpeedResult};
use leptos::prelude::*;

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
    let ready = move || state.busy().is_none();
    view! {
        <section class="card speed" id="speed" aria-labelledby="speed-h">
            <h2 id="speed-h">"Speed check"</h2>
            <p class="explain">"Measures this device: how fast its GPU reads memory (a streaming kernel shaped like the model's) and what one more dispatch costs, each from the difference between a short and a long submit, so the browser's wait for the GPU is not counted in them; that wait is the completion latency, measured on its own; "
                {format!("then decodes {DECODE_TOKENS} tokens of the loaded model (fewer where that takes over {DECODE_SECONDS:.0} s). MBU says how much of that bandwidth decoding uses.")}</p>
            <button class="primary" data-testid="speed-run" disabled=move || !ready() on:click=move |_| state.start_speed_check()>"Run the speed check"</button>
            <super::Why state testid="speed-why"/>
            <p class="caption" data-testid="speed-stage" aria-live="polite">{move || match state.speed.get() {
                Stage::Idle => String::new(),
                Stage::Probing => "Measuring read bandwidth…".into(),
                Stage::Decoding => format!("Decoding up to {DECODE_TOKENS} tokens…"),
                Stage::Done(_) => "Done.".into(),
                Stage::Failed(e) => format!("The speed check failed: {e}"),
            }}</p>
            {move || match state.speed.get() {
                Stage::Done(r) => Some(view! { <Card result=*r shared=false/> }.into_any()),
                _ => shared.clone().map(|r| view! { <Card result=r shared=true/> }.into_any()),
            }}
            {dials.then(|| view! {
                <super::dial_panel::DialPanel state/>
                <super::batch_panel::BatchPanel state/>
            })}
        </section>
    }
}
