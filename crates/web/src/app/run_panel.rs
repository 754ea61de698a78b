//! The run panel: prompt, chat or raw completion, sampling controls, Generate / Stop, and the
//! streamed text (rendered as text, never as HTML).

use super::link::send;
use super::state::State;
use crate::params::RunSettings;
use crate::protocol::{GenerateRequest, ToWorker};
use leptos::prelude::*;

pub fn generate(state: State) {
    let s = state.settings.get_untracked();
    if let Err(e) = s.sampling.validate() {
        state.fail(e.to_string());
        return;
    }
    state.begin_run();
    send(
        &ToWorker::Generate(GenerateRequest {
            prompt: s.prompt,
            chat: s.chat,
            sampling: s.sampling,
            max_tokens: s.max_tokens,
        }),
        None,
    );
}

/// A number input bound to one setting (validated by [`RunSettings::set`], as URL values
/// are); an invalid entry shows its message and leaves the setting as it was.
#[component]
fn NumberField(
    state: State,
    label: &'static str,
    key: &'static str,
    step: &'static str,
    get: fn(&RunSettings) -> String,
) -> impl IntoView {
    let invalid = RwSignal::new(None::<String>);
    let on_change = move |ev: leptos::ev::Event| {
        let v = event_target_value(&ev);
        let mut s = state.settings.get_untracked();
        match s.set(key, &v) {
            Ok(()) => {
                invalid.set(None);
                state.settings.set(s);
            }
            Err(e) => invalid.set(Some(e)),
        }
    };
    view! {
        <label class="field" for=key>
            <span>{label}</span>
            <input id=key type="number" step=step inputmode="decimal" data-testid=key
                prop:value=move || get(&state.settings.get())
                aria-invalid=move || invalid.get().is_some().to_string()
                on:change=on_change/>
            <Show when=move || invalid.get().is_some()>
                <small class="invalid">{move || invalid.get().unwrap_or_default()}</small>
            </Show>
        </label>
    }
}

#[component]
pub fn RunPanel(state: State) -> impl IntoView {
    let ready = move || state.model.get().is_some();
    let running = move || state.running.get();
    view! {
        <section class="card run" aria-labelledby="run-h">
            <h2 id="run-h">"Run"</h2>
            <label for="prompt" class="sr-only">"Prompt"</label>
            <textarea id="prompt" rows="3" data-testid="prompt" placeholder="Type a prompt"
                prop:value=move || state.settings.get().prompt
                on:input=move |ev| { let v = event_target_value(&ev); state.settings.update(|s| s.prompt = v); }
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" && (ev.ctrl_key() || ev.meta_key()) && ready() && !running() {
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
                <NumberField state label="Temperature (0 = greedy)" key="temperature" step="0.1" get=|s| s.sampling.temperature.to_string()/>
                <NumberField state label="Top-k (0 = off)" key="top_k" step="1" get=|s| s.sampling.top_k.to_string()/>
                <NumberField state label="Top-p" key="top_p" step="0.05" get=|s| s.sampling.top_p.to_string()/>
                <NumberField state label="Seed" key="seed" step="1" get=|s| s.sampling.seed.to_string()/>
                <NumberField state label="Max tokens" key="max_tokens" step="1" get=|s| s.max_tokens.to_string()/>
            </div>
            <div class="row buttons">
                <button class="primary" data-testid="generate" disabled=move || !ready() || running()
                    on:click=move |_| generate(state)>"Generate"</button>
                <button data-testid="stop" disabled=move || !running()
                    on:click=move |_| send(&ToWorker::Stop, None)>"Stop"</button>
            </div>
            <h3 class="sr-only">"Output"</h3>
            <pre class="output" data-testid="output" aria-live="off">{move || state.output.get()}</pre>
        </section>
    }
}
