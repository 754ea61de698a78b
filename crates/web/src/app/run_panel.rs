//! The run panel: prompt, chat or raw completion, sampling controls, Generate / Stop, and the
//! streamed text (rendered as text, never as HTML).

use super::field::Field;
use super::port::send;
use super::share::Share;
use super::state::State;
use crate::params::RunSettings;
use crate::params::Settings;
use crate::protocol::{GenerateRequest, ToWorker};
use crate::route::Panel;
use leptos::prelude::*;
use tokscope_core::record::RunKind;

pub fn generate(state: State) {
    let s = state.settings.get_untracked();
    if let Err(e) = s.sampling.validate() {
        state.fail(e.to_string());
        return;
    }
    state.start_run(
        RunKind::Generate,
        GenerateRequest {
            prompt: s.prompt,
            chat: s.chat,
            sampling: s.sampling,
            max_tokens: s.max_tokens,
            ignore_eos: s.ignore_eos,
            run: 0,
            chain: s.chain,
        },
    );
}

#[component]
pub fn RunPanel(state: State) -> impl IntoView {
    let busy = move || state.busy();
    let running = move || state.generating();
    view! {
        <section class="card run" id="run" aria-labelledby="run-h">
            <h2 id="run-h">"Run"</h2>
            <label for="prompt" class="sr-only">"Prompt"</label>
            <textarea id="prompt" rows="3" data-testid="prompt" placeholder="Type a prompt"
                prop:value=move || state.settings.get().prompt
                on:input=move |ev| { let v = event_target_value(&ev); state.settings.update(|s| s.prompt = v); }
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" && (ev.ctrl_key() || ev.meta_key()) && busy().is_none() {
                        generate(state);
                    }
                }></textarea>
            <div class="row">
                <label class="check">
                    <input type="checkbox" data-testid="chat"
                        prop:checked=move || state.settings.get().chat
                        on:change=move |ev| { let c = event_target_checked(&ev); state.settings.update(|s| s.chat = c); }/>
                    " Chat (the model's own template)"
                </label>
            </div>
            <div class="fields">
                <Field settings=state.settings label="Temperature (0 = greedy)" key="temperature" id="temperature" step="0.1" get=|s: &RunSettings| s.sampling.temperature.to_string()/>
                <Field settings=state.settings label="Top-k (0 = off)" key="top_k" id="top_k" step="1" get=|s: &RunSettings| s.sampling.top_k.to_string()/>
                <Field settings=state.settings label="Top-p" key="top_p" id="top_p" step="0.05" get=|s: &RunSettings| s.sampling.top_p.to_string()/>
                <Field settings=state.settings label="Seed" key="seed" id="seed" step="1" get=|s: &RunSettings| s.sampling.seed.to_string()/>
                <Field settings=state.settings label="Max tokens" key="max_tokens" id="max_tokens" step="1" get=|s: &RunSettings| s.max_tokens.to_string()/>
            </div>
            <div class="row buttons">
                <button class="primary" data-testid="generate" disabled=move || busy().is_some()
                    on:click=move |_| generate(state)>"Generate"</button>
                <button data-testid="stop" disabled=move || !running()
                    on:click=move |_| send(&ToWorker::Stop, None)>"Stop"</button>
                <super::Why state testid="generate-why"/>
            </div>
            <h3 class="sr-only">"Output"</h3>
            <pre class="output" data-testid="output" aria-live="off">{move || state.output.get()}</pre>
            <Share panel=Panel::Run pairs=Signal::derive(move || {
                let mut p = state.settings.with(|s| s.to_pairs());
                p.push(("autorun", "1".into()));
                p
            })/>
            <super::meter::RunRate state/>
        </section>
    }
}
