//! The few worker-global facilities the engine loop needs: posting, the clock, and yielding to
//! the event loop so that a Stop message is seen between tokens.

use crate::protocol::FromWorker;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

pub fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

pub fn post(msg: &FromWorker) {
    let _ = scope().post_message(&JsValue::from_str(&msg.to_json()));
}

/// Seconds on the worker's monotonic clock.
pub fn now_s() -> f64 {
    scope().performance().map(|p| p.now() / 1e3).unwrap_or(0.0)
}

/// Lets queued tasks (incoming messages) run. A MessageChannel round trip, not setTimeout(0),
/// which browsers clamp to 4 ms once nested: that would cost 4 ms a token.
pub async fn yield_now() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let Ok(ch) = web_sys::MessageChannel::new() else {
            let _ = resolve.call0(&JsValue::NULL);
            return;
        };
        let port = ch.port1();
        let keep = ch.clone(); // alive until the message arrives
        let cb = Closure::once_into_js(move || {
            drop(keep);
            let _ = resolve.call0(&JsValue::NULL);
        });
        port.set_onmessage(Some(cb.unchecked_ref()));
        let _ = ch.port2().post_message(&JsValue::NULL);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// A JS exception or rejection as a sentence.
pub fn describe(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// Whether the browser exposes WebGPU at all (`navigator.gpu`), adapter or not.
pub fn has_webgpu_api() -> bool {
    js_sys::Reflect::get(&scope().navigator(), &JsValue::from_str("gpu")).is_ok_and(|g| !g.is_undefined())
}

/// Why this browser gives the page no WebGPU, in words a reader can act on.
pub fn without_webgpu() -> String {
    let ua = scope().navigator().user_agent().unwrap_or_default();
    crate::browser::without_webgpu(&ua, has_webgpu_api())
}

/// The browser's own words for its WebGPU adapter (`GPUAdapterInfo`: vendor, architecture,
/// description), which wgpu does not pass on. Asks for a second adapter object, which is cheap.
pub async fn adapter_words() -> Option<String> {
    let get = |o: &JsValue, k: &str| js_sys::Reflect::get(o, &JsValue::from_str(k)).ok();
    let gpu = get(&scope().navigator().into(), "gpu").filter(|g| !g.is_undefined())?;
    let request: js_sys::Function = get(&gpu, "requestAdapter")?.dyn_into().ok()?;
    let promise: js_sys::Promise = request.call0(&gpu).ok()?.dyn_into().ok()?;
    let adapter = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .ok()
        .filter(|a| !a.is_null())?;
    let info = get(&adapter, "info")?;
    let words: Vec<String> = ["vendor", "architecture", "description"]
        .iter()
        .filter_map(|k| get(&info, k)?.as_string())
        .filter(|s| !s.is_empty())
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}
