//! Form fields bound to one panel's settings. Every edit goes through the panel's
//! [`Settings::set`], the code that reads URL values, so an invalid entry shows the same message
//! and leaves the settings (and everything drawn from them) at their last valid state.

use crate::params::Settings;
use leptos::prelude::*;

/// Applies `value` to `key`, returning the message to show (None when accepted).
fn apply<S: Settings + Send + Sync + 'static>(settings: RwSignal<S>, key: &str, value: &str) -> Option<String> {
    let mut s = settings.get_untracked();
    match s.set(key, value) {
        Ok(()) => {
            settings.set(s);
            None
        }
        Err(e) => Some(e),
    }
}

/// A labelled text or number input. `id` must be unique on the page (panels prefix theirs);
/// `live` applies every keystroke, else on change.
#[component]
pub fn Field<S: Settings + Send + Sync + 'static>(
    settings: RwSignal<S>,
    label: &'static str,
    key: &'static str,
    id: &'static str,
    #[prop(default = "number")] kind: &'static str,
    #[prop(default = "any")] step: &'static str,
    #[prop(optional)] unit: &'static str,
    /// Spans two grid columns (long values).
    #[prop(optional)]
    wide: bool,
    get: fn(&S) -> String,
) -> impl IntoView {
    let invalid = RwSignal::new(None::<String>);
    let on_change = move |ev: leptos::ev::Event| invalid.set(apply(settings, key, &event_target_value(&ev)));
    let error_id = format!("{id}-error");
    view! {
        <label class=if wide { "field wide" } else { "field" } for=id>
            <span>{label}{(!unit.is_empty()).then(|| format!(" ({unit})"))}</span>
            <input id=id type=kind step=step inputmode="decimal" data-testid=id
                prop:value=move || get(&settings.get())
                aria-invalid=move || invalid.get().is_some().to_string()
                aria-describedby=error_id.clone()
                on:change=on_change/>
            <small class="invalid" id=error_id data-testid=format!("{id}-error") aria-live="polite">
                {move || invalid.get().unwrap_or_default()}</small>
        </label>
    }
}

/// A slider over a transformed scale (log for bandwidth, powers of two for batch); dragging
/// updates the settings on every move. `to_slider` and `from_slider` convert between the
/// setting and the slider's position; `from_slider` returns the text [`Settings::set`] reads.
#[component]
pub fn Slider<S: Settings + Send + Sync + 'static>(
    settings: RwSignal<S>,
    label: &'static str,
    key: &'static str,
    id: &'static str,
    min: f64,
    max: f64,
    step: f64,
    to_slider: fn(&S) -> f64,
    from_slider: fn(f64) -> String,
) -> impl IntoView {
    let on_input = move |ev: leptos::ev::Event| {
        if let Ok(v) = event_target_value(&ev).parse::<f64>() {
            apply(settings, key, &from_slider(v));
        }
    };
    view! {
        <input class="slider" type="range" id=id data-testid=id aria-label=label
            min=min max=max step=step
            prop:value=move || to_slider(&settings.get()).clamp(min, max).to_string()
            on:input=on_input/>
    }
}
