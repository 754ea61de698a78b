//! The page's end of the worker: spawning it and turning what it posts into state updates
//! (requests go out through port.rs).

use super::state::State;
use crate::protocol::{FromWorker, parse};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// build-web's loader for the worker binary, content-hashed and named in the page's
/// `<meta name="tokscope-worker">` (relative to the page's base, so a sub-path works).
fn worker_url() -> Result<String, String> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector("meta[name=tokscope-worker]").ok().flatten())
        .and_then(|m| m.get_attribute("content"))
        .map(|name| format!("./{name}"))
        .ok_or_else(|| {
            "the page names no engine worker (<meta name=\"tokscope-worker\">): build it with `cargo xtask build-web`"
                .into()
        })
}

pub fn spawn(state: State) -> Result<(), String> {
    let worker =
        web_sys::Worker::new(&worker_url()?).map_err(|e| format!("the engine's worker did not start: {e:?}"))?;
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        match ev.data().as_string().as_deref().map(parse::<FromWorker>) {
            Some(Ok(m)) => state.apply(m),
            Some(Err(e)) => state.fail(e),
            None => state.fail("the worker posted something that is not a message".into()),
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_error = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
        state.fail(format!("the engine's worker failed: {}", ev.message()));
    });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    super::port::install(worker);
    Ok(())
}
