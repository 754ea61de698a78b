//! The playground in headless Chromium, beyond what every engine checks (engines.rs) and the
//! WebGPU runs in Chromium and Firefox (webgpu.rs): the page as `cargo xtask build-web` builds it
//! (`dist/`, by scripts/test.sh first), served by our static server, driven through
//! chromedriver. WebGPU runs on SwiftShader where the machine has no GPU. Screenshots land in
//! `target/e2e/`.

use std::time::Duration;
use tokio::sync::Mutex;
use tokscope_core::model::Model;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server;
use tokscope_e2e::site::{DONE, MODEL, PROMPT, READY, cli_greedy, greedy_run_url, root, serve_dist, url_encode};

const TOKENS: usize = 32;
/// Loading and 32 tokens on SwiftShader or the wasm CPU engine, on 2 shared cores.
const RUN_TIMEOUT: Duration = Duration::from_secs(match option_env!("E2E_QUICK") {
    Some(_) => 20,
    None => 240,
});

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

fn number(s: &str) -> f64 {
    s.trim().parse().unwrap_or(f64::NAN)
}

/// On a 360 px phone (the CPU engine's run; its text against the CLI's is checked in every
/// engine: engines/run.rs), the meter's figures ride along under the run.
#[tokio::test]
async fn at_360_px_the_rate_line_rides_under_the_run() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 360, 800).await.unwrap();
    b.client
        .goto(&greedy_run_url(&server, TOKENS, "&backend=cpu"))
        .await
        .unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    let tok_s = number(&b.text("tok-s-mean").await);
    assert!(tok_s > 0.0, "tok/s shown: {tok_s}");
    // At 360 px the meter stacks under the run; its figures ride along under the output,
    // pinned to the view's bottom while the run is on screen.
    let rate = b.text("run-rate").await;
    assert!(rate.contains(&format!("{} mean", b.text("tok-s-mean").await)), "{rate}");
    let pinned = b
        .eval("const r = document.querySelector('[data-testid=run-rate]'); const st = getComputedStyle(r); return [st.display, st.position];")
        .await;
    assert_eq!(pinned, serde_json::json!(["block", "sticky"]));
    b.eval("document.querySelector('[data-testid=prompt]').scrollIntoView(); return null;")
        .await;
    let bottom = b
        .eval("return Math.round(document.querySelector('[data-testid=run-rate]').getBoundingClientRect().bottom);")
        .await;
    assert!(
        bottom.as_i64().unwrap() <= 800,
        "the rate line is off screen: bottom at {bottom}"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&root().join("target/e2e/mobile-360-cpu.png"))
        .await
        .unwrap();
    b.close().await;
}

