//! The guided path's links: each step's own address opens that step, Next and Back move in
//! place (the browser's Back too), and a step past the end is named. (The figures each step
//! quotes are checked in Chromium: guide.rs.)

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{present, text_starts};

const WAIT: Duration = Duration::from_secs(120);

async fn at_step(b: &Browser, n: usize) {
    b.wait_for(&text_starts("lesson-title", &format!("Step {n} of 7")), WAIT)
        .await
        .unwrap();
    let current = b
        .eval("return document.querySelector('[aria-current=step]').dataset.testid;")
        .await;
    assert_eq!(current, format!("guide-step-{n}"));
    assert_eq!(b.eval("return location.hash;").await, format!("#/guide/{n}"));
}

pub async fn every_steps_link_and_next_and_back(b: &Browser, server: &Server) {
    for n in 1..=7 {
        b.goto(&server.url(&format!("index.html?backend=cpu#/guide/{n}"))).await;
        at_step(b, n).await;
    }
    // From step 7 back to 5 and forward again, on the same page.
    b.eval("window.__same_page = true; return null;").await;
    b.press("guide-back").await;
    at_step(b, 6).await;
    b.press("guide-back").await;
    at_step(b, 5).await;
    b.client.back().await.unwrap();
    at_step(b, 6).await;
    b.press("guide-next").await;
    at_step(b, 7).await;
    assert_eq!(
        b.eval("return window.__same_page === true;").await,
        true,
        "a step reloaded the page"
    );
    b.goto(&server.url("index.html#/guide/9")).await;
    b.wait_for(&present("notice"), WAIT).await.unwrap();
    assert!(b.text("notice").await.contains("the guided path has steps 1 to 7"));
    assert_eq!(b.page_errors().await, Vec::<String>::new());
}
