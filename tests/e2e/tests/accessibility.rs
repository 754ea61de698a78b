//! Accessibility in headless Chromium: axe-core (npm, pinned by scripts/setup.sh --test) finds no
//! WCAG 2.1 level A or AA violation on the whole page (with a model loaded) or on any embed, in
//! the light and the dark theme; nothing scrolls sideways at 360 px. Screenshots of the dark
//! theme land in `target/e2e/`.

use serde_json::{Value, json};
use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{READY, root, screenshot_path, serve_dist};

const WAIT: Duration = Duration::from_secs(240);
/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The routes and what shows that each is drawn (a model is ready, or the panel's figure).
const ROUTES: [(&str, &str); 8] = [
    ("index.html?backend=cpu", READY),
    ("index.html?backend=cpu#/guide/1", READY),
    ("index.html?backend=cpu#/guide/4", READY),
    ("index.html?backend=cpu#/embed/run", READY),
    (
        "index.html#/embed/roofline",
        "document.querySelector('[data-testid=roof-tok-s]') !== null",
    ),
    (
        "index.html#/embed/agent",
        "document.querySelector('[data-testid=agent-total-0]') !== null",
    ),
    ("index.html?backend=cpu#/embed/speed", READY),
    (
        "index.html#/embed/tokens",
        "document.querySelector('[data-testid=tok-chips] li') !== null",
    ),
];

fn axe_source() -> String {
    let path = root().join("target/npm/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: scripts/setup.sh --test installs axe-core", path.display()))
}

/// axe-core's violations of WCAG 2.0/2.1 A and AA on the current page, one line each.
async fn violations(b: &Browser, axe: &str) -> Vec<String> {
    b.eval(&format!("{axe}\nreturn null;")).await;
    let found = b
        .eval(
            "return axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })\
             .then(r => r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + \
             v.nodes.slice(0, 4).map(n => n.target.join(' ')).join(', ')));",
        )
        .await;
    match found {
        Value::Array(v) => v.iter().map(|s| s.as_str().unwrap_or_default().to_string()).collect(),
        other => vec![format!("axe did not run: {other}")],
    }
}

async fn check_every_route(b: &Browser, theme: &str, shots: bool) -> Vec<String> {
    let server = serve_dist();
    let axe = axe_source();
    let mut problems = Vec::new();
    for (route, drawn) in ROUTES {
        b.client.goto(&server.url(route)).await.unwrap();
        b.wait_for(drawn, WAIT).await.unwrap();
        for v in violations(b, &axe).await {
            problems.push(format!("{theme} {route}: {v}"));
        }
        if shots {
            let name = route
                .rsplit(['/', '#'])
                .next()
                .unwrap_or("page")
                .replace(['?', '=', '.'], "-");
            b.screenshot(&screenshot_path(&format!("dark-{name}.png")))
                .await
                .unwrap();
        }
    }
    problems
}

#[tokio::test]
async fn axe_finds_no_wcag_a_or_aa_violation_on_any_route_in_either_theme() {
    let _one = ONE_AT_A_TIME.lock().await;
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    let mut problems = check_every_route(&b, "light", false).await;
    b.cdp(
        "Emulation.setEmulatedMedia",
        json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
    )
    .await
    .unwrap();
    problems.extend(check_every_route(&b, "dark", true).await);
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
