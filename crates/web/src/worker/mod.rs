//! The engine's Web Worker: loads the model (download with progress, cache, parse, GPU upload),
//! then generates on request, posting each token's text and timing. Everything heavy happens
//! here, off the page's main thread. Messages are [`crate::protocol`] enums.

mod cache;
mod fetch;
mod js;
mod session;
mod trial;

use crate::protocol::{FromWorker, Request, ToWorker, parse};
use futures_util::StreamExt;
use js::post;
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Work for the worker's one sequential loop.
pub(crate) enum Job {
    Message(ToWorker, Option<web_sys::File>),
    /// The device-lost callback fired for the engine of this generation.
    DeviceLost {
        generation: u64,
        message: String,
    },
}

pub fn start() {
    console_error_panic_hook::set_once();
    let (tx, mut rx) = futures_channel::mpsc::unbounded::<Job>();
    let stop = Rc::new(Cell::new(false));
    let on_message = {
        let (tx, stop) = (tx.clone(), stop.clone());
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
            let data = ev.data();
            // A message is a JSON string, or [JSON string, File] when a file is picked.
            let (json, file) = match data.dyn_ref::<js_sys::Array>() {
                Some(a) => (a.get(0).as_string(), a.get(1).dyn_into::<web_sys::File>().ok()),
                None => (data.as_string(), None),
            };
            match json.as_deref().map(parse::<ToWorker>) {
                Some(Ok(ToWorker::Stop)) => stop.set(true),
                Some(Ok(m)) => {
                    let _ = tx.unbounded_send(Job::Message(m, file));
                }
                Some(Err(e)) => post(&FromWorker::Error {
                    message: e,
                    to: Request::Message,
                }),
                None => post(&FromWorker::Error {
                    message: "the worker got a message that is not text".into(),
                    to: Request::Message,
                }),
            }
        })
    };
    js::scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    wasm_bindgen_futures::spawn_local(async move {
        let mut worker = session::Worker::new(tx, stop);
        while let Some(job) = rx.next().await {
            worker.handle(job).await;
        }
    });
    post(&FromWorker::Alive);
}
