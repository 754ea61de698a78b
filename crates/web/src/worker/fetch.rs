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

/// The page's limit on a model's size, with the address in the message.
fn within_limit(url: &str, bytes: u64) -> Result<(), String> {
    check_wasm_model_size(bytes).map_err(|e| format!("{url}: {e}"))
}

/// A fetch of a reader-given address: no cookies or HTTP authentication go with it, to any
/// origin. `prefix` asks for the first bytes only (a `Range` request).
async fn request(url: &str, prefix: Option<u64>) -> Result<web_sys::Response, String> {
    let init = web_sys::RequestInit::new();
    init.set_credentials(web_sys::RequestCredentials::Omit);
    if let Some(n) = prefix {
        let headers = web_sys::Headers::new().map_err(|e| describe(&e))?;
        headers
            .set("Range", &format!("bytes=0-{}", n.saturating_sub(1)))
            .map_err(|e| describe(&e))?;
        init.set_headers(&headers);
    }
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
    Ok(resp)
}

fn header(resp: &web_sys::Response, name: &str) -> Option<String> {
    resp.headers().get(name).ok().flatten()
}

/// A response's body in one `Vec`, posting download progress when asked, held to the page's
/// size limit as it streams (a server may send no length, or a wrong one).
async fn read_body(
    resp: &web_sys::Response,
    url: &str,
    total: Option<u64>,
    mut progress: Option<Progress>,
) -> Result<Vec<u8>, String> {
    let body = resp.body().ok_or_else(|| format!("{url}: the response has no body"))?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut out = Vec::with_capacity(total.unwrap_or(0) as usize);
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
        within_limit(url, (at + bytes.length() as usize) as u64)?;
        out.resize(at + bytes.length() as usize, 0);
        bytes.copy_to(&mut out[at..]);
        if let Some(p) = progress.as_mut() {
            p.report(out.len() as u64, false);
        }
    }
    if let Some(p) = progress.as_mut() {
        p.report(out.len() as u64, true);
    }
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

/// Downloads `url` (resolved against the page) into memory, posting progress.
pub async fn download(url: &str) -> Result<Vec<u8>, String> {
    let resp = request(url, None).await?;
    let total = header(&resp, "content-length").and_then(|v| v.parse::<u64>().ok());
    if let Some(t) = total {
        within_limit(url, t)?;
    }
    read_body(&resp, url, total, Some(Progress::new(Phase::Download, total))).await
}

/// The front of a file, from [`download_prefix`].
pub struct Prefix {
    pub bytes: Vec<u8>,
    /// The bytes are the whole file (it is shorter than asked, or the server ignored `Range`).
    pub whole: bool,
    /// The file's size, where the server said.
    pub file_bytes: Option<u64>,
}

/// The first `len` bytes of `url` by a `Range` request; a server that ignores ranges answers
/// with the whole file (200), which is then read whole.
pub async fn download_prefix(url: &str, len: u64) -> Result<Prefix, String> {
    let resp = request(url, Some(len)).await?;
    let length = header(&resp, "content-length").and_then(|v| v.parse::<u64>().ok());
    let partial = resp.status() == 206;
    // "bytes 0-1048575/98362432": the size after the slash ("*" when unknown).
    let file_bytes = match partial {
        true => header(&resp, "content-range").and_then(|v| v.rsplit('/').next()?.parse().ok()),
        false => length,
    };
    if let Some(t) = file_bytes.filter(|_| !partial) {
        within_limit(url, t)?;
    }
    let bytes = read_body(&resp, url, length, None).await?;
    Ok(Prefix {
        whole: !partial || (bytes.len() as u64) < len,
        bytes,
        file_bytes,
    })
}

/// The bytes of a picked or dropped file.
pub async fn read_file(file: &web_sys::File) -> Result<Vec<u8>, String> {
    let total = file.size() as u64;
    within_limit(&file.name(), total)?;
    let mut progress = Progress::new(Phase::Download, Some(total));
    progress.report(0, true);
    let buf = JsFuture::from(file.array_buffer())
        .await
        .map_err(|e| format!("could not read {}: {}", file.name(), describe(&e)))?;
    let out = js_sys::Uint8Array::new(&buf).to_vec();
    progress.report(out.len() as u64, true);
    Ok(out)
}
