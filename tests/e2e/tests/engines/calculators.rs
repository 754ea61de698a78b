//! The calculators as an article embeds them: the roofline and agent panels read their inputs
//! from the URL, redraw on edits, keep their last valid state on bad input and round-trip
//! through "copy link"; the example article from another origin sizes its frames from the
//! heights the panels post.

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{TOKENIZED, present, screenshot_path, serve_dist, text_is};

const WAIT: Duration = Duration::from_secs(60);

/// A screenshot's file name for this engine.
fn shot(name: &str, b: &Browser) -> String {
    format!("{name}-{}.png", b.engine.name().to_lowercase())
}

/// The roofline embed reads its inputs from the URL, redraws on edits and keeps its last valid
/// state on bad input, downloading no model.
pub async fn roofline_embed_reads_the_url_and_keeps_its_last_valid_state(b: &Browser, server: &Server) {
    let downloads = server.log.count(".gguf");
    b.goto(&server.url("index.html#/embed/roofline?model_preset=llama-3.1-8b-16&bandwidth=1000"))
        .await;
    b.wait_for(&present("roof-tok-s"), WAIT).await.unwrap();
    // DESIGN.md's worked example: 16.06 GB a token on 1 TB/s.
    assert_eq!(b.text("roof-tok-s").await, "62.3");
    assert_eq!(b.text("roof-bytes").await, "16.06 GB");
    assert_eq!(b.text("roof-bound").await, "memory");
    let chart0 = b
        .eval("return document.querySelector('[data-testid=roof-chart]').dataset.roof;")
        .await;

    // 8-bit doubles the ceiling; the chart's point moves but the roof stays (same device).
    b.set("roof-model", "llama-3.1-8b-8").await;
    b.wait_for(&text_is("roof-tok-s", "124.5"), WAIT).await.unwrap();
    b.set("roof-bandwidth", "2000").await;
    b.wait_for(&text_is("roof-tok-s", "249.1"), WAIT).await.unwrap();
    let chart1 = b
        .eval("return document.querySelector('[data-testid=roof-chart]').dataset.roof;")
        .await;
    assert_ne!(chart0, chart1, "the roof did not redraw for a new bandwidth");

    // Bad input: a message by the field, every figure and the chart as they were.
    for bad in ["-5", "", "abc", "1e12"] {
        b.set("roof-bandwidth", bad).await;
        b.wait_for(
            "document.querySelector('[data-testid=\"roof-bandwidth-error\"]').textContent.length > 0",
            WAIT,
        )
        .await
        .unwrap();
        assert_eq!(b.text("roof-tok-s").await, "249.1", "after {bad:?}");
        let chart = b
            .eval("return document.querySelector('[data-testid=roof-chart]').dataset.roof;")
            .await;
        assert_eq!(chart, chart1, "the chart changed after {bad:?}");
    }
    b.set("roof-bandwidth", "-5").await;
    b.wait_for(
        &text_is("roof-bandwidth-error", "bandwidth: must be more than zero, got -5"),
        WAIT,
    )
    .await
    .unwrap();
    b.set("roof-bandwidth", "3350").await;
    b.wait_for(&text_is("roof-bandwidth-error", ""), WAIT).await.unwrap();

    // A big batch on an H100 becomes compute-bound; the KV cache shows in the byte split.
    b.set("roof-device", "h100-sxm").await;
    b.set("roof-batch", "512").await;
    b.wait_for(&text_is("roof-bound", "compute"), WAIT).await.unwrap();
    b.set("roof-context", "4096").await;
    b.wait_for(
        "document.querySelector('[data-testid=roof-kv]').textContent.endsWith('GB')",
        WAIT,
    )
    .await
    .unwrap();
    // No engine for a calculator: nothing downloaded.
    assert_eq!(server.log.count(".gguf"), downloads, "requests: {:?}", server.log.all());
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path(&shot("embed-roofline", b)))
        .await
        .unwrap();
}

