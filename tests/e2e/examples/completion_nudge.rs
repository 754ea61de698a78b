//! Firefox's WebGPU learns that submitted work has finished when it polls its device: on a
//! 100 ms timer (Mozilla bug 1870699), and also when its queue receives a submit. This weighs
//! the trick issue #32 asks about — an empty submit every few milliseconds while a read-back is
//! pending — in each engine with WebGPU here, side by side: a submit of real work (a 64 MB
//! buffer copy) and a 4-byte map, timed plain and nudged, rounds alternating.
//!
//!     cargo run -p tokscope-e2e --example completion_nudge -- [ROUNDS] [NUDGE_MS]
//!
//! Needs the browsers (`scripts/setup.sh --test`); the page is a blank document on the test
//! server's origin (WebGPU needs a secure context: 127.0.0.1 is one).

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::{Engine, Options};
use tokscope_e2e::site::serve_dist;

/// Times `n` submit + map round trips of a 64 MB copy, without and with nudges; resolves to
/// `[plain_ms, nudged_ms, empty_plain_ms, empty_nudged_ms]` medians.
const SCRIPT: &str = r#"
const nudgeMs = arguments[0];
return (async () => {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice();
  const size = 64 << 20;
  const src = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC });
  const dst = device.createBuffer({ size, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const once = async (work, nudge) => {
    const enc = device.createCommandEncoder();
    if (work) enc.copyBufferToBuffer(src, 0, dst, 0, size);
    enc.copyBufferToBuffer(dst, 0, read, 0, 4);
    const t = performance.now();
    device.queue.submit([enc.finish()]);
    const map = read.mapAsync(GPUMapMode.READ);
    if (nudge) {
      let done = false;
      map.then(() => { done = true; });
      while (!done) {
        await Promise.race([map, sleep(nudgeMs)]);
        if (!done) device.queue.submit([]);
      }
    } else {
      await map;
    }
    const ms = performance.now() - t;
    read.unmap();
    return ms;
  };
  const median = xs => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1]; };
  await once(true, false);
  const out = [];
  for (const work of [true, false]) {
    const plain = [], nudged = [];
    for (let i = 0; i < 9; i++) {
      plain.push(await once(work, false));
      nudged.push(await once(work, true));
    }
    out.push(median(plain), median(nudged));
  }
  device.destroy();
  return out;
})();
"#;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(2);
    let nudge_ms: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let server = serve_dist();
    for round in 1..=rounds {
        for engine in [Engine::Chromium, Engine::Firefox] {
            let opts = Options {
                webgpu: true,
                width: 800,
                height: 600,
            };
            let b = Browser::open(engine, opts).await.unwrap();
            b.client.goto(&server.url("nudge-blank")).await.unwrap();
            let r = tokio::time::timeout(
                Duration::from_secs(300),
                b.client.execute(SCRIPT, vec![serde_json::json!(nudge_ms)]),
            )
            .await;
            match r {
                Ok(Ok(v)) => {
                    let ms: Vec<f64> = serde_json::from_value(v.clone()).unwrap_or_default();
                    if let [plain, nudged, empty_plain, empty_nudged] = ms[..] {
                        println!(
                            "round {round} {:<8}: 64 MB copy + map {plain:7.2} ms plain, {nudged:7.2} ms nudged every {nudge_ms} ms; \
                             4-byte map alone {empty_plain:7.2} ms plain, {empty_nudged:7.2} ms nudged",
                            engine.name()
                        );
                    } else {
                        println!("round {round} {}: {v}", engine.name());
                    }
                }
                Ok(Err(e)) => println!("round {round} {}: script failed: {e}", engine.name()),
                Err(_) => println!("round {round} {}: timed out", engine.name()),
            }
            b.close().await;
        }
    }
}
