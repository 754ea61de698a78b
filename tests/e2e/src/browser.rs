//! A browser driven through W3C WebDriver, whichever engine it is (`engine.rs` says how each
//! is started): the page's own operations — run a script, click, type, wait for a condition,
//! pick a file, take a screenshot — the same in all of them.

use crate::engine::{Engine, Options, Profile};
use crate::processes::{Display, Tree};
use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::process::Command;

/// Fields drop in order: the driver and its browser are killed before the display they draw
/// on, and both before their profile folder is removed.
pub struct Browser {
    pub client: Client,
    pub engine: Engine,
    _driver: Tree,
    _display: Option<Display>,
    _profile: Profile,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl Browser {
    /// Headless Chromium (chromedriver: $CHROMEDRIVER or `chromedriver`; the browser: $CHROME or
    /// /usr/bin/chromium) with a `width` × `height` window, with or without WebGPU.
    pub async fn launch(webgpu: bool, width: u32, height: u32) -> Result<Self, String> {
        Self::open(Engine::Chromium, Options { webgpu, width, height }).await
    }

    /// Starts `engine`'s WebDriver server and a session in a new browser of that engine.
    pub async fn open(engine: Engine, opts: Options) -> Result<Self, String> {
        let (driver_bin, install) = engine.driver();
        let profile = Profile::new(engine)?;
        let display = match engine.needs_display() {
            true => Some(Display::start().await?),
            false => None,
        };
        let port = free_port();
        let mut cmd = Command::new(&driver_bin);
        cmd.args(engine.driver_args(port, &profile.0))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(d) = &display {
            // MiniBrowser keeps its caches and storage under the XDG folders: ours, removed with it.
            cmd.env("DISPLAY", &d.name)
                .env_remove("WAYLAND_DISPLAY")
                .env("HOME", &profile.0)
                .env("XDG_CACHE_HOME", profile.0.join("cache"))
                .env("XDG_DATA_HOME", profile.0.join("data"))
                .env("XDG_CONFIG_HOME", profile.0.join("config"));
        }
        let driver = Tree::spawn(cmd).map_err(|e| format!("cannot start {driver_bin}: {e} ({install})"))?;
        let caps = engine.capabilities(&opts, &profile.0);
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
                Err(e) if start.elapsed() > Duration::from_secs(60) => {
                    return Err(format!("{driver_bin} at {url} gave no {} session: {e}", engine.name()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        if engine.sizes_by_webdriver() {
            client
                .set_window_size(opts.width, opts.height)
                .await
                .map_err(|e| format!("{}: cannot size the window: {e}", engine.name()))?;
        }
        Ok(Self {
            client,
            engine,
            _driver: driver,
            _display: display,
            _profile: profile,
        })
    }

    /// Sends a Chrome DevTools Protocol command through chromedriver (`goog/cdp/execute`),
    /// e.g. `Storage.overrideQuotaForOrigin` to make the storage quota tiny.
    /// Chromium only: the other engines' drivers have no such pass-through.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value, String> {
        if self.engine != Engine::Chromium {
            return Err(format!("{cmd}: {} has no DevTools protocol here", self.engine.name()));
        }
        self.client
            .issue_cmd(Cdp(json!({ "cmd": cmd, "params": params })))
            .await
            .map_err(|e| format!("{cmd}: {e}"))
    }

    /// Loads `url` as a new document. By way of about:blank: navigating to an address that
    /// differs from the current one only in its fragment would not load the page again (the
    /// page would take it as a route change and keep what the last address left on it).
    pub async fn goto(&self, url: &str) {
        self.client.goto("about:blank").await.unwrap();
        self.client.goto(url).await.unwrap();
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

    /// Clicks the element with this `data-testid` through WebDriver, as a person's click: the
    /// page gets a user activation, which history entries need to count for the Back button
    /// (WebKit skips entries pushed without one, as Chromium's browser Back does).
    pub async fn press(&self, testid: &str) {
        self.client
            .find(fantoccini::Locator::Css(&format!("[data-testid=\"{testid}\"]")))
            .await
            .unwrap_or_else(|e| panic!("no {testid} to press: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("{testid} cannot be pressed: {e}"));
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
