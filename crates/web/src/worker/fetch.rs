//! Streaming download of a model with progress, and reading a picked `File`, into one `Vec`.
//! Failures are explained in plain words (CORS, HTTP status, a truncated transfer).

use super::js::{describe, scope};
use crate::protocol::{FromWorker, Phase};
use tokscope_core::limits::check_wasm_model_size;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Posts progress at most this often (seconds), plus once at the end.
const PROGRESS_EVERY_S: f64 = 0.1;

pub struct Progress {
    phase: Phase,
    total: Option<u64>,
    last: f64,
}

impl Progress {
    pub fn new(phase: Phase, total: Option<u64>) -> Self {
        Self {
            phase,
            total,
            last: f64::NEG_INFINITY,
        }
    }

    pub fn report(&mut self, done: u64, force: bool) {
        let t = super::js::now_s();
        if force || t - self.last >= PROGRESS_EVERY_S {
            self.last = t;
            super::js::post(&FromWorker::Progress {
                phase: self.phase,
                done,
                total: self.total,
            });
        }
    }
}

/// Downloads `url` (resolved against the page) into memory, posting progress.
pub async fn download(url: &str) -> Result<Vec<u8>, String> {
    // A reader-given address: no cookies or HTTP authentication go with it, to any origin.
    let init = web_sys::RequestInit::new();
    init.set_credentials(web_sys::RequestCredentials::Omit);
    let resp = JsFuture::from(scope().fetch_with_str_and_init(url, &init))
        .await
        .map_err(|e| {
            format!(
                "could not fetch {url}: {}. If the model is on another site, that server must allow \
             cross-origin requests (CORS: an Access-Control-Allow-Origin header); download the \
             file and pick it here instead.",
                describe(&e)
            )
        })?;
    let resp: web_sys::Response = resp.unchecked_into();
    if !resp.ok() {
        return Err(format!(
            "{url}: the server answered HTTP {} {}",
            resp.status(),
            resp.status_text()
        ));
    }
    let total = resp
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(t) = total {
        check_wasm_model_size(t).map_err(|e| format!("{url}: {e}"))?;
    }
    let body = resp.body().ok_or_else(|| format!("{url}: the response has no body"))?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut out = Vec::with_capacity(total.unwrap_or(0) as usize);
    let mut progress = Progress::new(Phase::Download, total);
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| {
            format!(
                "{url}: the download broke off after {} bytes ({}). Load it again to restart the download",
                out.len(),
                describe(&e)
            )
        })?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .map(|v| v.is_truthy())
            .unwrap_or(true);
        if done {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into()).map_err(|e| describe(&e))?;
        let bytes: js_sys::Uint8Array = value.unchecked_into();
        let at = out.len();
        // A server that sent no length (or a wrong one) is held to the same limit as it streams.
        check_wasm_model_size((at + bytes.length() as usize) as u64).map_err(|e| format!("{url}: {e}"))?;
        out.resize(at + bytes.length() as usize, 0);
        bytes.copy_to(&mut out[at..]);
        progress.report(out.len() as u64, false);
    }
    progress.report(out.len() as u64, true);
    if let Some(t) = total
        && t != out.len() as u64
    {
        return Err(format!(
            "{url}: the download ended after {} of {t} bytes. Load it again to restart the download",
            out.len()
        ));
    }
    Ok(out)
}

/// The bytes of a picked or dropped file.
pub async fn read_file(file: &web_sys::File) -> Result<Vec<u8>, String> {
    let total = file.size() as u64;
    check_wasm_model_size(total).map_err(|e| format!("{}: {e}", file.name()))?;
    let mut progress = Progress::new(Phase::Download, Some(total));
    progress.report(0, true);
    let buf = JsFuture::from(file.array_buffer())
        .await
        .map_err(|e| format!("could not read {}: {}", file.name(), describe(&e)))?;
    let out = js_sys::Uint8Array::new(&buf).to_vec();
    progress.report(out.len() as u64, true);
    Ok(out)
}
