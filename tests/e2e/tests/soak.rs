//! The page over a long session (issue #22): the default model decodes to the page's context
//! limit, then is loaded and run 20 more times, and neither the worker's WebAssembly memory nor
//! the page's JavaScript heap grows after warm-up. Figures are printed (run with --nocapture).
//! The same session then stops a run during its prefill, and loads a model while a long run
//! decodes: each ends the run promptly and keeps its text.

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, READY, serve_dist};

const WAIT: Duration = Duration::from_secs(600);
const CYCLES: usize = 20;

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The worker's last memory report (wasm bytes) and the page's JS heap after a full GC.
async fn memory(b: &Browser) -> (u64, u64) {
    let wasm = b
        .eval("return Number((document.querySelector('[data-testid=memory]')?.dataset.wasmBytes) || 0);")
        .await
        .as_u64()
        .unwrap_or(0);
    let heap = b
        .eval(
            "gc(); return new Promise((r) => setTimeout(() => { gc(); r(performance.memory.usedJSHeapSize); }, 100));",
        )
        .await
        .as_u64()
        .unwrap_or(0);
    (wasm, heap)
}

async fn generate(b: &Browser) {
    b.click("generate").await;
    b.wait_for(DONE, WAIT).await.unwrap();
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

#[tokio::test]
async fn a_long_run_and_twenty_reloads_keep_memory_flat() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 900).await.unwrap();
    let url = "index.html?backend=cpu&prompt=Once%20upon%20a%20time&max_tokens=64&temperature=0&autorun=1";
    b.client.goto(&server.url(url)).await.unwrap();
    b.wait_for(DONE, WAIT).await.unwrap();
    let warm = memory(&b).await;
    assert!(warm.0 > 100_000_000, "the worker holds the model: {warm:?}");

    // To the context limit: the status says why it stopped.
    b.set("max_tokens", "8192").await;
    generate(&b).await;
    let status = b.text("status").await;
    assert!(status.contains("the context is full"), "{status}");
    let generated: u64 = status
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let long = memory(&b).await;

    b.set("max_tokens", "8").await;
    let mut after_first = (0, 0);
    for cycle in 1..=CYCLES {
        b.eval("document.querySelector('[data-testid=model-shipped]').form.requestSubmit(); return null;")
            .await;
        b.wait_for(&format!("!({READY})"), Duration::from_secs(5)).await.ok();
        b.wait_for(READY, WAIT).await.unwrap();
        generate(&b).await;
        if cycle == 1 {
            after_first = memory(&b).await;
        }
    }
    let end = memory(&b).await;
    println!(
        "page soak: wasm memory {:.1} MB after warm-up, {:.1} MB after {generated} tokens (the context is full), \
         {:.1} MB after reload 1, {:.1} MB after reload {CYCLES}",
        mb(warm.0),
        mb(long.0),
        mb(after_first.0),
        mb(end.0)
    );
    println!(
        "page soak: JS heap {:.2} MB after warm-up, {:.2} MB after the long run, {:.2} MB after reload 1, {:.2} MB after reload {CYCLES}",
        mb(warm.1),
        mb(long.1),
        mb(after_first.1),
        mb(end.1)
    );
    assert_eq!(long.0, warm.0, "a long run grew the wasm memory");
    assert_eq!(after_first.0, warm.0, "the first reload grew the wasm memory");
    assert_eq!(end.0, after_first.0, "reloads grew the wasm memory");
    assert!(
        end.1 < after_first.1 + 1_000_000,
        "reloads grew the JS heap by {} bytes",
        end.1 as i64 - after_first.1 as i64
    );
    assert!(
        long.1 < warm.1 + 1_000_000,
        "the long run grew the JS heap by {} bytes",
        long.1 as i64 - warm.1 as i64
    );

    // Stop during prefill: the CPU engine reads the prompt 64 tokens at a time and stops
    // between chunks, before any token is generated.
    b.set("prompt", &"the history of the printing press ".repeat(120)).await;
    b.set("max_tokens", "64").await;
    b.click("generate").await;
    b.wait_for(
        "document.querySelector('[data-testid=status]').textContent.startsWith('Prefilling')",
        WAIT,
    )
    .await
    .unwrap();
    b.click("stop").await;
    b.wait_for(DONE, WAIT).await.unwrap();
    let status = b.text("status").await;
    assert!(status.ends_with("tokens (stopped)."), "{status}");
    let stopped_after: u64 = status.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap();
    assert_eq!(stopped_after, 0, "stopped within the prompt: {status}");

    // A load while a long run decodes stops the run rather than waiting for it to finish;
    // the text generated so far stays on the page.
    b.set("prompt", "Once upon a time").await;
    b.set("max_tokens", "8192").await;
    b.click("generate").await;
    b.wait_for(
        "document.querySelector('[data-testid=output]').textContent.length > 40",
        WAIT,
    )
    .await
    .unwrap();
    let generate_disabled = b
        .eval("return document.querySelector('[data-testid=generate]').disabled;")
        .await;
    assert_eq!(
        generate_disabled,
        serde_json::json!(true),
        "a second run cannot start while one decodes"
    );
    let asked = std::time::Instant::now();
    b.eval("document.querySelector('[data-testid=model-shipped]').form.requestSubmit(); return null;")
        .await;
    b.wait_for(&format!("!({READY})"), Duration::from_secs(5)).await.ok();
    b.wait_for(READY, WAIT).await.unwrap();
    let waited = asked.elapsed();
    println!("page: a load during a 2,000-token run was ready after {waited:?}");
    assert!(
        waited < Duration::from_secs(30),
        "the load waited for the run: {waited:?}"
    );
    assert!(b.text("output").await.len() > 40, "the run's text stayed");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// On WebGPU (SwiftShader here) a run to the context limit creates no GPU buffer: the worker's
/// count of buffers made stays where the load left it.
#[tokio::test]
async fn a_webgpu_run_to_the_context_limit_creates_no_gpu_buffer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    // Past end-of-text: the random model's greedy text may end anywhere (it did at 108 tokens
    // once the GPU's cache became f16), and this run must reach the limit.
    let url = "index.html?backend=gpu&model=synthetic:tiny:Q4_0&prompt=hello&max_tokens=8&temperature=0&autorun=1&ignore_eos=1";
    b.client.goto(&server.url(url)).await.unwrap();
    b.wait_for(DONE, WAIT).await.unwrap();
    assert!(
        b.text("backend").await.starts_with("WebGPU"),
        "{}",
        b.text("notice").await
    );
    let buffers = async || {
        b.eval("return Number(document.querySelector('[data-testid=memory]')?.dataset.gpuBuffers);")
            .await
            .as_u64()
            .unwrap()
    };
    let after_load = buffers().await;
    b.set("max_tokens", "8192").await;
    generate(&b).await;
    let status = b.text("status").await;
    assert!(status.contains("the context is full"), "{status}");
    let after_long = buffers().await;
    println!(
        "page soak (WebGPU): {after_load} GPU buffers after the first run, {after_long} after a run to the context limit ({status})"
    );
    assert_eq!(after_long, after_load, "decoding created GPU buffers");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
