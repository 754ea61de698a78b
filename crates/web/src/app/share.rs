//! Links and embeds: "copy link" and "copy embed code" for each panel's current state, and an
//! embedded panel's height posted to the page around it.
//!
//! The height message, for articles that embed a panel: `window.parent.postMessage({ type:
//! "tokscope:height", panel: "agent", height: 612 }, "*")`, sent whenever the panel's height
//! changes. The parent sets the `<iframe>`'s height from it (see `web/embed-example.html`).

use crate::route::{Panel, Route};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Percent-encodes pairs into a query string (`URLSearchParams` does the encoding).
pub fn encode(pairs: &[(&'static str, String)]) -> String {
    let Ok(params) = web_sys::UrlSearchParams::new() else {
        return String::new();
    };
    for (k, v) in pairs {
        params.append(k, v);
    }
    params.to_string().into()
}

/// The page's address without query or fragment (keeps a sub-path).
fn base() -> String {
    let Some(loc) = web_sys::window().map(|w| w.location()) else {
        return String::new();
    };
    format!(
        "{}{}",
        loc.origin().unwrap_or_default(),
        loc.pathname().unwrap_or_default()
    )
}

pub fn link(panel: Panel, pairs: &[(&'static str, String)]) -> String {
    format!("{}{}", base(), Route::hash(panel, false, &encode(pairs)))
}

pub fn embed_code(panel: Panel, pairs: &[(&'static str, String)]) -> String {
    let src = format!("{}{}", base(), Route::hash(panel, true, &encode(pairs)));
    let src = src.replace('&', "&amp;").replace('"', "&quot;");
    format!(
        "<iframe src=\"{src}\" title=\"{}\" width=\"100%\" height=\"480\" style=\"border:0\" loading=\"lazy\"></iframe>",
        panel.title()
    )
}

/// Copies to the clipboard; where the browser refuses, `note` says to copy from the box.
pub fn copy(text: &str, note: RwSignal<&'static str>) {
    let Some(w) = web_sys::window() else { return };
    let promise = w.navigator().clipboard().write_text(text);
    wasm_bindgen_futures::spawn_local(async move {
        let copied = wasm_bindgen_futures::JsFuture::from(promise).await.is_ok();
        note.set(if copied {
            "Copied."
        } else {
            "The browser did not allow copying: select the text below."
        });
    });
}

/// "Copy link" and "Copy embed code" for one panel; the text also shows in a read-only box.
#[component]
pub fn Share(panel: Panel, pairs: Signal<Vec<(&'static str, String)>>) -> impl IntoView {
    let shown = RwSignal::new(String::new());
    let note = RwSignal::new("");
    let slug = panel.slug();
    view! {
        <div class="share">
            <button data-testid=format!("copy-link-{slug}")
                on:click=move |_| { let l = link(panel, &pairs.get_untracked()); copy(&l, note); shown.set(l); }>"Copy link"</button>
            <button data-testid=format!("copy-embed-{slug}")
                on:click=move |_| { let c = embed_code(panel, &pairs.get_untracked()); copy(&c, note); shown.set(c); }>"Copy embed code"</button>
            <span class="caption" aria-live="polite" data-testid=format!("copy-note-{slug}")>{move || note.get()}</span>
            <Show when=move || !shown.get().is_empty()>
                <input class="shared" readonly data-testid=format!("shared-{slug}") aria-label="copied text"
                    prop:value=move || shown.get()/>
            </Show>
        </div>
    }
}

/// Posts the panel's height to the parent page once it is drawn, then whenever it changes.
/// The height is the body's (the document's own would never shrink below the frame's).
pub fn post_height(panel: Panel) {
    let Some(window) = web_sys::window() else { return };
    let Ok(Some(parent)) = window.parent() else { return };
    if js_sys::Object::is(&parent, &window) {
        return; // not in a frame
    }
    let Some(body) = window.document().and_then(|d| d.body()) else {
        return;
    };
    let measured = body.clone();
    let last = std::cell::Cell::new(-1i32);
    let post = Closure::<dyn FnMut()>::new(move || {
        let height = measured.get_bounding_client_rect().height().ceil() as i32;
        if height == last.replace(height) {
            return;
        }
        let message = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&message, &"type".into(), &"tokscope:height".into());
        let _ = js_sys::Reflect::set(&message, &"panel".into(), &panel.slug().into());
        let _ = js_sys::Reflect::set(&message, &"height".into(), &height.into());
        let _ = parent.post_message(&message, "*");
    });
    if let Ok(observer) = web_sys::ResizeObserver::new(post.as_ref().unchecked_ref()) {
        observer.observe(&body);
    }
    // Chromium does not render a cross-origin frame outside the viewport, so its resize
    // observer stays silent until the reader scrolls to it: post once from a timer as well.
    let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(post.as_ref().unchecked_ref(), 0);
    post.forget();
}
