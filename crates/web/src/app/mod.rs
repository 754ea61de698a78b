//! The playground page (Leptos, client-side rendered). The engine runs in a worker
//! ([`link`]); the page renders [`state::State`] and sends what the reader asks for.

mod link;
mod meter;
mod model_panel;
mod run_panel;
mod state;

use crate::params::{RunSettings, Settings};
use crate::protocol::{BackendChoice, ModelSource, ToWorker};
use leptos::prelude::*;
use state::State;

/// The model the page loads unless the URL names another (served beside the page).
pub const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

fn url_settings() -> (RunSettings, Vec<String>) {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let Ok(params) = web_sys::UrlSearchParams::new_with_str(&search) else {
        return (RunSettings::default(), vec![]);
    };
    let mut pairs = Vec::new();
    if let Ok(Some(iter)) = js_sys::try_iter(&params) {
        for entry in iter.flatten() {
            let kv = js_sys::Array::from(&entry);
            if let (Some(k), Some(v)) = (kv.get(0).as_string(), kv.get(1).as_string()) {
                pairs.push((k, v));
            }
        }
    }
    RunSettings::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Loads a model from a URL (the default one, or the reader's), or from a picked `file`
/// (`source` is then `ModelSource::File`), on the engine the settings ask for.
pub fn load(state: State, source: ModelSource, file: Option<&web_sys::File>) {
    state.model.set(None);
    state.error.set(None);
    let backend = match state.settings.get_untracked().force_cpu {
        true => BackendChoice::Cpu,
        false => BackendChoice::Auto,
    };
    link::send(&ToWorker::Load { source, backend }, file);
}

pub fn start() {
    console_error_panic_hook::set_once();
    let (settings, errors) = url_settings();
    let state = State::new(settings);
    if !errors.is_empty() {
        state.notice.set(Some(errors.join("; ")));
    }
    if let Err(e) = link::spawn(state) {
        state.fail(e);
    }
    // Effects need the executor that mounting sets up, so they are made inside.
    leptos::mount::mount_to_body(move || {
        start_effects(state);
        view! { <App state/> }
    });
}

fn start_effects(state: State) {
    // The first message waits for the worker's "alive": a wasm worker drops messages that
    // arrive before its handler is installed.
    Effect::new(move |done: Option<bool>| {
        if done == Some(true) || !state.alive.get() {
            return done.unwrap_or(false);
        }
        let url = state
            .settings
            .get_untracked()
            .model
            .unwrap_or_else(|| DEFAULT_MODEL.into());
        load(state, ModelSource::Url(url), None);
        link::send(&ToWorker::ListCache, None);
        true
    });
    // autorun=1: generate as soon as the model is ready, once.
    Effect::new(move || {
        if state.model.get().is_some() && state.autorun_pending.get_untracked() {
            state.autorun_pending.set(false);
            run_panel::generate(state);
        }
    });
}

#[component]
fn App(state: State) -> impl IntoView {
    let badge = move || match state.model.get() {
        Some(m) => m.backend.label,
        None => "loading…".into(),
    };
    let badge_kind = move || match state.model.get() {
        Some(m) if m.backend.gpu => "badge gpu",
        Some(_) => "badge cpu",
        None => "badge",
    };
    view! {
        <header class="top">
            <h1>"tokscope"</h1>
            <p class="tagline">"A language model on your own device: watch why generation speed tracks memory bandwidth."</p>
            <span class=badge_kind data-testid="backend" title="the engine that runs the model">{badge}</span>
        </header>
        <p class="status" role="status" aria-live="polite" data-testid="status">{move || state.status.get()}</p>
        <Show when=move || state.notice.get().is_some()>
            <p class="notice" data-testid="notice">{move || state.notice.get().unwrap_or_default()}</p>
        </Show>
        <Show when=move || state.error.get().is_some()>
            <p class="error" role="alert" data-testid="error">{move || state.error.get().unwrap_or_default()}</p>
        </Show>
        <main class="grid">
            <run_panel::RunPanel state/>
            <meter::Meter state/>
            <model_panel::ModelPanel state/>
        </main>
    }
}
