//! The page's answer to a full storage quota, in headless Chromium (the quota is set through
//! DevTools, which only chromedriver passes through). The rest of the bad-input table runs in
//! every engine: engines/bad_input.rs.

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, serve_dist};

const WAIT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn a_full_storage_quota_still_runs_the_model_and_says_so() {
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
