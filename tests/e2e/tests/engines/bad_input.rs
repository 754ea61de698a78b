//! The page's answers to bad input (issue #22, the table in ARCHITECTURE.md) that need no
//! DevTools: every malformed model (core's `malformed_models`, the rows the CLI test also
//! loads), a model address that 404s, one blocked by CORS, one too large for WebAssembly's
//! memory and a download cut off midway each get their own message, and none of them loses the
//! reader's prompt or the text generated before it. And the Content-Security-Policy.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;
use tokscope_core::malformed::malformed_models;
use tokscope_core::synthetic::TinyLlama;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{DONE, READY, present, root, screenshot_path};

const WAIT: Duration = Duration::from_secs(120);
const PROMPT: &str = "keep me";

/// A server on another origin that misbehaves by path: `/big.gguf` claims 5 GB, `/cut.gguf`
/// promises 100,000 bytes and closes after 1,000, `/nocors.gguf` omits the CORS header.
fn misbehaving_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
            }
            let mut out = stream;
            let cors = "Access-Control-Allow-Origin: *\r\n";
            let _ = match path.as_str() {
                "/big.gguf" => write!(out, "HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n{cors}\r\nGGUF"),
                "/cut.gguf" => write!(out, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n{cors}\r\n")
                    .and_then(|_| out.write_all(&[0; 1000])),
                "/nocors.gguf" => write!(out, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nGGUF"),
                _ => write!(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n{cors}\r\n"),
            };
            let _ = out.flush();
            // Dropping the stream closes it: the cut download ends here.
        }
    });
    format!("http://{addr}")
}

fn error_mentions(text: &str) -> String {
    format!("(document.querySelector('[data-testid=error]')?.textContent || '').includes({text:?})")
}

/// Every malformed model and bad address gets its own message, naming it, and none loses the
/// prompt, the settings or the text generated before; the worker lives through all of them.
pub async fn every_bad_model_and_address_is_named_and_nothing_is_lost(b: &Browser, server: &Server) {
    let dir = root().join("target/e2e/bad-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let other = misbehaving_server();
    let downloads = server.log.count("missing.gguf");
    let url = "index.html?backend=cpu&model=synthetic:tiny:Q4_0&prompt=keep%20me&max_tokens=4&temperature=0";
    b.goto(&server.url(url)).await;
    b.wait_for(READY, WAIT).await.unwrap();
    b.click("generate").await;
    b.wait_for(DONE, WAIT).await.unwrap();
    let output = b.text("output").await;
    assert!(!output.is_empty());

    let kept = async |what: &str| {
        assert_eq!(b.value("prompt").await, PROMPT, "after {what}: the prompt");
        assert_eq!(b.value("max_tokens").await, "4", "after {what}: the settings");
        assert_eq!(
            b.text("output").await,
            output,
            "after {what}: the text generated before"
        );
    };
    for m in malformed_models() {
        let path = dir.join(m.file);
        std::fs::write(&path, &m.bytes).unwrap();
        b.pick_file(&path).await;
        b.wait_for(&error_mentions(m.file), WAIT).await.unwrap();
        let shown = b.text("error").await;
        assert!(
            shown.starts_with(m.file) && shown.contains(m.says),
            "{}: {shown:?}",
            m.file
        );
        kept(m.file).await;
    }

    // A cookie on the page's own origin: a model fetch sends no credentials even there.
    b.eval("document.cookie = 'session=secret; path=/'; return null;").await;
    for (address, says) in [
        (
            server.url("models/missing.gguf"),
            "the server answered HTTP 404".to_string(),
        ),
        (
            format!("{other}/nocors.gguf"),
            "cross-origin requests (CORS".to_string(),
        ),
        (
            format!("{other}/big.gguf"),
            tokscope_core::limits::check_wasm_model_size(5_000_000_000).unwrap_err(),
        ),
        (
            format!("{other}/cut.gguf"),
            "Load it again to restart the download".to_string(),
        ),
        (
            "javascript:alert(1)".to_string(),
            "only http(s) addresses can be loaded".to_string(),
        ),
    ] {
        b.set("model-url", &address).await;
        b.eval("document.querySelector('[data-testid=model-url]').form.requestSubmit(); return null;")
            .await;
        b.wait_for(
            &format!("{} && {}", error_mentions(&address), error_mentions(&says)),
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("{address}: {e}"));
        kept(&address).await;
    }
    assert!(
        b.text("status").await.contains("only http(s) addresses"),
        "the status says the latest error"
    );
    assert_eq!(b.text("backend").await, "no model", "the failed loads left no model");
    b.screenshot(&screenshot_path(&format!(
        "bad-input-error-{}.png",
        b.engine.name().to_lowercase()
    )))
    .await
    .unwrap();
    assert!(server.log.count("missing.gguf") > downloads);
    let with_cookies = server.log.with_cookies();
    assert!(
        with_cookies.iter().all(|p| !p.ends_with(".gguf")),
        "a model fetch sent cookies: {with_cookies:?}"
    );

    // The worker lived through all of it: a good model loads and generates.
    let good = dir.join("good.gguf");
    std::fs::write(&good, TinyLlama::default().build()).unwrap();
    b.pick_file(&good).await;
    b.wait_for(READY, WAIT).await.unwrap();
    b.click("generate").await;
    b.wait_for(DONE, WAIT).await.unwrap();
    assert_eq!(b.value("prompt").await, PROMPT);
    // A page error would be a crash or a policy violation; the messages above are not errors.
    let errors: Vec<String> = b.page_errors().await;
    assert!(
        errors.iter().all(|e| !e.contains("panicked") && !e.contains("CSP")),
        "{errors:?}"
    );
}

/// A storage quota too small for the model (set through DevTools): the model loads and runs
/// all the same, and the reader is told it was not cached.
/// The Content-Security-Policy is in force, in the page's meta tag and the server's header: the
/// page itself breaks no rule, and an injected inline script is blocked and reported.
pub async fn the_content_security_policy_is_in_force(b: &Browser, server: &Server) {
    b.goto(&server.url("index.html#/embed/agent")).await;
    b.wait_for(&present("agent-columns"), WAIT).await.unwrap();
    let policy = tokscope_web::csp::CONTENT_SECURITY_POLICY;
    let meta = b
        .eval("return document.querySelector('meta[http-equiv=Content-Security-Policy]')?.content;")
        .await;
    assert_eq!(meta, serde_json::json!(policy));
    let header = b
        .eval("return fetch(location.href).then((r) => r.headers.get('content-security-policy'));")
        .await;
    assert_eq!(header, serde_json::json!(policy));
    assert_eq!(
        b.page_errors().await,
        Vec::<String>::new(),
        "the page itself breaks no rule"
    );
    // An inline script, as an injection would add: blocked, and the violation is reported.
    b.eval(
        "const s = document.createElement('script'); s.textContent = 'window.__xss = 1'; \
         document.body.append(s); return new Promise((r) => setTimeout(() => r(null), 200));",
    )
    .await;
    assert_eq!(
        b.eval("return String(window.__xss);").await,
        serde_json::json!("undefined")
    );
    let errors = b.page_errors().await;
    assert!(
        errors.iter().any(|e| e.starts_with("CSP violation: script-src")),
        "{errors:?}"
    );
}
