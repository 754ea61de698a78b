//! The token view beside a run, in headless Chromium: the decode meter's words per minute uses
//! the ratio measured on the generated text, and the page's token view shows the last run with
//! the loaded model's tokenizer. (The token view's own checks run in every engine: engines.rs.)

use std::time::Duration;
use tokio::sync::Mutex;
use tokscope_core::text_stats::{count_words, measured_words_per_token};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, TOKENIZED, screenshot_path, serve_dist};

const WAIT: Duration = Duration::from_secs(120);
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

#[tokio::test]
async fn the_meter_reads_words_per_minute_at_the_measured_ratio() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    let url =
        server.url("index.html?prompt=Write%20about%20the%20sea.&max_tokens=40&temperature=0&backend=cpu&autorun=1");
    b.client.goto(&url).await.unwrap();
    b.wait_for(DONE, Duration::from_secs(240)).await.unwrap();
    let output = b.text("output").await;
    let generated: usize = b.text("generated").await.parse().unwrap();
    let ratio = measured_words_per_token(count_words(&output), generated).expect("40 tokens are enough to measure");
    let line = b.text("wpm-ratio").await;
    println!("{generated} tokens, {output:?}: {line}");
    assert_eq!(line, format!(" at {ratio:.2} words a token, measured on this text."));
    // The whole page's token view uses the loaded model's tokenizer, and shows the last run.
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    assert!(b.text("tok-source").await.contains("(the loaded model)"));
    b.click("tok-last-run").await;
    b.wait_for(
        "document.querySelector('[data-testid=tok-input]').value.startsWith('Write about the sea.')",
        WAIT,
    )
    .await
    .unwrap();
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    let count: usize = b.text("tok-count").await.parse().unwrap();
    assert!(
        count > generated,
        "prompt and output: {count} tokens, {generated} generated"
    );
    assert_eq!(
        server.log.count(".gguf"),
        1,
        "the model once, no header reads beside it"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path("tokens-after-run.png")).await.unwrap();
    b.close().await;
}