/// Loads and decodes with the Generate button, recording main-thread long tasks meanwhile, then loses the
/// GPU device on purpose and checks that the engine recovers and generates again.
#[tokio::test]
async fn decode_keeps_the_page_responsive_and_a_lost_device_recovers() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    b.client
        .goto(&server.url("index.html?max_tokens=16&temperature=0&backend=gpu#/run?model_preset=loaded"))
        .await
        .unwrap();
    b.wait_for(READY, RUN_TIMEOUT).await.unwrap();
    // Loading (download, parse, upload) runs in the worker: no main-thread task over 50 ms
    // from the first progress report to "ready".
    let during_load = b
        .eval(
            "return __tokscope_longtasks.filter(t => t.start >= window.__tokscope_load_start_ms \
             && t.start <= window.__tokscope_ready_ms).map(t => t.duration);",
        )
        .await;
    assert_eq!(
        during_load,
        serde_json::json!([]),
        "main-thread tasks over 50 ms while loading (ms)"
    );
    let t0 = b.eval("return performance.now();").await.as_f64().unwrap();
    b.click("generate").await;
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    let long = b
        .eval(&format!(
            "return __tokscope_longtasks.filter(t => t.start >= {t0}).map(t => t.duration);"
        ))
        .await;
    assert_eq!(
        long,
        serde_json::json!([]),
        "main-thread tasks over 50 ms during decode (ms)"
    );
    let first = b.text("output").await;
    assert!(!first.is_empty());

    b.eval("[...document.querySelectorAll('button')].find(e => e.textContent.includes('lost GPU')).click(); return 0;")
        .await;
    b.wait_for(
        "document.querySelector('[data-testid=notice]')?.textContent.includes('Recovered')",
        RUN_TIMEOUT,
    )
    .await
    .unwrap();
    assert!(b.text("backend").await.starts_with("WebGPU"));
    b.click("generate").await;
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(b.text("output").await, first, "greedy text after recovery");
    assert_eq!(b.value("roof-kv-bits").await, "16", "WebGPU's KV cache is f16");

    // Lost for good: the engine comes back on the CPU, and every figure follows it — the KV
    // cache's bits (f32 there), and nothing measured on the lost GPU left on show.
    b.click("lose-gpu-for-good").await;
    b.wait_for(
        "document.querySelector('[data-testid=notice]')?.textContent.includes('running on CPU')",
        RUN_TIMEOUT,
    )
    .await
    .unwrap();
    b.wait_for(
        "document.querySelector('[data-testid=roof-kv-bits]').value === '32'",
        RUN_TIMEOUT,
    )
    .await
    .unwrap();
    let points = b
        .eval("return document.querySelectorAll('[data-testid=roof-chart] .pt-decode circle').length;")
        .await;
    assert_eq!(points, 0, "the lost engine's rate is not this engine's");
    b.click("generate").await;
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(b.text("output").await, first, "greedy text on the CPU engine");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// A truncated GGUF picked in the file input shows the reader's own error text.
#[tokio::test]
async fn a_truncated_gguf_shows_the_readers_error() {
    let _one = ONE_AT_A_TIME.lock().await;
    let bytes = std::fs::read(root().join("public").join(MODEL)).unwrap();
    let cut = &bytes[..bytes.len() / 3];
    let expected = tokscope_core::gguf::Gguf::parse(cut.to_vec())
        .err()
        .map(|e| e.to_string())
        .or_else(|| Model::load(cut.to_vec()).err().map(|e| e.to_string()))
        .expect("a truncated file is an error");
    let path = root().join("target/e2e/truncated.gguf");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, cut).unwrap();
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    b.client.goto(&server.url("index.html")).await.unwrap();
    b.wait_for(READY, RUN_TIMEOUT).await.unwrap();
    b.pick_file(&path).await;
    b.wait_for("document.querySelector('[data-testid=error]')", RUN_TIMEOUT)
        .await
        .unwrap();
    let shown = b.text("error").await;
    assert!(shown.contains(&expected), "shown {shown:?}, reader says {expected:?}");
    assert!(
        shown.starts_with("truncated.gguf"),
        "the message names the file: {shown:?}"
    );
    b.screenshot(&root().join("target/e2e/truncated-error.png"))
        .await
        .unwrap();
    b.close().await;
}

