//! The panels with a model running, in headless Chromium: the measured point on the roofline and
//! in the agent panel, the speed check against the native probe and bench, the floor on the
//! roofline, the precision and batch dials, the run embed, and the panels at 360 px. (The
//! calculators' own checks and their embeds run in every engine: engines/calculators.rs.)
//! Screenshots land in `target/e2e/`.

use std::time::Duration;
use tokio::sync::Mutex;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{
    self, MODEL, SWIFTSHADER_ICD, present, probe_agrees_with_native, screenshot_path, serve_dist, text_is, tokscope,
};

const WAIT: Duration = Duration::from_secs(60);

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The full page with a model running: the roofline panel takes the loaded model's figures and
/// plots the measured decode and prefill points with their MBU; the agent panel can use the
/// measured rate.
#[tokio::test]
async fn the_running_model_appears_on_the_roofline_and_in_the_agent_panel() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url(
            "index.html?backend=cpu&prompt=Hello&max_tokens=16&temperature=0&autorun=1\
             #/roofline?model_preset=loaded&bandwidth=20&speeds=30,measured,ceiling",
        ))
        .await
        .unwrap();
    let done = "document.querySelector('[data-testid=status]').textContent.startsWith('Done')";
    b.wait_for(done, Duration::from_secs(240)).await.unwrap();
    b.wait_for(
        "document.querySelector('[data-testid=roof-mbu]').textContent.includes('%')",
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(b.value("roof-model").await, "loaded");
    // SmolLM2-135M: its own parameter count, not the Llama preset's.
    assert!(
        b.value("roof-params").await.ends_with('M'),
        "{}",
        b.value("roof-params").await
    );
    let points = b
        .eval("return ['pt-estimate','pt-decode','pt-prefill'].map(c => document.querySelectorAll('[data-testid=roof-chart] .' + c + ' circle').length);")
        .await;
    assert_eq!(points, serde_json::json!([1, 1, 1]));
    // MBU = measured tok/s × bytes per token ÷ 20 GB/s: some percent, finite.
    let mbu = b.text("roof-mbu").await;
    let pct: f64 = mbu.split(' ').next().unwrap().parse().unwrap();
    assert!(pct > 0.0 && pct < 1000.0, "{mbu}");
    // The chart speaks the reader's units: the roof in GB/s, each point in tok/s.
    assert_eq!(b.text("roof-chart-label").await, "roof: 20 GB/s × intensity");
    let labels = b
        .eval("return ['pt-estimate','pt-decode'].map(c => document.querySelector('[data-testid=roof-chart] .' + c + ' text').textContent);")
        .await;
    let mean = b.text("tok-s-mean").await;
    assert_eq!(
        labels,
        serde_json::json!([
            format!("ceiling: {} tok/s", b.text("roof-tok-s").await),
            format!("you: {mean} tok/s ({} MBU)", mbu.split(" of ").next().unwrap())
        ])
    );
    // The agent panel's measured column has a time, not a "not measured" note.
    assert!(b.text("agent-total-1").await.ends_with(" s") || b.text("agent-total-1").await.contains("min"));
    assert_eq!(b.text("agent-speed-2").await, "roofline ceiling");
    // The explanations quote the calculator's own figures.
    let pipe = b.text("learn-pipe").await;
    assert!(
        pipe.contains("16.06 GB per token") && pipe.contains("at most 62 tokens per second"),
        "{pipe}"
    );
    b.screenshot(&screenshot_path("roofline-measured.png")).await.unwrap();

    // Another model loaded (the served model again, from the cache): what was measured
    // belonged to the one before. No "you" point, no measured MBU, and the guided path's first
    // step waits for a run.
    b.click("model-shipped-load").await;
    b.wait_for(site::READY, WAIT).await.unwrap();
    let points = b
        .eval("return document.querySelectorAll('[data-testid=roof-chart] .pt-decode circle').length;")
        .await;
    assert_eq!(points, 0);
    assert!(!b.text("roof-mbu").await.contains('%'));
    b.eval("location.hash = '#/guide/1'; return 0;").await;
    b.wait_for(&site::text_starts("lesson-finding", "Not measured yet"), WAIT)
        .await
        .unwrap();
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// A Chromium with WebGPU (SwiftShader here) that has run the speed check on `path`.
async fn speed_check(server: &Server, path: &str) -> Browser {
    let b = Browser::launch(true, 1280, 1000).await.unwrap();
    site::speed_check(&b, &server.url(path)).await;
    b
}

fn json_field(json: &str, field: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v[field].as_f64().unwrap_or_else(|| panic!("{field} in {json}"))
}

/// The speed check on the page's WebGPU (SwiftShader here), once for both: the roofline panel's
/// "this device, measured" takes the probe's bandwidth and the engine's fixed cost per token and
/// shows the floor model and its sentence; the card agrees with `tokscope probe` and `tokscope
/// bench --backend gpu` on the same driver within 2×, copies as Markdown, and its share link
/// shows the same card.
#[tokio::test]
async fn the_speed_check_agrees_with_the_native_probe_and_bench_and_sets_the_rooflines_floor() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = speed_check(
        &server,
        "index.html?backend=gpu#/roofline?model_preset=loaded&context=0",
    )
    .await;
    b.set("roof-device", "measured").await;
    b.wait_for(
        "document.querySelector('[data-testid=roof-floor]').textContent.includes('tok/s')",
        WAIT,
    )
    .await
    .unwrap();
    let floor = b.text("roof-floor").await;
    let sentence = b.text("roof-floor-sentence").await;
    println!("roofline floor: {floor} — {sentence}");
    assert!(
        sentence.contains("this speed") && sentence.contains("dispatches ×"),
        "{sentence}"
    );
    // The calculator's fixed cost is the engine's, so its ceiling is the floor's rate.
    let overhead: f64 = b.value("roof-overhead").await.parse().unwrap();
    assert!(overhead > 0.0, "{overhead}");
    let (ceiling, floor_rate) = (
        b.text("roof-tok-s").await.parse::<f64>().unwrap(),
        floor.split(' ').next().unwrap().parse::<f64>().unwrap(),
    );
    assert!(
        (ceiling - floor_rate).abs() <= 0.2 + 0.01 * floor_rate,
        "{ceiling} vs {floor}"
    );
    let adapter = b.text("speed-adapter").await;
    let num = |s: String| s.trim().parse::<f64>().unwrap_or(f64::NAN);
    let (gb_s, tok_s) = (num(b.text("speed-gbs").await), num(b.text("speed-tok-s").await));
    println!(
        "page speed check on {adapter}: {gb_s} GB/s, {tok_s} tok/s, MBU {}",
        b.text("speed-mbu").await,
    );
    assert!(adapter.starts_with("WebGPU"), "{adapter}");
    assert!(b.text("speed-mbu").await.ends_with('%'));
    // The floor model from the probe's figures and the engine's dispatches, with its sentence.
    let floor = b.text("speed-floor").await;
    assert!(
        floor.contains(" tok/s: ") && floor.contains("ms of fixed cost"),
        "{floor}"
    );
    let sentence = b.text("speed-floor-sentence").await;
    assert!(
        sentence.contains("this speed") && sentence.contains("Measured: "),
        "{sentence}"
    );
    // A native completion is no timer: the verdict does not blame a tick.
    assert!(!sentence.contains("completion tick"), "{sentence}");
    assert!(!b.text("speed-placement").await.is_empty());
    let icd = adapter
        .to_lowercase()
        .contains("swiftshader")
        .then_some(SWIFTSHADER_ICD);
    probe_agrees_with_native(&b, "Chromium", icd).await;
    // Where the native probe disagreed twice the check ran again: the card's figures now.
    let (gb_s, tok_s) = (num(b.text("speed-gbs").await), num(b.text("speed-tok-s").await));
    let floor = b.text("speed-floor").await;
    let model = format!("public/{MODEL}");
    let bench = tokscope(
        &[
            "bench",
            "--model",
            &model,
            "--backend",
            "gpu",
            // Few tokens: on SwiftShader each takes about 2 s (the page's check stops after 20 s).
            "--tokens",
            "8",
            "--runs",
            "3",
            "--prompt-tokens",
            "16",
            "--json",
        ],
        icd,
    );
    let native_tok_s = json_field(&bench, "decode_tok_s");
    println!("native bench on the same driver: {native_tok_s:.2} tok/s");
    let ratio = tok_s / native_tok_s;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "tok/s: page {tok_s} vs native {native_tok_s} (ratio {ratio:.2})"
    );
    b.click("speed-copy-markdown").await;
    b.wait_for(&present("speed-markdown"), WAIT).await.unwrap();
    let md = b.value("speed-markdown").await;
    assert!(
        md.contains("| Read bandwidth (probe) |")
            && md.contains(&adapter)
            && md.contains(" tok/s over ")
            && md.contains("| Floor model |"),
        "{md}"
    );
    b.screenshot(&screenshot_path("speed-check.png")).await.unwrap();
    b.click("copy-link-speed").await;
    b.wait_for(&present("shared-speed"), WAIT).await.unwrap();
    let link = b.value("shared-speed").await;
    assert_eq!(b.page_errors().await.len(), 0, "{:?}", b.page_errors().await);
    b.client.goto("about:blank").await.unwrap();
    b.client.goto(&link).await.unwrap();
    b.wait_for(&present("speed-shared"), WAIT).await.unwrap();
    assert_eq!(b.text("speed-adapter").await, adapter);
    assert_eq!(num(b.text("speed-gbs").await), gb_s);
    assert_eq!(b.text("speed-floor").await, floor);
    b.close().await;
}

