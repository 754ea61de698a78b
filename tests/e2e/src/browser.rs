//! Headless Debian Chromium driven by chromedriver: with WebGPU (SwiftShader on a machine
//! without a GPU; `--enable-unsafe-webgpu` is what Linux Chromium needs to expose it) or
//! without, to exercise the page's CPU fallback.

use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

pub struct Browser {
    pub client: Client,
    _driver: Child,
    _profile: Profile,
}

/// Chromium's profile directory, made here rather than by chromedriver and removed when the
/// browser is dropped, a failed test's included: chromedriver leaves its own behind whenever a
/// session is not closed, and a profile holds the cached models (up to 0.5 GB each; 470 of
/// them had filled 59 GB of /tmp).
struct Profile(std::path::PathBuf);

impl Profile {
    fn new() -> Result<Self, String> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tokscope-e2e-profile-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Flags for a quiet, reproducible headless run (no updates, sync or network noise).
const BASE_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    // window.gc() and unrounded performance.memory, for the soak test's heap figures.
    "--js-flags=--expose-gc",
    "--enable-precise-memory-info",
];
const WEBGPU_ARGS: &[&str] = &[
    "--enable-unsafe-webgpu",
    "--use-angle=vulkan",
    "--enable-features=Vulkan",
];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl Browser {
    /// Starts chromedriver ($CHROMEDRIVER or `chromedriver`) and a Chromium ($CHROME or
    /// /usr/bin/chromium) window of `width` × `height`.
    pub async fn launch(webgpu: bool, width: u32, height: u32) -> Result<Self, String> {
        let driver_bin = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let chrome = std::env::var("CHROME").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = free_port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {driver_bin}: {e} (apt-get install chromium-driver)"))?;
        let mut args: Vec<String> = BASE_ARGS.iter().map(|s| s.to_string()).collect();
        if webgpu {
            args.extend(WEBGPU_ARGS.iter().map(|s| s.to_string()));
        }
        args.push(format!("--window-size={width},{height}"));
        let profile = Profile::new()?;
        args.push(format!("--user-data-dir={}", profile.0.display()));
        let mut options = json!({ "binary": chrome, "args": args });
        if width < 500 {
            // Chromium windows are at least 500 px wide; narrower viewports need emulation.
            options["mobileEmulation"] =
                json!({ "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1.0 } });
        }
        let caps = json!({ "goog:chromeOptions": options });
        let caps = caps.as_object().cloned().expect("an object");
        let url = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if start.elapsed() > Duration::from_secs(30) => {
                    return Err(format!("chromedriver at {url} gave no session: {e}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        Ok(Self {
            client,
            _driver: driver,
            _profile: profile,
        })
    }

    /// Sends a Chrome DevTools Protocol command through chromedriver (`goog/cdp/execute`),
    /// e.g. `Storage.overrideQuotaForOrigin` to make the storage quota tiny.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value, String> {
        self.client
            .issue_cmd(Cdp(json!({ "cmd": cmd, "params": params })))
            .await
            .map_err(|e| format!("{cmd}: {e}"))
    }

    /// Runs `script` (a function body that `return`s) in the page.
    pub async fn eval(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap_or(Value::Null)
    }

    /// Clicks the element with this `data-testid` from script (no scrolling into view needed).
    pub async fn click(&self, testid: &str) {
        self.eval(&format!(
            "document.querySelector('[data-testid={testid}]').click(); return null;"
        ))
        .await;
    }

    /// Picks `path` in the page's model file input, as a reader choosing a file would.
    pub async fn pick_file(&self, path: &std::path::Path) {
        let input = self
            .client
            .find(fantoccini::Locator::Css("[data-testid=file]"))
            .await
            .expect("the page has a file input");
        input.send_keys(path.to_str().expect("a UTF-8 path")).await.unwrap();
    }

    /// Fails unless the page fits its viewport's width (no sideways scrolling), naming the
    /// leaf elements that stick out so a failure says where to look.
    pub async fn assert_no_sideways_scroll(&self, what: &str) {
        let overflow = self
            .eval("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
            .await;
        let wide = self
            .eval(
                "const w = document.documentElement.clientWidth; return Array.from(document.querySelectorAll('body *'))\
                 .filter(e => e.getBoundingClientRect().right > w + 0.5 && e.children.length === 0)\
                 .slice(0, 6).map(e => e.tagName + '.' + e.className + '[' + (e.dataset.testid || '') + '] ' + \
                 Math.round(e.getBoundingClientRect().right));",
            )
            .await;
        assert_eq!(overflow, 0, "{what} scrolls sideways: {wide}");
    }

    /// The text of the element with this `data-testid` ("" when absent).
    pub async fn text(&self, testid: &str) -> String {
        let js =
            format!("const e = document.querySelector('[data-testid=\"{testid}\"]'); return e ? e.textContent : '';");
        self.eval(&js).await.as_str().unwrap_or("").to_string()
    }

    /// Types `value` into the input or select with this `data-testid` and fires `input` and
    /// `change`, as a reader's edit would.
    pub async fn set(&self, testid: &str, value: &str) {
        let js = format!(
            "const e = document.querySelector('[data-testid=\"{testid}\"]'); e.value = {}; \
             e.dispatchEvent(new Event('input', {{bubbles: true}})); \
             e.dispatchEvent(new Event('change', {{bubbles: true}})); return 0;",
            serde_json::to_string(value).unwrap()
        );
        self.eval(&js).await;
    }

    /// The `value` of the input with this `data-testid`.
    pub async fn value(&self, testid: &str) -> String {
        let js = format!("const e = document.querySelector('[data-testid=\"{testid}\"]'); return e ? e.value : '';");
        self.eval(&js).await.as_str().unwrap_or("").to_string()
    }

    /// Polls `condition` (a JS expression) until true; on timeout, fails with the page's status
    /// and error lines, which say why.
    pub async fn wait_for(&self, condition: &str, timeout: Duration) -> Result<(), String> {
        let start = Instant::now();
        let js = format!("return !!({condition});");
        loop {
            if self.eval(&js).await == Value::Bool(true) {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "timed out after {:?} waiting for {condition}; status: {:?}; error: {:?}; page errors: {:?}",
                    timeout,
                    self.text("status").await,
                    self.text("error").await,
                    self.page_errors().await
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Errors the page recorded (web/index.html collects them in `window.__tokscope_errors`).
    pub async fn page_errors(&self) -> Vec<String> {
        match self.eval("return window.__tokscope_errors || [];").await {
            Value::Array(a) => a.iter().map(|v| v.as_str().unwrap_or("?").to_string()).collect(),
            _ => vec![],
        }
    }

    pub async fn screenshot(&self, path: &std::path::Path) -> Result<(), String> {
        let png = self.client.screenshot().await.map_err(|e| e.to_string())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| e.to_string())
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}

/// chromedriver's DevTools pass-through: POST /session/{id}/goog/cdp/execute.
#[derive(Debug)]
struct Cdp(Value);

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.0.to_string()))
    }
}
