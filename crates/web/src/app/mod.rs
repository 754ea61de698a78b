//! The playground page (Leptos, client-side rendered). The engine runs in a worker
//! ([`link`]); the page renders [`state::State`] and sends what the reader asks for.

mod agent_panel;
mod batch_panel;
mod dial_panel;
mod explain;
mod field;
mod guide;
mod link;
mod meter;
mod model_panel;
mod port;
mod roofline_panel;
mod run_panel;
mod share;
mod speed_panel;
mod state;
mod tokens_panel;

use crate::params::{AgentSettings, RooflineSettings, RunSettings, Settings};
use crate::protocol::{ModelSource, ToWorker};
use crate::route::{Panel, Route};
use crate::speed::SpeedResult;
use leptos::prelude::*;
use state::State;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// The model the page loads unless the URL names another (served beside the page).
pub const DEFAULT_MODEL: &str = tokscope_core::shipped::SHIPPED[0].path;

/// Decoded pairs of a query string.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let Ok(params) = web_sys::UrlSearchParams::new_with_str(query) else {
        return vec![];
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
    pairs
}

/// Every panel's settings from the URL: the page's `?query` and then the fragment's (links
/// and embeds put theirs after `#/panel?`), with one message per rejected value.
/// Every panel's settings from the URL, and the token view's `text=`.
struct UrlSettings {
    run: RunSettings,
    roofline: RooflineSettings,
    agent: AgentSettings,
    text: Option<String>,
    errors: Vec<String>,
}

fn url_settings(route: &Route) -> UrlSettings {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let mut pairs = query_pairs(&search);
    // The guided path's roofline starts from the loaded model, not the calculator's example.
    if route.guide.is_some() {
        pairs.insert(0, ("model_preset".into(), crate::params::ROOFLINE_LOADED.into()));
    }
    pairs.extend(query_pairs(&route.query));
    let view = || pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let (run, mut errors) = RunSettings::from_pairs(view());
    let (roofline, e) = RooflineSettings::from_pairs(view());
    errors.extend(e);
    let (agent, e) = AgentSettings::from_pairs(view());
    errors.extend(e);
    let text = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == tokens_panel::TEXT_KEY)
        .map(|(_, v)| v.clone());
    UrlSettings {
        run,
        roofline,
        agent,
        text,
        errors,
    }
}

fn current_route() -> (Route, Option<String>) {
    let hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    match Route::parse(&hash) {
        Ok(r) => (r, None),
        Err(e) => (Route::parse("").expect("the empty route"), Some(e)),
    }
}

/// Loads a model from a URL (the default one, or the reader's), or from a picked `file`
/// (`source` is then `ModelSource::File`), on the engine the settings ask for.
pub fn load(state: State, source: ModelSource, file: Option<&web_sys::File>) {
    // Refused before anything is unloaded: the model in use stays.
    if let ModelSource::Url(url) = &source
        && let Err(e) = crate::protocol::check_model_setting(url)
    {
        let message = format!("{url}: {e}");
        state.status.set(format!("Error: {message}"));
        state.error.set(Some(message));
        return;
    }
    // A run in progress ends first (at its next token) rather than holding the load back
    // until it finishes; its text so far stays on the page.
    if state.generating_untracked() {
        port::send(&ToWorker::Stop, None);
    }
    state.model.set(None);
    state.error.set(None);
    state.cache_warning.set(None);
    // Links made from here on load the same model (a picked file has no name to share).
    if let Some(m) = source.setting() {
        state.settings.update(|s| s.model = (m != DEFAULT_MODEL).then_some(m));
    }
    let (backend, nudge) = state.settings.with_untracked(|s| (s.backend, s.nudge));
    port::send(&ToWorker::Load { source, backend, nudge }, file);
}

pub fn start() {
    console_error_panic_hook::set_once();
    let (route, route_error) = current_route();
    let UrlSettings {
        run,
        roofline,
        agent,
        text,
        mut errors,
    } = url_settings(&route);
    errors.extend(route_error);
    let header_only = route.embed && route.panel == Some(Panel::Tokens);
    let state = State::new(run, roofline, agent, state::stages::Tokens::new(text, header_only));
    // A shared speed-check result (`#/speed?tok_s=…`) shows as its card.
    let shared = (route.panel == Some(Panel::Speed))
        .then(|| SpeedResult::from_pairs(query_pairs(&route.query).iter().map(|(k, v)| (k.as_str(), v.as_str()))))
        .filter(|(r, errors)| errors.is_empty() && r.tok_s > 0.0)
        .map(|(r, _)| r);
    if !errors.is_empty() {
        state.notice.set(Some(errors.join("; ")));
    }
    // The calculators need no model: their embeds start no engine and download nothing. The
    // token view's embed starts the engine for the tokenizer alone, without the weights.
    let engine = !route.embed || matches!(route.panel, Some(Panel::Run | Panel::Speed | Panel::Tokens));
    let load_model = engine && !header_only;
    if engine && let Err(e) = link::spawn(state) {
        state.fail(e);
    }
    // A link to another panel of this page (or an edited fragment) starts afresh from it;
    // within the guided path (the browser's Back and Forward too) only the step changes.
    let step = RwSignal::new(route.guide.unwrap_or(1));
    let guided = route.guide.is_some();
    // The guided path's step the address names, when this page is on the guided path.
    let guide_step = move || {
        let hash = web_sys::window()?.location().hash().ok()?;
        Route::parse(&hash).ok()?.guide.filter(|_| guided)
    };
    let on_hash = Closure::<dyn FnMut()>::new(move || match guide_step() {
        Some(n) => step.set(n),
        None => {
            if let Some(w) = web_sys::window() {
                let _ = w.location().reload();
            }
        }
    });
    // The guided path's own steps are history entries (pushState): going back to one fires
    // popstate, and hashchange too in Chromium and Firefox but not in WebKit.
    let on_pop = Closure::<dyn FnMut()>::new(move || {
        if let Some(n) = guide_step() {
            step.set(n);
        }
    });
    if let Some(w) = web_sys::window() {
        let _ = w.add_event_listener_with_callback("hashchange", on_hash.as_ref().unchecked_ref());
        let _ = w.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
    }
    on_hash.forget();
    on_pop.forget();
    // Effects need the executor that mounting sets up, so they are made inside.
    leptos::mount::mount_to_body(move || {
        if load_model {
            start_effects(state);
        }
        match (route.embed, route.panel) {
            (true, Some(panel)) => {
                if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
                    body.class_list().add_1("embed").ok();
                }
                share::post_height(panel);
                view! { <Embed state panel shared=shared.clone()/> }.into_any()
            }
            _ if guided => view! { <guide::Guide state step/> }.into_any(),
            (_, panel) => {
                if let Some(p) = panel {
                    scroll_to(p);
                }
                view! { <App state shared=shared.clone()/> }.into_any()
            }
        }
    });
}

