//! Accessibility in headless Chromium: axe-core (npm, pinned by scripts/setup.sh --test) finds no
//! WCAG 2.1 level A or AA violation on the whole page (with a model loaded) or on any embed in
//! the dark theme (set through DevTools; the light theme is checked in every engine:
//! engines/access.rs), and can find planted faults; nothing scrolls sideways at 360 px.
//! Screenshots of the dark theme land in `target/e2e/`.

use serde_json::json;
use std::time::Duration;
use tokscope_e2e::axe::{ROUTES, axe_source, violations};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{screenshot_path, serve_dist};

const WAIT: Duration = Duration::from_secs(240);
/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// axe's findings on every route, with a screenshot of each (`<theme>-<route>.png`).
async fn check_every_route(b: &Browser, theme: &str) -> Vec<String> {
    let server = serve_dist();
    let axe = axe_source();
    let mut problems = Vec::new();
    for (route, drawn) in ROUTES {
        b.client.goto(&server.url(route)).await.unwrap();
        b.wait_for(drawn, WAIT).await.unwrap();
        for v in violations(b, &axe).await {
            problems.push(format!("{theme} {route}: {v}"));
        }
        let name = route
            .rsplit(['/', '#'])
            .next()
            .unwrap_or("page")
            .replace(['?', '=', '.'], "-");
        b.screenshot(&screenshot_path(&format!("{theme}-{name}.png")))
            .await
            .unwrap();
    }
    problems
}

#[tokio::test]
async fn axe_finds_no_wcag_a_or_aa_violation_on_any_route_in_the_dark_theme() {
    let _one = ONE_AT_A_TIME.lock().await;
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    // The light theme (the default) runs in every engine: engines/access.rs.
    b.cdp(
        "Emulation.setEmulatedMedia",
        json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
    )
    .await
    .unwrap();
    let problems = check_every_route(&b, "dark").await;
    assert!(
        problems.is_empty(),
        "accessibility violations:\n{}",
        problems.join("\n")
    );
    // The check can fail: an unlabelled input and a low-contrast line added to the page are found.
    b.eval(
        "const i = document.createElement('input'); document.body.appendChild(i);\
         const p = document.createElement('p'); p.textContent = 'faint'; p.style.color = '#777';\
         p.style.background = '#888'; document.body.appendChild(p); return null;",
    )
    .await;
    let found = violations(&b, &axe_source()).await;
    println!("planted faults: {found:?}");
    assert!(found.iter().any(|v| v.starts_with("label")), "{found:?}");
    assert!(found.iter().any(|v| v.starts_with("color-contrast")), "{found:?}");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}

#[tokio::test]
async fn no_route_scrolls_sideways_at_360_px() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 360, 800).await.unwrap();
    for (route, drawn) in ROUTES {
        b.client.goto(&server.url(route)).await.unwrap();
        b.wait_for(drawn, WAIT).await.unwrap();
        b.assert_no_sideways_scroll(&format!("{route} at 360 px")).await;
    }
    b.screenshot(&screenshot_path("mobile-360-tokens.png")).await.unwrap();
    b.close().await;
}
