//! The three browser engines the page is tested in, each through its own W3C WebDriver server:
//! Chromium (Debian's `chromium` + `chromedriver`), Firefox (Debian's `firefox-esr` +
//! `geckodriver` from crates.io) and WebKitGTK (Debian's `webkit2gtk-driver`: `WebKitWebDriver`
//! starting MiniBrowser, which has no headless mode, so it draws into an Xvfb display made here).
//! What differs between them lives here: the driver's command line, the capabilities, the
//! profile directory and the display. `Browser` hides the rest.

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Chromium,
    Firefox,
    WebKit,
}

/// What a test asks of the browser it starts.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Offer WebGPU: Chromium's `--enable-unsafe-webgpu` (SwiftShader without a GPU), Firefox's
    /// `dom.webgpu.enabled` pref (wgpu over lavapipe). WebKitGTK has no WebGPU either way.
    pub webgpu: bool,
    pub width: u32,
    pub height: u32,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Chromium, Engine::Firefox, Engine::WebKit];

    pub fn name(self) -> &'static str {
        match self {
            Engine::Chromium => "Chromium",
            Engine::Firefox => "Firefox",
            Engine::WebKit => "WebKit",
        }
    }

    /// Whether this engine can give the page a WebGPU adapter on these machines.
    pub fn has_webgpu(self) -> bool {
        self != Engine::WebKit
    }

    /// The WebDriver server's program: `$CHROMEDRIVER`, `$GECKODRIVER`, `$WEBKITWEBDRIVER`, or
    /// the name on PATH; and what installs it, for the error when it is missing.
    pub(crate) fn driver(self) -> (String, &'static str) {
        let (var, name, install) = match self {
            Engine::Chromium => ("CHROMEDRIVER", "chromedriver", "apt-get install chromium-driver"),
            Engine::Firefox => (
                "GECKODRIVER",
                "geckodriver",
                "cargo install --locked geckodriver (scripts/setup.sh --test)",
            ),
            Engine::WebKit => (
                "WEBKITWEBDRIVER",
                "WebKitWebDriver",
                "apt-get install webkit2gtk-driver",
            ),
        };
        (std::env::var(var).unwrap_or_else(|_| name.into()), install)
    }

    /// The driver's arguments: its port, and for geckodriver the folder its Firefox profiles
    /// go in (our profile directory, so they go when it does).
    pub(crate) fn driver_args(self, port: u16, profile: &Path) -> Vec<String> {
        match self {
            Engine::Chromium => vec![format!("--port={port}")],
            Engine::Firefox => vec![
                "--port".into(),
                port.to_string(),
                "--profile-root".into(),
                profile.display().to_string(),
            ],
            Engine::WebKit => vec![format!("--port={port}")],
        }
    }

    /// The capabilities of a new session.
    pub(crate) fn capabilities(self, opts: &Options, profile: &Path) -> Map<String, Value> {
        let caps = match self {
            Engine::Chromium => chromium_capabilities(opts, profile),
            Engine::Firefox => json!({
                "browserName": "firefox",
                "moz:firefoxOptions": {
                    "binary": std::env::var("FIREFOX").unwrap_or_else(|_| "/usr/bin/firefox-esr".into()),
                    "args": ["-headless"],
                    "prefs": firefox_prefs(opts.webgpu),
                }
            }),
            Engine::WebKit => json!({
                "browserName": "MiniBrowser",
                "webkitgtk:browserOptions": {
                    "binary": std::env::var("MINIBROWSER").unwrap_or_else(|_|
                        "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser".into()),
                    "args": ["--automation"],
                }
            }),
        };
        caps.as_object().cloned().expect("an object")
    }

    /// Whether the window is sized by WebDriver after the session starts (Chromium takes it
    /// on its command line, and narrower than 500 px only by device emulation).
    pub(crate) fn sizes_by_webdriver(self) -> bool {
        self != Engine::Chromium
    }

    /// Whether the driver needs an X display (MiniBrowser has no headless mode).
    pub(crate) fn needs_display(self) -> bool {
        self == Engine::WebKit
    }
}

/// Flags for a quiet, reproducible headless run (no updates, sync or network noise).
const CHROMIUM_ARGS: &[&str] = &[
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
const CHROMIUM_WEBGPU_ARGS: &[&str] = &[
    "--enable-unsafe-webgpu",
    "--use-angle=vulkan",
    "--enable-features=Vulkan",
];

fn chromium_capabilities(opts: &Options, profile: &Path) -> Value {
    let chrome = std::env::var("CHROME").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|s| s.to_string()).collect();
    if opts.webgpu {
        args.extend(CHROMIUM_WEBGPU_ARGS.iter().map(|s| s.to_string()));
    }
    args.push(format!("--window-size={},{}", opts.width, opts.height));
    args.push(format!("--user-data-dir={}", profile.display()));
    let mut options = json!({ "binary": chrome, "args": args });
    if opts.width < 500 {
        // Chromium windows are at least 500 px wide; narrower viewports need emulation.
        options["mobileEmulation"] = json!({
            "deviceMetrics": { "width": opts.width, "height": opts.height, "pixelRatio": 1.0 }
        });
    }
    json!({ "goog:chromeOptions": options })
}

/// Firefox's preferences: WebGPU on Linux is behind `dom.webgpu.enabled` (and its blocklist
/// refuses lavapipe without `gfx.webgpu.ignore-blocklist`); the rest keep a test run off the
/// network and free of first-run pages.
fn firefox_prefs(webgpu: bool) -> Value {
    json!({
        "dom.webgpu.enabled": webgpu,
        "gfx.webgpu.ignore-blocklist": webgpu,
        "browser.shell.checkDefaultBrowser": false,
        "datareporting.policy.dataSubmissionEnabled": false,
        "toolkit.telemetry.enabled": false,
        "app.update.enabled": false,
        "network.captive-portal-service.enabled": false,
        "network.connectivity-service.enabled": false,
        "browser.safebrowsing.malware.enabled": false,
        "browser.safebrowsing.phishing.enabled": false,
        "extensions.update.enabled": false,
        // Clipboard writes from a test's click count as a user's.
        "dom.events.testing.asyncClipboard": true,
    })
}

/// A folder that belongs to one browser: Chromium's user data, geckodriver's profile root, and
/// WebKit's home and XDG folders (its caches and storage). Made here rather than by the drivers
/// and removed when the browser is dropped, a failed test's included: drivers leave their own
/// behind whenever a session is not closed, and a profile holds the cached models (up to 0.5 GB
/// each; 470 of them had filled 59 GB of /tmp).
pub(crate) struct Profile(pub PathBuf);

impl Profile {
    pub fn new(engine: Engine) -> Result<Self, String> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "tokscope-e2e-{}-{}-{n}",
            engine.name().to_lowercase(),
            std::process::id()
        ));
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