/// Scrolls the full page to a linked panel once it is drawn.
fn scroll_to(panel: Panel) {
    let cb = Closure::once_into_js(move || {
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(panel.slug()))
        {
            el.scroll_into_view();
        }
    });
    if let Some(w) = web_sys::window() {
        let _ = w.request_animation_frame(cb.unchecked_ref());
    }
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
        load(state, ModelSource::from_setting(&url), None);
        port::send(&ToWorker::ListCache, None);
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

/// The messages every view shows: status, notices, errors.
#[component]
fn Messages(state: State) -> impl IntoView {
    view! {
        <p class="status" role="status" aria-live="polite" data-testid="status">{move || state.status.get()}</p>
        <Show when=move || state.notice.get().is_some()>
            <p class="notice" data-testid="notice">{move || state.notice.get().unwrap_or_default()}</p>
        </Show>
        <Show when=move || state.error.get().is_some()>
            <p class="error" role="alert" data-testid="error">{move || state.error.get().unwrap_or_default()}</p>
        </Show>
    }
}

/// Why a panel's start button is disabled, beside it: another run is in flight, or the model
/// is still loading.
#[component]
fn Why(state: State, testid: &'static str) -> impl IntoView {
    view! { <span class="caption why" data-testid=testid aria-live="polite">{move || state.busy().unwrap_or_default()}</span> }
}

#[component]
fn Badge(state: State) -> impl IntoView {
    let badge = move || match state.model.get() {
        Some(m) => m.backend.label,
        None if state.error.get().is_some() => "no model".into(),
        None => "loading…".into(),
    };
    let badge_kind = move || match state.model.get() {
        Some(m) if m.backend.gpu => "badge gpu",
        Some(_) => "badge cpu",
        None => "badge",
    };
    // Where WebGPU runs, how soon its results reach the page (and whether reads nudge).
    let title = move || {
        let backend = state.model.get().map(|m| m.backend);
        let mut t = "the engine that runs the model".to_string();
        if let Some(c) = backend.as_ref().and_then(|b| b.completion) {
            t.push_str(&format!("; completion latency: {}", c.describe()));
        }
        if let Some(k) = backend.and_then(|b| b.kernels) {
            t.push_str(&format!("; {k}"));
        }
        t
    };
    view! { <span class=badge_kind data-testid="backend" title=title>{badge}</span> }
}

#[component]
fn App(state: State, shared: Option<SpeedResult>) -> impl IntoView {
    view! {
        <header class="top">
            <h1>"tokscope"</h1>
            <p class="tagline">"A language model on your own device: watch why generation speed tracks memory bandwidth. "
                <a href=guide::href(1) data-testid="guide-start">"Take the guided tour"</a>"."</p>
            <Badge state/>
        </header>
        <Messages state/>
        <main class="grid">
            <run_panel::RunPanel state/>
            <meter::Meter state/>
            <model_panel::ModelPanel state/>
            <speed_panel::SpeedPanel state shared=shared.clone()/>
            <roofline_panel::RooflinePanel state/>
            <tokens_panel::TokensPanel state/>
            <agent_panel::AgentPanel state/>
            <explain::Explainers/>
        </main>
    }
}

/// One panel alone, for an article's `<iframe>`: no header, a link to the whole playground.
#[component]
fn Embed(state: State, panel: Panel, shared: Option<SpeedResult>) -> impl IntoView {
    let body = match panel {
        Panel::Run => view! { <run_panel::RunPanel state/><meter::Meter state/> }.into_any(),
        Panel::Roofline => view! { <roofline_panel::RooflinePanel state/> }.into_any(),
        Panel::Agent => view! { <agent_panel::AgentPanel state/> }.into_any(),
        Panel::Speed => view! { <speed_panel::SpeedPanel state shared/><meter::Meter state/> }.into_any(),
        Panel::Tokens => view! { <tokens_panel::TokensPanel state/> }.into_any(),
    };
    let engine = matches!(panel, Panel::Run | Panel::Speed);
    view! {
        <main class="embedded" data-testid=format!("embed-{}", panel.slug())>
            <Show when=move || engine><Badge state/></Show>
            <Show when=move || engine || state.notice.get().is_some()><Messages state/></Show>
            {body}
            <p class="credit"><a href="./" target="_blank" rel="noopener">"tokscope"</a>": measured on your own device"</p>
        </main>
    }
}
