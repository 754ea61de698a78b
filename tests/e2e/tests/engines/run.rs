//! The playground on the CPU engine: the CLI's greedy text, the words that say why there is no
//! WebGPU in this engine, the model cache (reload without a download, forget), and "copy link".

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::Engine;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{DONE, MODEL, READY, cli_greedy, greedy_run_url, present, screenshot_path};

const TOKENS: usize = 32;
/// Loading and 32 tokens on the wasm CPU engine, on 2 shared cores.
const RUN_TIMEOUT: Duration = Duration::from_secs(240);

fn number(s: &str) -> f64 {
    s.trim().parse().unwrap_or(f64::NAN)
}

/// The words the page gives, in each engine here, for running on the CPU engine rather than
/// WebGPU: Chromium without `--enable-unsafe-webgpu` has the API but no adapter; Firefox on
/// Linux keeps WebGPU behind a pref; WebKitGTK has none.
fn no_webgpu_words(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::Chromium => &["offers WebGPU but gave no adapter"],
        Engine::Firefox => &["Firefox", "dom.webgpu.enabled"],
        Engine::WebKit => &["has no WebGPU", "WebKitGTK"],
    }
}

/// Left to choose (`backend=auto`), the page runs the CPU engine, says why in this engine's
/// terms, and writes the CLI's greedy text token for token.
pub async fn cpu_engine_runs_the_clis_text(b: &Browser, server: &Server) {
    let expected = cli_greedy(MODEL, TOKENS, false, None);
    b.goto(&greedy_run_url(server, TOKENS, "")).await;
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(b.text("backend").await, "CPU (WASM)");
    let notice = b.text("notice").await;
    println!("{}: {notice}", b.engine.name());
    assert!(notice.contains("CPU engine"), "notice: {notice:?}");
    for words in no_webgpu_words(b.engine) {
        assert!(notice.contains(words), "notice lacks {words:?}: {notice:?}");
    }
    assert_eq!(b.text("output").await, expected, "status {:?}", b.text("status").await);
    let tok_s = number(&b.text("tok-s-mean").await);
    assert!(tok_s > 0.0, "tok/s shown: {tok_s}");
    println!("{}: wasm CPU decode {tok_s} tok/s", b.engine.name());
    assert_eq!(server.log.count(".gguf"), 1, "requests: {:?}", server.log.all());
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    let shot = format!("playground-cpu-{}.png", b.engine.name().to_lowercase());
    b.screenshot(&screenshot_path(&shot)).await.unwrap();
}

/// A reload takes the model from the cache (no second download); "Forget" empties the cache,
/// and the next load downloads it again.
pub async fn the_cache_reloads_and_forgets(b: &Browser, server: &Server) {
    let downloads = server.log.count(".gguf");
    b.client.refresh().await.unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(
        server.log.count(".gguf"),
        downloads,
        "the reload downloaded the model again; cache warning {:?}, cache note {:?}",
        b.text("cache-warning").await,
        b.text("cache-note").await
    );
    let listed = "document.querySelectorAll('[data-testid=cache-list] li').length";
    b.wait_for(&format!("{listed} === 1"), RUN_TIMEOUT).await.unwrap();
    let entry = b.text("cache-list").await;
    assert!(entry.contains("SmolLM2"), "{entry}");
    b.eval(
        "const d = document.querySelector('[data-testid=cache-list]').closest('details'); d.open = true; \
         [...d.querySelectorAll('button')].find(e => e.textContent === 'Forget').click(); return null;",
    )
    .await;
    b.wait_for(&format!("{listed} === 0"), RUN_TIMEOUT).await.unwrap();
    b.client.refresh().await.unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(
        server.log.count(".gguf"),
        downloads + 1,
        "after Forget the model is downloaded again"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
}

/// The run panel's "copy link" holds its settings, and opening the link restores them.
pub async fn copy_link_round_trips(b: &Browser, server: &Server) {
    b.goto(&server.url("index.html?backend=cpu&max_tokens=12&temperature=0.7&top_k=5&seed=7"))
        .await;
    b.wait_for(READY, RUN_TIMEOUT).await.unwrap();
    b.set("prompt", "Links keep: ünïcode & symbols?").await;
    b.click("copy-link-run").await;
    b.wait_for(&present("shared-run"), RUN_TIMEOUT).await.unwrap();
    let link = b.value("shared-run").await;
    assert!(link.contains("max_tokens=12") && link.contains("seed=7"), "{link}");
    b.goto(&link).await;
    // The link runs the model by itself (autorun), as it did for whoever shared it.
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(b.value("prompt").await, "Links keep: ünïcode & symbols?");
    assert_eq!(b.value("max_tokens").await, "12");
    assert_eq!(b.value("seed").await, "7");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
}
