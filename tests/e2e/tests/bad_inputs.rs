//! The page's answers to bad input (issue #22, the table in ARCHITECTURE.md): every malformed
//! model (core's `malformed_models`, the rows the CLI test also loads), a model address that
//! 404s, one blocked by CORS, one too large for WebAssembly's memory and a download cut off
//! midway each get their own message, and none of them loses the reader's prompt or the text
//! generated before it. The worker survives them all: a good model loads and runs after.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;
use tokscope_core::malformed::malformed_models;
use tokscope_core::synthetic::TinyLlama;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, READY, root, screenshot_path, serve_dist};

const WAIT: Duration = Duration::from_secs(120);
const PROMPT: &str = "keep me";

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

#[tokio::test]
async fn every_bad_model_and_address_is_named_and_nothing_is_lost() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = root().join("target/e2e/bad-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let other = misbehaving_server();
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 900).await.unwrap();
    let url = "index.html?backend=cpu&model=synthetic:tiny:Q4_0&prompt=keep%20me&max_tokens=4&temperature=0";
    b.client.goto(&server.url(url)).await.unwrap();
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
    b.screenshot(&screenshot_path("bad-input-error.png")).await.unwrap();
    assert!(server.log.count("missing.gguf") >= 1);
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
    b.close().await;
}

/// A storage quota too small for the model (set through DevTools): the model loads and runs
/// all the same, and the reader is told it was not cached.
#[tokio::test]
async fn a_full_storage_quota_still_runs_the_model_and_says_so() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 900).await.unwrap();
    let origin = server.url("").trim_end_matches('/').to_string();
    let url = "index.html?backend=cpu&prompt=Hello&max_tokens=4&temperature=0&autorun=1";
    // The override applies to an origin the browser has opened.
    b.client.goto(&server.url("embed-example.html")).await.unwrap();
    b.cdp(
        "Storage.overrideQuotaForOrigin",
        serde_json::json!({ "origin": origin, "quotaSize": 1_000_000 }),
    )
    .await
    .unwrap();
    b.client.goto(&server.url(url)).await.unwrap();
    b.wait_for(DONE, WAIT).await.unwrap();
    assert!(!b.text("output").await.is_empty());
    let note = b.text("cache-warning").await;
    assert!(note.contains("not cached"), "the reader is told: {note:?}");
    println!("quota full: {note}");
    b.close().await;
}
