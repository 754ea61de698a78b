//! The page's Content-Security-Policy: written into `index.html` as a `<meta>` by the build
//! (for static hosts) and sent as a header by the project's server (which also covers the
//! worker's script, since a worker takes the policy its own response carries).
//!
//! Why each directive (CSP Level 3, https://www.w3.org/TR/CSP3/):
//! - `script-src 'self' 'wasm-unsafe-eval'`: the page's and the worker's scripts come from its
//!   own origin, never inline or from elsewhere; `'wasm-unsafe-eval'` lets them compile their
//!   WebAssembly and allows nothing else (no `eval`, no inline handlers such as `onerror=`).
//! - `connect-src 'self' https: http:`: a reader may load a model from any address they give
//!   (the fetch sends no credentials; the server must allow CORS).
//! - `style-src 'self'`: the stylesheet file; inline style attributes are refused (the page sets
//!   widths through the CSSOM, which CSP does not govern).
//! - `img-src 'self' data:`: the inline SVG icon. `object-src 'none'`, `base-uri 'self'`,
//!   `form-action 'none'`: no plugins, no `<base>` hijack, no form posts anywhere.
//!
//! `frame-ancestors` is deliberately absent: educators embed the panels in any site.

/// The policy, one line, as both the `<meta>` and the header carry it.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     connect-src 'self' https: http:; style-src 'self'; img-src 'self' data:; worker-src 'self'; \
     object-src 'none'; base-uri 'self'; form-action 'none'";

/// The policy for a page whose files are served from `asset_origin` (a build with an absolute
/// public URL, e.g. a CDN): that origin is allowed wherever `'self'` is.
pub fn content_security_policy(asset_origin: Option<&str>) -> String {
    match asset_origin {
        Some(origin) => CONTENT_SECURITY_POLICY.replace("'self'", &format!("'self' {origin}")),
        None => CONTENT_SECURITY_POLICY.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_or_remote_script() {
        let script = CONTENT_SECURITY_POLICY
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("script-src"))
            .unwrap();
        assert_eq!(script, "script-src 'self' 'wasm-unsafe-eval'");
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-inline"));
        assert!(!CONTENT_SECURITY_POLICY.contains("'unsafe-eval'"));
        assert!(
            !CONTENT_SECURITY_POLICY.contains('"'),
            "it goes inside a quoted attribute"
        );
    }

    #[test]
    fn an_asset_origin_is_allowed_where_self_is() {
        let p = content_security_policy(Some("https://cdn.example"));
        assert!(
            p.contains("script-src 'self' https://cdn.example 'wasm-unsafe-eval'"),
            "{p}"
        );
        assert!(p.contains("base-uri 'self' https://cdn.example"), "{p}");
    }
}
