//! The guided path (`#/guide/N`) in headless Chromium: each of its seven steps renders its
//! sentence with the figures measured in the page (the run, the file, the probe, the dials),
//! and Next and Back move in place without losing them (the browser's Back too). Each step's
//! link runs in every engine: engines/guide.rs.

use std::time::Duration;
use tokio::sync::Mutex;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, READY, screenshot_path, serve_dist, text_is, text_starts};

const WAIT: Duration = Duration::from_secs(240);
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

async fn finding(b: &Browser) -> String {
    b.text("lesson-finding").await
}

/// Clicks Next (or Back) and waits for the step it leads to.
async fn step_to(b: &Browser, button: &str, n: usize) {
    b.click(button).await;
    b.wait_for(&text_starts("lesson-title", &format!("Step {n} of 7")), WAIT)
        .await
        .unwrap();
    assert_eq!(b.eval("return location.hash;").await, format!("#/guide/{n}"));
}

/// The path on the CPU engine: the run's rate, the file's bytes, the run's own traffic where
/// there is no probe, both dials, and the agent at the measured rate.
#[tokio::test]
async fn every_step_speaks_with_the_figures_measured_here() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url(
            "index.html?backend=cpu&prompt=Tell%20me%20about%20the%20sea.&max_tokens=24&temperature=0&autorun=1#/guide/1",
        ))
        .await
        .unwrap();
    b.wait_for(DONE, WAIT).await.unwrap();
    // Step 1: the rate the meter shows, in the same words as core's lesson::rate.
    let mean = b.text("tok-s-mean").await;
    let engine = b.text("backend").await;
    b.wait_for(&text_starts("lesson-finding", "Your device generated"), WAIT)
        .await
        .unwrap();
    let s = finding(&b).await;
    let tok_s: f64 = mean.trim().parse().unwrap();
    let tokens: usize = b.text("generated").await.parse().unwrap();
    // The meter's mean is over the timed tokens (all but the first); the sentence says so.
    assert!(
        s.contains(&format!("at {tok_s:.1} tok/s on ")),
        "{s} (meter {mean}, {tokens} tokens)"
    );
    assert!(s.contains(&engine) || s.contains("CPU"), "{s} ({engine})");
    // The page stays the same page from here on: no reload between steps.
    b.eval("window.__same_page = true; return null;").await;

    step_to(&b, "guide-next", 2).await;
    let s = finding(&b).await;
    assert!(
        s.to_lowercase().contains("smollm2") && s.contains("parameters") && s.contains("bits each"),
        "{s}"
    );
    assert!(
        s.contains("KV cache") && s.ends_with("a token, whatever the prompt says."),
        "{s}"
    );

    step_to(&b, "guide-next", 3).await;
    let s = finding(&b).await;
    assert!(
        s.starts_with("Without WebGPU there is no probe; your run itself moved"),
        "{s}"
    );
    assert!(s.contains(&format!("× {tok_s:.1} tok/s")), "{s}");

    step_to(&b, "guide-next", 4).await;
    assert!(finding(&b).await.starts_with("Needs a bandwidth measurement"));

    step_to(&b, "guide-next", 5).await;
    assert!(
        finding(&b)
            .await
            .starts_with("Not measured yet: run the precision dial")
    );
    b.click("dial-run").await;
    b.wait_for(&text_is("dial-stage", "Done."), Duration::from_secs(600))
        .await
        .unwrap();
    let s = finding(&b).await;
    assert!(s.starts_with("From Q4_0 (") && s.contains(") to F32 ("), "{s}");
    assert!(s.contains("× the bytes") && s.contains("your rate fell"), "{s}");
    b.wait_for(READY, WAIT).await.unwrap();

    step_to(&b, "guide-next", 6).await;
    b.click("batch-run").await;
    b.wait_for(
        &text_starts("lesson-finding", "16 sequences together"),
        Duration::from_secs(600),
    )
    .await
    .unwrap();
    let s = finding(&b).await;
    assert!(s.starts_with("16 sequences together decoded"), "{s}");
    let all_16 = b.text("batch-all-16").await;
    assert!(
        s.contains(&format!("→ {all_16} tok/s in all")),
        "{s} (aggregate {all_16})"
    );

    step_to(&b, "guide-next", 7).await;
    let s = finding(&b).await;
    // The agent panel's default loop: 12 steps × 800 tokens, at the step 1 rate (the dials'
    // decodes are not the model's own rate).
    assert!(
        s.contains("decodes 9,600 tokens") && s.contains(&format!("at your {tok_s:.1} tok/s")),
        "{s}"
    );
    assert!(
        b.eval("return document.querySelector('[data-testid=guide-next]') === null;")
            .await
            .as_bool()
            .unwrap()
    );

    // Back, and the browser's own Back, move in place too.
    step_to(&b, "guide-back", 6).await;
    b.client.back().await.unwrap();
    b.wait_for(&text_starts("lesson-title", "Step 7 of 7"), WAIT)
        .await
        .unwrap();
    assert_eq!(
        b.eval("return window.__same_page === true;").await,
        true,
        "a step reloaded the page"
    );
    b.screenshot(&screenshot_path("guide-7.png")).await.unwrap();
    assert_eq!(b.page_errors().await, Vec::<String>::new());

    b.close().await;
}

/// On WebGPU (SwiftShader here) the speed check's probe measures the bandwidth: step 3 says it
/// beside the run's traffic, and step 4 places the run under the ceiling with its MBU and its
/// fixed cost per token.
#[tokio::test]
async fn the_ceiling_step_uses_the_probe() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(true, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url("index.html?backend=gpu#/guide/3"))
        .await
        .unwrap();
    b.wait_for("!document.querySelector('[data-testid=speed-run]').disabled", WAIT)
        .await
        .unwrap();
    b.click("speed-run").await;
    b.wait_for(&text_is("speed-stage", "Done."), Duration::from_secs(300))
        .await
        .unwrap();
    let s = finding(&b).await;
    assert!(
        s.starts_with("This device reads memory at") && s.contains("Your run moved"),
        "{s}"
    );
    step_to(&b, "guide-next", 4).await;
    let s = finding(&b).await;
    println!("step 4 on SwiftShader: {s}");
    assert!(s.starts_with("Ceiling: ") && s.contains("(MBU)"), "{s}");
    let mbu: f64 = s
        .split(" % of it (MBU)")
        .next()
        .and_then(|head| head.rsplit(", ").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no MBU in {s}"));
    assert!(mbu > 0.0 && mbu <= 100.0, "{s}");
    assert!(
        s.contains("fixed cost per token") || s.contains("at the ceiling"),
        "{s}"
    );
    b.screenshot(&screenshot_path("guide-4.png")).await.unwrap();
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
