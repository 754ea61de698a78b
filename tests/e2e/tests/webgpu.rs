//! WebGPU in the two engines that offer it here (issue #30): Chromium on SwiftShader
//! (`--enable-unsafe-webgpu`) and Firefox on lavapipe (the `dom.webgpu.enabled` pref; Firefox's
//! wgpu over Mesa's Vulkan). In each, the playground's WebGPU text equals the CLI's `--backend
//! gpu` text on the same Vulkan driver, a reload takes the model from the cache, and the speed
//! check produces its card (Chromium's: panels.rs). Each engine prints its time.

use std::time::{Duration, Instant};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::{Engine, Options};
use tokscope_e2e::site::{
    DONE, LAVAPIPE_ICD, MODEL, SWIFTSHADER_ICD, cli_greedy, greedy_run_url, probe_agrees_with_native, report_time,
    screenshot_path, serve_dist, speed_check,
};

const TOKENS: usize = 32;
/// Loading and 32 tokens on a CPU-backed adapter, on 2 shared cores.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn number(s: &str) -> f64 {
    s.trim().parse().unwrap_or(f64::NAN)
}

async fn webgpu_runs_the_clis_gpu_text_and_the_speed_check(engine: Engine) {
    let _one = ONE_AT_A_TIME.lock().await;
    let start = Instant::now();
    let server = serve_dist();
    let b = Browser::open(
        engine,
        Options {
            webgpu: true,
            width: 1280,
            height: 900,
        },
    )
    .await
    .unwrap();
    b.client
        .goto(&greedy_run_url(&server, TOKENS, "&backend=gpu"))
        .await
        .unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    let badge = b.text("backend").await;
    assert!(
        badge.starts_with("WebGPU"),
        "backend badge: {badge:?}; notice: {:?}",
        b.text("notice").await
    );
    // GPU float sums run in another order than the CPU's, so near-ties may break differently:
    // the page's WebGPU text must equal the CLI's GPU text on the same driver.
    let icd = match engine {
        Engine::Firefox => LAVAPIPE_ICD,
        _ if badge.to_lowercase().contains("swiftshader") => SWIFTSHADER_ICD,
        _ => panic!("{}: an adapter with no native twin here: {badge}", engine.name()),
    };
    let expected = cli_greedy(MODEL, TOKENS, true, Some(icd));
    assert_eq!(
        b.text("output").await,
        expected,
        "the page's greedy text differs from the CLI's on {icd}; status {:?}",
        b.text("status").await
    );
    let tok_s = number(&b.text("tok-s").await);
    assert!(tok_s > 0.0, "tok/s shown: {tok_s}");
    assert!(number(&b.text("ttft").await) > 0.0);
    // Greedy steps chained on the GPU, and the meter says how its per-token times were taken.
    let chained = b.text("meter-chain").await;
    assert!(
        chained.contains("steps a submit: each token's time is its chunk's time ÷ its tokens"),
        "{chained}"
    );
    let phases = b
        .eval("return document.querySelector('[data-testid=model]').dataset.phases;")
        .await;
    let phases = phases.as_str().unwrap_or("");
    assert!(
        phases.contains("Download") && phases.contains("Upload"),
        "progress phases seen: {phases}"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    let name = engine.name().to_lowercase();
    b.screenshot(&screenshot_path(&format!("webgpu-{name}.png")))
        .await
        .unwrap();
    println!("{}: WebGPU decode {tok_s} tok/s ({badge})", engine.name());

    // A reload finds the model in the cache: no second download.
    assert_eq!(server.log.count(".gguf"), 1, "requests: {:?}", server.log.all());
    b.client.refresh().await.unwrap();
    b.wait_for(DONE, RUN_TIMEOUT).await.unwrap();
    assert_eq!(server.log.count(".gguf"), 1, "the reload downloaded the model again");
    assert_eq!(b.text("output").await, expected);

    // The speed check: probe and a decode, then its card. Chromium's card is checked, against
    // the native probe and bench on SwiftShader, in panels.rs (one speed check there serves the
    // roofline's floor too: each takes a minute on SwiftShader).
    if engine != Engine::Chromium {
        // Firefox learns of finished GPU work on a 100 ms timer. The engine measured that tick
        // when it was made and nudges the queue while it waits (an empty submit every 2 ms):
        // the badge says so, with the tick it nudged past.
        let completion = b
            .eval("return document.querySelector('[data-testid=backend]').title;")
            .await;
        let completion = completion.as_str().unwrap_or("");
        println!("{}: {completion}", engine.name());
        assert!(
            completion.contains("nudged by an empty submit every 2 ms (without: ")
                && completion.contains("a timer's tick, not the GPU)"),
            "{completion}"
        );
        // Firefox calls its lavapipe a fallback adapter: the kernels are shaped for a CPU.
        assert!(
            completion.ends_with("kernels shaped for a CPU-backed adapter (a fallback adapter)"),
            "{completion}"
        );
        // The speed check with the nudge off (`nudge=0`) and a step a submit (`chain=0`): the
        // probe sees through the tick to the device (the native probe on lavapipe, Firefox's
        // driver here), names the tick, and the verdict blames the tick, not the bandwidth.
        // (Chained, the tick's wait is shared by a chunk's steps: the floor model says so.)
        speed_check(&b, &server.url("index.html?backend=gpu&nudge=0&chain=0#/speed")).await;
        let card: Vec<String> = texts(&b, &["speed-adapter", "speed-gbs", "speed-tok-s", "speed-mbu"]).await;
        println!("{}: speed card {card:?}", engine.name());
        assert!(card[0].starts_with("WebGPU"), "{card:?}");
        assert!(number(&card[1]) > 0.0 && number(&card[2]) > 0.0, "{card:?}");
        assert!(card[3].ends_with('%'), "{card:?}");
        probe_agrees_with_native(&b, engine.name(), Some(LAVAPIPE_ICD)).await;
        let latency = b.text("speed-latency").await;
        assert!(
            latency.contains("a timer's tick") && !latency.contains("nudged"),
            "{latency}"
        );
        let verdict = b.text("speed-floor-sentence").await;
        println!("{}: {verdict}", engine.name());
        assert!(
            verdict.starts_with("The browser's completion tick sets this speed"),
            "{verdict}"
        );
        b.screenshot(&screenshot_path(&format!("speed-check-{name}.png")))
            .await
            .unwrap();
    }
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
    report_time(&format!(
        "{}: WebGPU (webgpu.rs) in {:.0} s",
        engine.name(),
        start.elapsed().as_secs_f64()
    ));
}

/// The texts of these elements, in order.
async fn texts(b: &Browser, testids: &[&str]) -> Vec<String> {
    let mut out = vec![];
    for t in testids {
        out.push(b.text(t).await);
    }
    out
}

#[tokio::test]
async fn chromium() {
    webgpu_runs_the_clis_gpu_text_and_the_speed_check(Engine::Chromium).await;
}

#[tokio::test]
async fn firefox() {
    webgpu_runs_the_clis_gpu_text_and_the_speed_check(Engine::Firefox).await;
}
