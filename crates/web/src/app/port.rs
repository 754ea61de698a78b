//! The page's handle on the engine's worker: where every panel posts its requests. It knows no
//! panel and no state (link.rs turns what the worker posts back into state).

use crate::protocol::ToWorker;
use std::cell::RefCell;
use wasm_bindgen::JsValue;

thread_local! {
    static WORKER: RefCell<Option<web_sys::Worker>> = const { RefCell::new(None) };
}

/// Keeps the started worker as the one [`send`] posts to.
pub fn install(worker: web_sys::Worker) {
    WORKER.with(|w| *w.borrow_mut() = Some(worker));
}

/// Posts a message, with a file beside it when one is picked.
pub fn send(msg: &ToWorker, file: Option<&web_sys::File>) {
    WORKER.with(|w| {
        if let Some(w) = w.borrow().as_ref() {
            let json = JsValue::from_str(&msg.to_json());
            let _ = match file {
                Some(f) => w.post_message(&js_sys::Array::of2(&json, f)),
                None => w.post_message(&json),
            };
        }
    });
}
