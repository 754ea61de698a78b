//! What the page knows of the browser it runs in, from its user-agent string: a short name for
//! the speed card, and — when there is no WebGPU — why, in words a reader can act on. Browsers
//! differ here in ways a reader cannot guess: Firefox ships WebGPU on Windows since 141 but keeps
//! it behind a pref on Linux; Safari has it from 26 while WebKitGTK (GNOME Web, MiniBrowser) has
//! none; Chromium on Linux exposes the API yet often gives no adapter.
//!
//! Sources: Mozilla's "Shipping WebGPU on Windows in Firefox 141" (Mozilla Graphics blog, July
//! 2025); WebKit's "News from WWDC25: WebKit in Safari 26 beta" (webkit.org, June 2025); and
//! what these browsers did here (DESIGN.md, 2026-12-06): Firefox ESR 153 on Linux has no
//! `navigator.gpu` without `dom.webgpu.enabled`, WebKitGTK 2.50's MiniBrowser has none, and
//! headless Chromium 156 offers an adapter only with `--enable-unsafe-webgpu`.

/// The browser engines the page tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Chromium,
    Firefox,
    Safari,
    /// WebKit's Linux ports (GNOME Web, MiniBrowser): a Safari-like user agent on Linux.
    WebKitGtk,
    Other,
}

/// The browser's family, from its user-agent string.
pub fn family(ua: &str) -> Family {
    if ua.contains("Firefox/") {
        Family::Firefox
    } else if ua.contains("Chrome/") || ua.contains("Chromium/") {
        Family::Chromium
    } else if ua.contains("AppleWebKit/") && ua.contains("Safari/") {
        if is_linux(ua) {
            Family::WebKitGtk
        } else {
            Family::Safari
        }
    } else {
        Family::Other
    }
}

fn is_linux(ua: &str) -> bool {
    ua.contains("Linux") && !ua.contains("Android")
}

/// The version after `key` in the user agent ("Firefox/153.0" → "153.0").
fn version<'a>(ua: &'a str, key: &str) -> Option<&'a str> {
    ua.split(key)
        .nth(1)
        .map(|rest| rest.split([' ', ';', ')']).next().unwrap_or(""))
}

fn major(v: &str) -> &str {
    v.split('.').next().unwrap_or(v)
}

/// A short browser name from a user-agent string: "Chromium 156", "Firefox 133", "Safari 18.1",
/// "WebKitGTK" (whose user agent names a Safari version it is not).
pub fn browser_name(ua: &str) -> String {
    match family(ua) {
        Family::Firefox => format!("Firefox {}", major(version(ua, "Firefox/").unwrap_or(""))),
        Family::Chromium => {
            if let Some(v) = version(ua, "Edg/") {
                return format!("Edge {}", major(v));
            }
            let name = match ua.contains("HeadlessChrome") {
                true => "Headless Chromium",
                false => "Chromium",
            };
            let v = version(ua, "Chrome/")
                .or_else(|| version(ua, "Chromium/"))
                .unwrap_or("");
            format!("{name} {}", major(v))
        }
        Family::Safari => match version(ua, "Version/") {
            Some(v) => format!("Safari {v}"),
            None => "Safari".into(),
        },
        Family::WebKitGtk => "WebKitGTK".into(),
        Family::Other => "an unrecognised browser".into(),
    }
}

/// Why the page runs without WebGPU, for the notice beside the CPU engine's run. `api` tells
/// whether `navigator.gpu` exists at all (without it, the browser has no WebGPU here; with it,
/// the browser gave no adapter).
pub fn without_webgpu(ua: &str, api: bool) -> String {
    let fam = family(ua);
    if api {
        return match fam {
            Family::Firefox => "Firefox offers WebGPU but gave no adapter: it is blocked for this GPU \
                                (gfx.webgpu.ignore-blocklist in about:config lifts that, at your own risk)"
                .into(),
            Family::Chromium if is_linux(ua) => "this browser offers WebGPU but gave no adapter: it is \
                                disabled or blocked for this GPU (Chromium on Linux: \
                                chrome://flags/#enable-unsafe-webgpu)"
                .into(),
            _ => "this browser offers WebGPU but gave no adapter: it is disabled or blocked for this GPU".into(),
        };
    }
    match fam {
        Family::Firefox if is_linux(ua) => {
            "Firefox on Linux offers WebGPU only behind a setting: dom.webgpu.enabled in about:config".into()
        }
        Family::Firefox => "this Firefox has WebGPU turned off (dom.webgpu.enabled in about:config)".into(),
        Family::WebKitGtk => {
            "this browser has no WebGPU: WebKitGTK does not offer it yet (Safari has it from version 26)".into()
        }
        Family::Safari => "this Safari has no WebGPU (Safari has it from version 26)".into(),
        Family::Chromium | Family::Other => "this browser has no WebGPU".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROMIUM: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.7000.1 Safari/537.36";
    const FIREFOX_LINUX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
    const FIREFOX_WINDOWS: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:141.0) Gecko/20100101 Firefox/141.0";
    const SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15";
    /// MiniBrowser 2.50 (WebKitGTK), as it reported itself here.
    const WEBKITGTK: &str =
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
    const ANDROID_CHROME: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";

    #[test]
    fn browser_names() {
        assert_eq!(browser_name(CHROMIUM), "Headless Chromium 156");
        assert_eq!(browser_name(FIREFOX_LINUX), "Firefox 153");
        assert_eq!(browser_name(SAFARI), "Safari 18.1");
        assert_eq!(browser_name(WEBKITGTK), "WebKitGTK");
        assert_eq!(browser_name(ANDROID_CHROME), "Chromium 131");
        assert_eq!(browser_name("curl/8"), "an unrecognised browser");
    }

    #[test]
    fn families() {
        assert_eq!(family(CHROMIUM), Family::Chromium);
        assert_eq!(family(FIREFOX_WINDOWS), Family::Firefox);
        assert_eq!(family(SAFARI), Family::Safari);
        assert_eq!(family(WEBKITGTK), Family::WebKitGtk);
        assert_eq!(family(ANDROID_CHROME), Family::Chromium);
    }

    #[test]
    fn each_engine_is_told_what_would_give_it_webgpu() {
        let linux_firefox = without_webgpu(FIREFOX_LINUX, false);
        assert!(linux_firefox.contains("Firefox on Linux") && linux_firefox.contains("dom.webgpu.enabled"));
        assert!(without_webgpu(FIREFOX_WINDOWS, false).contains("turned off"));
        assert!(without_webgpu(FIREFOX_LINUX, true).contains("gfx.webgpu.ignore-blocklist"));
        let gtk = without_webgpu(WEBKITGTK, false);
        assert!(gtk.contains("has no WebGPU") && gtk.contains("WebKitGTK"), "{gtk}");
        assert!(without_webgpu(SAFARI, false).contains("version 26"));
        let chromium = without_webgpu(CHROMIUM, true);
        assert!(chromium.contains("offers WebGPU but gave no adapter") && chromium.contains("enable-unsafe-webgpu"));
        assert!(!without_webgpu(ANDROID_CHROME, true).contains("enable-unsafe-webgpu"));
        assert_eq!(without_webgpu("curl/8", false), "this browser has no WebGPU");
    }
}
