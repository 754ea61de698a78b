//! The static server for `dist/` (`cargo xtask build-web`'s output), as `scripts/run.sh` and the
//! end-to-end tests run it: tower-http's `ServeDir` under axum, with
//! - byte ranges (`Range` → 206; the token view reads a GGUF's header, a cut download resumes),
//! - the build's precompressed `.br` / `.gz` copies where the request accepts them,
//! - `ETag` / `If-None-Match` → 304 (ServeDir has only `Last-Modified`),
//! - MIME types from the extension (wasm must be `application/wasm` for streaming compilation),
//! - CORS open (embeds and model URLs from another origin; `Content-Range` exposed),
//! - the page's Content-Security-Policy and `nosniff`,
//! - and a log of every path requested (and of those sent with cookies) for the tests.

use axum::extract::Request;
use axum::http::header::{self, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;
use tower_http::cors::CorsLayer;
use tower_http::services::ServeDir;

/// Every path requested, those that came with a `Cookie` header (credentials), and the byte
/// ranges asked for.
#[derive(Clone, Default)]
pub struct RequestLog {
    paths: Arc<Mutex<Vec<String>>>,
    with_cookies: Arc<Mutex<Vec<String>>>,
    ranges: Arc<Mutex<Vec<(String, String)>>>,
}

impl RequestLog {
    /// The paths requested with cookies attached.
    pub fn with_cookies(&self) -> Vec<String> {
        self.with_cookies.lock().unwrap().clone()
    }

    /// How many requests asked for a path ending with `suffix`.
    pub fn count(&self, suffix: &str) -> usize {
        self.paths
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.ends_with(suffix))
            .count()
    }

    pub fn all(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }

    /// The `Range` headers sent for paths ending with `suffix`.
    pub fn ranges(&self, suffix: &str) -> Vec<String> {
        let ranges = self.ranges.lock().unwrap();
        ranges
            .iter()
            .filter(|(p, _)| p.ends_with(suffix))
            .map(|(_, r)| r.clone())
            .collect()
    }
}

pub struct Server {
    pub addr: SocketAddr,
    pub log: RequestLog,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }
}

/// Serves `root` on `addr` (port 0: any free port) from a background thread with its own
/// runtime, so that synchronous callers (the CLI binary) and async tests start it alike.
pub fn start(root: &Path, addr: &str) -> std::io::Result<Server> {
    serve(root, addr, true)
}

/// As [`start`], for a site that is not tokscope's (the wllama benchmark page, with its own
/// inline script): without the app's Content-Security-Policy.
pub fn start_foreign(root: &Path, addr: &str) -> std::io::Result<Server> {
    serve(root, addr, false)
}

fn serve(root: &Path, addr: &str, app_policy: bool) -> std::io::Result<Server> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let log = RequestLog::default();
    let app = router(root, log.clone(), app_policy);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a listening socket");
            axum::serve(listener, app).await.expect("the server runs");
        })
    });
    Ok(Server { addr, log })
}

fn router(root: &Path, log: RequestLog, app_policy: bool) -> axum::Router {
    let files = ServeDir::new(root)
        .precompressed_br()
        .precompressed_gzip()
        .not_found_service(axum::routing::any(not_found));
    let etag_root = root.to_path_buf();
    axum::Router::new()
        .fallback_service(files)
        .layer(middleware::from_fn(move |req, next| etag(etag_root.clone(), req, next)))
        .layer(middleware::from_fn(move |req, next| headers(app_policy, req, next)))
        // Outermost: a preflight is answered, and every answer (404 too) carries the header.
        .layer(CorsLayer::permissive().expose_headers([
            header::CONTENT_RANGE,
            header::CONTENT_LENGTH,
            header::ACCEPT_RANGES,
            header::ETAG,
        ]))
        .layer(middleware::from_fn(move |req, next| record(log.clone(), req, next)))
}

async fn not_found(req: Request) -> impl IntoResponse {
    (StatusCode::NOT_FOUND, format!("not found: {}\n", req.uri().path()))
}

async fn record(log: RequestLog, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if req.headers().contains_key(header::COOKIE) {
        log.with_cookies.lock().unwrap().push(path.clone());
    }
    if let Some(range) = req.headers().get(header::RANGE).and_then(|r| r.to_str().ok()) {
        log.ranges.lock().unwrap().push((path.clone(), range.to_string()));
    }
    log.paths.lock().unwrap().push(path);
    next.run(req).await
}

/// The page's Content-Security-Policy (the same as its `<meta>`; the header also reaches the
/// worker's script), no MIME sniffing, `Vary`, and revalidation on every load (the ETag makes that a
/// 304). The embed example stands for someone else's article, with its own inline script, so
/// it is served without the app's policy, as is every file of a foreign site.
async fn headers(app_policy: bool, req: Request, next: Next) -> Response {
    let app_page = app_policy && !req.uri().path().ends_with("/embed-example.html");
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    if app_page {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(tokscope_web::csp::CONTENT_SECURITY_POLICY),
        );
    }
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // The same URL is sent as br, gzip or identity: a cache must key on what was accepted.
    h.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    res
}

/// A weak validator from the file's length and modification time: every representation of one
/// file version (identity, `.br`, `.gz`, any range) shares it, which weak comparison allows
/// (RFC 9110 §8.8.1). A matching `If-None-Match` is answered 304 before the file is opened.
async fn etag(root: PathBuf, req: Request, next: Next) -> Response {
    let tag = match (req.method(), resolve(&root, req.uri().path())) {
        (&Method::GET | &Method::HEAD, Some(file)) => file_etag(&file),
        _ => None,
    };
    let Some(tag) = tag else { return next.run(req).await };
    let matches = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| if_none_match(v, &tag));
    let mut res = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        next.run(req).await
    };
    if let Ok(v) = HeaderValue::from_str(&tag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

fn file_etag(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    let nanos = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("W/\"{:x}-{nanos:x}\"", meta.len()))
}

/// Weak comparison of an `If-None-Match` list (or `*`) with our tag.
fn if_none_match(header: &str, tag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    header.split(',').any(|t| t.trim() == "*" || bare(t) == bare(tag))
}

/// The file for a URL path (a directory's `index.html`), refusing anything that climbs out of
/// `root`.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let mut out = root.to_path_buf();
    for c in Path::new(url_path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    out.is_file().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_outside_the_root() {
        let root = std::env::temp_dir();
        assert!(resolve(&root, "/../etc/passwd").is_none());
        assert!(resolve(&root, "/no-such-file-here.wasm").is_none());
    }

    #[test]
    fn weak_comparison_ignores_the_weak_prefix() {
        assert!(if_none_match("W/\"1-2\"", "W/\"1-2\""));
        assert!(if_none_match("\"0\", \"1-2\"", "W/\"1-2\""));
        assert!(if_none_match("*", "W/\"1-2\""));
        assert!(!if_none_match("W/\"1-3\"", "W/\"1-2\""));
    }
}