/// The static build made for a sub-path (`--public-url /tokscope/`) works when hosted there:
/// the worker, the model and the styles all load relative to it. A reload with the model cached
/// reports the time from navigation to "ready".
#[tokio::test]
async fn a_build_for_a_sub_path_runs_there_and_reloads_from_cache() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = server::start(&tokscope_e2e::site::subpath_root(), "127.0.0.1:0").expect("the static server starts");
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    b.client
        .goto(&server.url("tokscope/index.html?prompt=Hello&max_tokens=8&temperature=0&autorun=1"))
        .await
        .unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert!(!b.text("output").await.is_empty());
    let outside: Vec<String> = server
        .log
        .all()
        .into_iter()
        .filter(|p| !p.starts_with("/tokscope/"))
        .collect();
    assert!(outside.is_empty(), "requests outside the sub-path: {outside:?}");
    let first = b.eval("return window.__tokscope_ready_ms;").await.as_f64().unwrap();
    b.client.refresh().await.unwrap();
    b.wait_for("window.__tokscope_ready_ms !== undefined", RUN_TIMEOUT)
        .await
        .unwrap();
    let cached = b.eval("return window.__tokscope_ready_ms;").await.as_f64().unwrap();
    assert_eq!(server.log.count(".gguf"), 1, "the reload downloaded the model again");
    let badge = b.text("backend").await;
    println!("navigation to ready: {first:.0} ms with a download, {cached:.0} ms from the cache ({badge})");
    // Left to choose, the page times both engines on the same steps and keeps the faster,
    // saying so with both rates (SwiftShader here: the CPU engine, measured, not assumed).
    let notice = b.text("notice").await;
    let rate = |after: &str| -> f64 {
        let rest = notice
            .split(after)
            .nth(1)
            .unwrap_or_else(|| panic!("{after:?} in {notice:?}"));
        rest.split(" tok/s").next().unwrap().replace(',', "").parse().unwrap()
    };
    let (gpu, cpu) = (rate("WebGPU here: "), rate("CPU engine: "));
    println!("auto: {notice}");
    assert!(gpu > 0.0 && cpu > 0.0, "{notice}");
    match badge.as_str() {
        "CPU (WASM)" => assert!(cpu > gpu && notice.contains("using the CPU engine"), "{notice}"),
        _ => assert!(gpu >= cpu && notice.contains("using WebGPU"), "{badge}: {notice}"),
    }
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// `model=synthetic:SHAPE:TYPE` makes a random-weight model in the worker (no download) that
/// loads, generates and is named as what it is: speed only.
#[tokio::test]
async fn a_synthetic_model_is_made_in_the_page_and_generates() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    let url = server.url(
        "index.html?model=synthetic:tiny:Q4_0&prompt=hello&max_tokens=8&temperature=0&autorun=1&backend=gpu#/speed",
    );
    b.client.goto(&url).await.unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    let info = b.text("model-info").await;
    assert!(info.contains("synthetic tiny") && info.contains("speed only"), "{info}");
    assert_eq!(server.log.count(".gguf"), 0, "requests: {:?}", server.log.all());
    // The batch dial on WebGPU: each batch size is new state over the loaded engine's weights.
    assert!(b.text("batch-backend").await.starts_with("WebGPU"));
    b.click("batch-run").await;
    b.wait_for(
        "document.querySelector('[data-testid=batch-all-16]') !== null",
        RUN_TIMEOUT,
    )
    .await
    .unwrap();
    let all: f64 = b.text("batch-all-16").await.parse().unwrap();
    assert!(all > 0.0, "{all}");
    assert_eq!(b.page_errors().await.len(), 0, "{:?}", b.page_errors().await);
    b.close().await;
}

/// Gemma 3 270M, the second model served with the page, picked from the model menu, on the
/// page's CPU engine (`backend=cpu`: on SwiftShader its 262k-row head would take minutes; the
/// GPU engine runs gemma3 in `browser_engine.rs` on tiny models and natively on the real one):
/// its greedy text equals the CLI's (which tracks llama.cpp: core's `llamacpp_parity`), and the
/// card shows the bytes per token `tokscope inspect` prints.
#[tokio::test]
async fn gemma_from_the_model_menu_runs_like_the_cli() {
    let _one = ONE_AT_A_TIME.lock().await;
    let gemma = tokscope_core::shipped::SHIPPED[1];
    let expected = cli_greedy(gemma.path, 8, false, None);
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    let url = server.url(&format!(
        "index.html?prompt={}&max_tokens=8&temperature=0&backend=cpu",
        url_encode(PROMPT)
    ));
    b.client.goto(&url).await.unwrap();
    b.wait_for(READY, RUN_TIMEOUT).await.unwrap();
    b.set("model-shipped", "1").await;
    b.click("model-shipped-load").await;
    let loaded = "document.querySelector('[data-testid=model-info]').textContent.includes('gemma3')";
    b.wait_for(&format!("{loaded} && {READY}"), RUN_TIMEOUT).await.unwrap();
    let info = b.text("model-info").await;
    assert!(
        info.contains(&format!("{:.1} MB", gemma.weight_bytes_per_token as f64 / 1e6)),
        "{info}"
    );
    assert_eq!(b.text("backend").await, "CPU (WASM)");
    b.click("generate").await;
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(b.text("output").await, expected, "status {:?}", b.text("status").await);
    println!("gemma in the page: {} tok/s", b.text("tok-s-mean").await);
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
