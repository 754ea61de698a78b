//! The static server that `scripts/run.sh` starts, over plain HTTP/1.1 on a socket: byte ranges,
//! the build's precompressed copies, ETag revalidation, types, CORS and the page's headers.

use std::io::{Read, Write};
use std::net::TcpStream;
use tokscope_e2e::site::{MODEL, dist, serve_dist};

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection, read to the end.
fn request(addr: std::net::SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    let extra: String = headers.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let body = &raw[split + 4..];
    let body = match head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        true => dechunk(body),
        false => body.to_vec(),
    };
    Reply { status, headers, body }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line_end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
        body = &body[line_end + 2 + size + 2..];
    }
}

/// The app's wasm file in `dist/` (content-hashed name).
fn app_wasm() -> String {
    std::fs::read_dir(dist())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| n.starts_with("tokscope-app-") && n.ends_with("_bg.wasm"))
        .expect("the app's wasm in dist/")
}

#[test]
fn a_range_request_reads_only_the_gguf_header() {
    let server = serve_dist();
    let model_len = std::fs::metadata(dist().join(MODEL)).unwrap().len();
    let r = request(server.addr, "GET", &format!("/{MODEL}"), &[("Range", "bytes=0-7")]);
    println!("Range: bytes=0-7 → {} {:?}", r.status, r.header("content-range"));
    assert_eq!(r.status, 206);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 0-7/{model_len}").as_str())
    );
    assert_eq!(r.body.len(), 8);
    assert_eq!(&r.body[..4], b"GGUF");
    // A resumed download: from an offset to the end.
    let from = model_len - 100;
    let r = request(
        server.addr,
        "GET",
        &format!("/{MODEL}"),
        &[("Range", &format!("bytes={from}-"))],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body.len(), 100);
    let past = request(
        server.addr,
        "GET",
        &format!("/{MODEL}"),
        &[("Range", &format!("bytes={model_len}-"))],
    );
    assert_eq!(past.status, 416, "a range past the end is refused");
}

#[test]
fn the_builds_brotli_copy_is_sent_where_it_is_accepted() {
    let server = serve_dist();
    let wasm = app_wasm();
    let original = std::fs::read(dist().join(&wasm)).unwrap();
    let br = request(
        server.addr,
        "GET",
        &format!("/{wasm}"),
        &[("Accept-Encoding", "gzip, br")],
    );
    println!(
        "{wasm}: {} bytes, sent as {:?} in {} bytes",
        original.len(),
        br.header("content-encoding"),
        br.body.len()
    );
    assert_eq!(br.status, 200);
    assert_eq!(br.header("content-encoding"), Some("br"));
    assert_eq!(br.header("content-type"), Some("application/wasm"));
    assert!(
        br.header("vary")
            .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding"))
    );
    let mut decoded = Vec::new();
    brotli::BrotliDecompress(&mut br.body.as_slice(), &mut decoded).unwrap();
    assert_eq!(decoded, original);
    let gz = request(server.addr, "GET", &format!("/{wasm}"), &[("Accept-Encoding", "gzip")]);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    let plain = request(server.addr, "GET", &format!("/{wasm}"), &[]);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.body, original);
}

#[test]
fn an_unchanged_file_is_revalidated_with_a_304() {
    let server = serve_dist();
    let first = request(server.addr, "GET", "/", &[]);
    assert_eq!(first.status, 200);
    assert!(String::from_utf8_lossy(&first.body).contains("tokscope-worker"));
    assert_eq!(first.header("cache-control"), Some("no-cache"));
    let tag = first.header("etag").expect("an ETag").to_string();
    let again = request(server.addr, "GET", "/", &[("If-None-Match", &tag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(tag.as_str()));
    let other = request(server.addr, "GET", "/", &[("If-None-Match", "W/\"0-0\"")]);
    assert_eq!(other.status, 200);
}

#[test]
fn the_page_gets_its_policy_types_and_cors() {
    let server = serve_dist();
    let index = request(
        server.addr,
        "GET",
        "/index.html",
        &[("Origin", "http://article.example")],
    );
    assert_eq!(index.header("content-type"), Some("text/html"));
    assert_eq!(
        index.header("content-security-policy"),
        Some(tokscope_web::csp::CONTENT_SECURITY_POLICY)
    );
    assert_eq!(index.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(index.header("access-control-allow-origin"), Some("*"));
    let example = request(server.addr, "GET", "/embed-example.html", &[]);
    assert_eq!(example.status, 200);
    assert_eq!(example.header("content-security-policy"), None, "an article's own page");
    let preflight = request(
        server.addr,
        "OPTIONS",
        &format!("/{MODEL}"),
        &[
            ("Origin", "http://article.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "range"),
        ],
    );
    assert!(preflight.status < 300, "preflight answered: {}", preflight.status);
    assert!(preflight.header("access-control-allow-headers").is_some());
    let model = request(
        server.addr,
        "HEAD",
        &format!("/{MODEL}"),
        &[("Origin", "http://a.example")],
    );
    assert!(
        model
            .header("access-control-expose-headers")
            .is_some_and(|h| h.contains("content-range"))
    );
    assert_eq!(model.header("accept-ranges"), Some("bytes"));
}

#[test]
fn missing_files_and_escapes_are_404_and_other_methods_405() {
    let server = serve_dist();
    let missing = request(server.addr, "GET", "/models/missing.gguf", &[]);
    assert_eq!(missing.status, 404);
    assert_eq!(
        String::from_utf8_lossy(&missing.body),
        "not found: /models/missing.gguf\n"
    );
    let escape = request(server.addr, "GET", "/../Cargo.toml", &[]);
    assert!(matches!(escape.status, 400 | 404), "{}", escape.status);
    let post = request(server.addr, "POST", "/index.html", &[]);
    assert_eq!(post.status, 405);
    assert!(server.log.count("missing.gguf") == 1);
}