/// The agent embed shows the seed's example (12 steps × 800 tokens at 30 and 300 tok/s), and
/// its state round-trips through "copy link" and "copy embed code".
pub async fn agent_embed_shows_the_seeds_example_and_copy_link_round_trips(b: &Browser, server: &Server) {
    b.goto(&server.url("index.html#/embed/agent?steps=12&tokens=800&speeds=30,300"))
        .await;
    b.wait_for(&present("agent-total-1"), WAIT).await.unwrap();
    assert_eq!(b.text("agent-total-0").await, "5 min 20 s");
    assert_eq!(b.text("agent-total-1").await, "32 s");
    assert_eq!(
        b.text("agent-sentence-0").await,
        "At 30 tok/s, 12 steps of 800 tokens (9,600 in all) take 5 min 20 s, 100 % of it decoding."
    );
    // Rows: two speeds and the reading pace.
    let rows = b
        .eval("return document.querySelectorAll('[data-testid=agent-chart] g.row').length;")
        .await;
    assert_eq!(rows, 3);

    // Edit, copy the link, open it: the same state.
    b.set("agent-steps", "6").await;
    b.set("agent-tool-s", "2.5").await;
    b.set("agent-speeds", "30, 300, clover-h200").await;
    b.wait_for(&present("agent-total-2"), WAIT).await.unwrap();
    // 6 × 800 / 30 = 160 s, plus 5 tool calls of 2.5 s.
    assert_eq!(b.text("agent-total-0").await, "2 min 53 s");
    b.click("copy-link-agent").await;
    b.wait_for(&present("shared-agent"), WAIT).await.unwrap();
    let link = b.value("shared-agent").await;
    assert!(link.contains("#/agent?") && link.contains("steps=6"), "{link}");
    b.goto(&link).await;
    b.wait_for(&present("agent-total-2"), WAIT).await.unwrap();
    assert_eq!(b.value("agent-steps").await, "6");
    assert_eq!(b.value("agent-tool-s").await, "2.5");
    assert_eq!(b.text("agent-total-0").await, "2 min 53 s");
    assert_eq!(b.text("agent-speed-2").await, "Clover 35B on H200 (claim)");
    // The embed code names the panel's own embed route with the same state.
    b.click("copy-embed-agent").await;
    b.wait_for(
        "document.querySelector('[data-testid=shared-agent]').value.startsWith('<iframe')",
        WAIT,
    )
    .await
    .unwrap();
    let code = b.value("shared-agent").await;
    assert!(code.contains("#/embed/agent?") && code.contains("steps=6"), "{code}");

    // Bad input is named and changes nothing.
    b.set("agent-steps", "0").await;
    b.wait_for(
        &text_is("agent-steps-error", "steps: must be between 1 and 100000, got 0"),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(b.text("agent-total-0").await, "2 min 53 s");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path(&shot("agent-full-page", b)))
        .await
        .unwrap();
}

/// web/embed-example.html, served from another origin than the app, embeds three panels and
/// sizes each frame from the height it posts.
pub async fn the_example_article_embeds_three_panels_cross_origin(b: &Browser) {
    let app = serve_dist();
    let article = serve_dist(); // another port: another origin
    let url = article.url(&format!("embed-example.html?app={}", app.url("")));
    b.goto(&url).await;
    b.wait_for(
        "window.__heights && ['agent', 'roofline', 'tokens'].every(p => window.__heights[p] > 100)",
        WAIT,
    )
    .await
    .unwrap();
    let heights = b
        .eval("return [...document.querySelectorAll('iframe')].map(f => parseInt(f.style.height));")
        .await;
    let h: Vec<i64> = serde_json::from_value(heights).unwrap();
    assert!(h.iter().all(|&x| x > 100), "iframe heights {h:?}");
    // The panels came from the app's origin, not the article's.
    assert!(
        app.log.count("index.html") + app.log.count("/") >= 2,
        "app requests: {:?}",
        app.log.all()
    );
    assert_eq!(
        article.log.count("tokscope-app"),
        0,
        "article requests: {:?}",
        article.log.all()
    );
    // Inside the agent frame: the figures of its URL.
    b.client.enter_frame(1).await.unwrap();
    b.wait_for(&present("agent-total-1"), WAIT).await.unwrap();
    assert_eq!(b.text("agent-total-0").await, "5 min 20 s");
    b.client.enter_parent_frame().await.unwrap();
    // The token view's frame read the vocabulary from the app's origin, by ranges only.
    b.client.enter_frame(2).await.unwrap();
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    b.client.enter_parent_frame().await.unwrap();
    assert!(app.log.count(".gguf") >= 1 && app.log.ranges(".gguf").len() == app.log.count(".gguf"));
    assert_eq!(article.log.count(".gguf"), 0);
    b.screenshot(&screenshot_path(&shot("embed-example", b))).await.unwrap();
}