/// Every calculator panel fits a 360 px phone: no sideways scrolling.
#[tokio::test]
async fn the_panels_fit_a_360_px_phone() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 360, 800).await.unwrap();
    for (route, testid, shot) in [
        (
            "#/embed/roofline?device=h200&batch=64&context=8192",
            "roof-tok-s",
            "mobile-360-roofline.png",
        ),
        (
            "#/embed/agent?preset=coding&speeds=30,300,mercury-3",
            "agent-total-2",
            "mobile-360-agent.png",
        ),
    ] {
        b.client.goto(&server.url(&format!("index.html{route}"))).await.unwrap();
        b.wait_for(&present(testid), WAIT).await.unwrap();
        b.assert_no_sideways_scroll(&format!("{route} at 360 px")).await;
        b.screenshot(&screenshot_path(shot)).await.unwrap();
    }
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// The precision dial in the page (on the CPU engine, the quick path here): the model is
/// re-encoded at every precision, each decoded, bytes per token rise along the dial, and the
/// file's own encoding comes back at the end.
#[tokio::test]
async fn the_precision_dial_reencodes_decodes_and_restores() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url(
            "index.html?backend=cpu&prompt=Hello&max_tokens=16&temperature=0&autorun=1#/speed?model_preset=loaded",
        ))
        .await
        .unwrap();
    b.wait_for(site::DONE, Duration::from_secs(240)).await.unwrap();
    b.wait_for(
        "!document.querySelector('[data-testid=dial-run]').disabled",
        Duration::from_secs(240),
    )
    .await
    .unwrap();
    let bytes_before = b
        .eval("return document.querySelector('[data-testid=roof-bytes]').textContent;")
        .await;
    let you = "return document.querySelector('[data-testid=roof-chart] .pt-decode text').textContent;";
    let you_before = b.eval(you).await;
    b.click("dial-run").await;
    // While the dial runs, no other run can start, and each button says why.
    b.wait_for(&site::text_starts("dial-stage", "Decoding"), WAIT)
        .await
        .unwrap();
    for (button, why) in [
        ("generate", "generate-why"),
        ("speed-run", "speed-why"),
        ("batch-run", "batch-why"),
    ] {
        let disabled = b
            .eval(&format!(
                "return document.querySelector('[data-testid={button}]').disabled;"
            ))
            .await;
        assert_eq!(disabled, true, "{button} while the dial runs");
        assert_eq!(b.text(why).await, "waiting: the precision dial is running");
    }
    b.wait_for(&text_is("dial-stage", "Done."), Duration::from_secs(600))
        .await
        .unwrap();
    let rows = b
        .eval("return [...document.querySelectorAll('[data-testid^=dial-row-]')].map(r => [...r.children].map(c => c.textContent));")
        .await;
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    println!("precision dial in the page (CPU engine): {rows:?}");
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    // Fewest bytes first. SmolLM2's 576-wide rows are not whole super-blocks, so its K-quant
    // points are mostly llama.cpp's stand-ins (Q5_0 for Q4_K, Q8_0 for Q6_K).
    assert_eq!(
        names,
        ["Q4_0", "Q4_1", "Q4_K", "Q6_K", "Q8_0", "F16", "F32"],
        "skipped: {:?}",
        b.text("dial-skipped").await
    );
    let mb: Vec<f64> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert!(mb.windows(2).all(|w| w[0] < w[1]), "{mb:?}");
    assert!(rows.iter().all(|r| r[2].parse::<f64>().unwrap() > 0.0));
    let circles = b
        .eval("return document.querySelectorAll('[data-testid=dial-chart] circle').length;")
        .await;
    assert_eq!(circles, 7);
    // Back to the file's encoding: the same bytes per token as before the dial.
    b.wait_for(
        "document.querySelector('[data-testid=status]').textContent.startsWith('Ready')",
        WAIT,
    )
    .await
    .unwrap();
    let bytes_after = b
        .eval("return document.querySelector('[data-testid=roof-bytes]').textContent;")
        .await;
    assert_eq!(bytes_before, bytes_after);
    // The roofline's "you" is still the generated run, at the file's own encoding: no dial
    // point (F32 last) paired with the restored file's bytes.
    assert_eq!(b.eval(you).await, you_before);
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path("precision-dial.png")).await.unwrap();
    b.close().await;
}

