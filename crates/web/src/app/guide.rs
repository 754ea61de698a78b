//! The guided path (`#/guide/1` … `#/guide/7`): one step at a time from "this is my rate" to
//! "this is why", each step a live experiment in the same panels as the whole page, with its
//! sentence computed in core ([`tokscope_core::lesson`]) from the figures measured so far.
//! Next and Back change the step in place (the model, the run and the probe stay); every step
//! has its own link for an educator to send.

use super::state::State;
use super::{Badge, Messages};
use leptos::prelude::*;
use tokscope_core::lesson::{self, STEPS};

/// The fragment of step `n` (1-based).
pub fn href(n: usize) -> String {
    format!("#/guide/{n}")
}

/// Moves to step `n` without reloading: the measured figures are the lesson's material.
/// The URL follows, so the address bar always links to the step on screen.
pub fn go(step: RwSignal<usize>, n: usize) {
    step.set(n);
    if let Some(w) = web_sys::window() {
        if let Ok(history) = w.history() {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&href(n)));
        }
        w.scroll_to_with_x_and_y(0.0, 0.0);
    }
}

/// Step `n`'s sentence from what the page has measured, or `None` before its experiment ran.
fn finding(state: State, n: usize) -> Option<String> {
    let model = state.model.get();
    let rate = state.own_run.get().and_then(|r| Some((r.tok_s?, r.tokens)));
    let probe = state.probe.get().map(|p| p.read_gb_s);
    match n {
        1 => {
            let (tok_s, tokens) = rate?;
            lesson::rate(tok_s, tokens, &model?.backend.label)
        }
        2 => {
            let m = model?;
            lesson::bytes_per_token(&m.name, m.parameters, m.weight_bytes, m.bytes_per_token)
        }
        3 => lesson::bandwidth(probe, model?.bytes_per_token, rate.map_or(0.0, |r| r.0)),
        4 => lesson::ceiling(model?.bytes_per_token, probe?, rate?.0),
        5 => state.dial.with(|d| {
            let names: Vec<String> = d.points.iter().map(super::dial_panel::precision).collect();
            let points: Vec<_> = d
                .points
                .iter()
                .zip(&names)
                .filter_map(|(p, name)| Some((name.as_str(), p.context.bytes_per_token, p.tok_s?)))
                .collect();
            lesson::precision(&points)
        }),
        6 => state.batch.with(|b| {
            let points: Vec<_> = b
                .points
                .iter()
                .filter_map(|p| Some((p.batch() as usize, p.tok_s?, p.aggregate_tok_s()?)))
                .collect();
            lesson::batch(&points)
        }),
        7 => {
            let shape = state.agent.with(|a| a.shape);
            lesson::agent(rate?.0, shape.steps, shape.output_tokens + shape.reasoning_tokens)
        }
        _ => None,
    }
}

/// What step `n` still needs, said where its sentence will be.
fn waiting(state: State, n: usize) -> &'static str {
    match n {
        _ if state.model.get().is_none() => "Waiting for the model to load…",
        1 | 7 => "Not measured yet: generate some text (step 1) and its rate appears here.",
        3 => "Not measured yet: run the speed check.",
        4 if state.probe.get().is_none() => {
            "Needs a bandwidth measurement: run the speed check (step 3) on the WebGPU engine; the CPU engine has no probe."
        }
        4 => "Needs a rate: generate some text (step 1) or run the speed check (step 3).",
        5 => "Not measured yet: run the precision dial.",
        6 => "Not measured yet: run the batch dial.",
        _ => "",
    }
}

/// Every step's panels, each shown on its steps only: mounted once, so a run, a probe or a dial
/// keeps going while the reader moves on (and one view type, not one per step: the page's
/// wasm is its download).
#[component]
fn StepPanels(state: State, step: RwSignal<usize>) -> impl IntoView {
    let off = move |steps: &'static [usize]| move || !steps.contains(&step.get());
    view! {
        <div class="step-part" hidden=off(&[1])><super::run_panel::RunPanel state/></div>
        <div class="step-part" hidden=off(&[3])><super::speed_panel::SpeedPanel state shared=None dials=false/></div>
        <div class="step-part" hidden=off(&[1, 3])><super::meter::Meter state/></div>
        <div class="step-part" hidden=off(&[2])><super::model_panel::ModelPanel state/></div>
        <div class="step-part" hidden=off(&[4])><super::roofline_panel::RooflinePanel state/></div>
        <div class="step-part" hidden=off(&[5])><section class="card"><super::dial_panel::DialPanel state/></section></div>
        <div class="step-part" hidden=off(&[6])><section class="card"><super::batch_panel::BatchPanel state/></section></div>
        <div class="step-part" hidden=off(&[7])><super::agent_panel::AgentPanel state/></div>
    }
}

#[component]
pub fn Guide(state: State, step: RwSignal<usize>) -> impl IntoView {
    let n = move || step.get();
    let last = STEPS.len();
    let has_back = move || n() > 1;
    let has_next = move || n() < last;
    view! {
        <header class="top">
            <h1>"tokscope"</h1>
            <p class="tagline">"A guided tour in seven experiments: why generation speed tracks memory bandwidth, measured on this device."</p>
            <Badge state/>
        </header>
        <Messages state/>
        <nav class="guide-steps" aria-label="steps of the guided tour">
            <ol>{STEPS.iter().enumerate().map(|(i, s)| {
                let k = i + 1;
                view! { <li><a href=href(k) data-testid=format!("guide-step-{k}")
                    aria-current=move || (n() == k).then_some("step")
                    on:click=move |ev| { ev.prevent_default(); go(step, k); }>{s.title}</a></li> }
            }).collect_view()}</ol>
        </nav>
        <section class="card lesson" aria-labelledby="lesson-h" data-testid="lesson">
            <h2 id="lesson-h" data-testid="lesson-title">{move || format!("Step {} of {last}: {}", n(), STEPS[n() - 1].title)}</h2>
            <p class="task">{move || STEPS[n() - 1].task}</p>
            <p class="finding" data-testid="lesson-finding" aria-live="polite">
                {move || finding(state, n()).unwrap_or_else(|| waiting(state, n()).into())}
            </p>
            <p class="guide-nav">
                <Show when=has_back>
                    <a class="button" href=move || href(n() - 1) data-testid="guide-back"
                        on:click=move |ev| { ev.prevent_default(); go(step, n() - 1); }>"← Back"</a>
                </Show>
                <Show when=has_next>
                    <a class="button primary" href=move || href(n() + 1) data-testid="guide-next"
                        on:click=move |ev| { ev.prevent_default(); go(step, n() + 1); }>"Next →"</a>
                </Show>
                <a href="#/" data-testid="guide-all">"Everything on one page"</a>
            </p>
        </section>
        <main class="grid"><StepPanels state step/></main>
    }
}