/// The run panel embedded: inputs from the fragment, the engine runs, no site chrome.
#[tokio::test]
async fn the_run_embed_generates_from_its_url_without_site_chrome() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 700, 900).await.unwrap();
    b.client
        .goto(
            &server.url(
                "index.html#/embed/run?prompt=The%20capital%20of%20France%20is&max_tokens=8&temperature=0&autorun=1",
            ),
        )
        .await
        .unwrap();
    let done = "document.querySelector('[data-testid=status]').textContent.startsWith('Done')";
    b.wait_for(done, Duration::from_secs(240)).await.unwrap();
    assert!(!b.text("output").await.is_empty());
    assert_eq!(b.value("prompt").await, "The capital of France is");
    assert!(b.eval("return document.querySelector('h1') === null && document.querySelector('[data-testid=embed-run]') !== null;").await.as_bool().unwrap());
    assert!(b.text("tok-s-mean").await.trim().parse::<f64>().unwrap() > 0.0);
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

/// The batch dial in the page: per-user and aggregate rates for B = 1…16 on the CPU engine,
/// aggregate = B × per-user.
#[tokio::test]
async fn the_batch_dial_shows_per_user_and_aggregate_rates() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url("index.html?backend=cpu#/speed"))
        .await
        .unwrap();
    b.wait_for(
        "!document.querySelector('[data-testid=batch-run]').disabled",
        Duration::from_secs(240),
    )
    .await
    .unwrap();
    b.click("batch-run").await;
    b.wait_for(&present("batch-row-16"), Duration::from_secs(600))
        .await
        .unwrap();
    let num = |s: String| s.trim().parse::<f64>().unwrap();
    let mut rows = vec![];
    for batch in [1, 2, 4, 8, 16] {
        let (user, all) = (
            num(b.text(&format!("batch-user-{batch}")).await),
            num(b.text(&format!("batch-all-{batch}")).await),
        );
        assert!(
            (all - user * batch as f64).abs() <= 0.05 * batch as f64 + 0.1,
            "B={batch}: {user} × {batch} vs {all}"
        );
        rows.push((batch, user, all));
    }
    println!("batch dial in the page (CPU engine): {rows:?}");
    let engine = b.text("batch-backend").await;
    assert!(engine.contains("CPU"), "the dial names its engine: {engine}");
    // No claim about the shape: on the wasm CPU engine decode is compute-bound, so the
    // aggregate stays nearly flat (the lesson's bandwidth-bound case needs the GPU's batch).
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
