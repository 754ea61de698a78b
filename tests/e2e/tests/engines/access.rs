//! The page by keyboard alone and by axe-core: Tab reaches every control with a visible focus
//! ring and the model runs from the keyboard (WebDriver key actions, as a person presses keys);
//! axe-core (npm, pinned by scripts/setup.sh --test) finds no WCAG 2.1 level A or AA violation
//! on the main routes. (The dark theme, set through DevTools, is checked in Chromium:
//! accessibility.rs.)

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use std::time::Duration;
use tokscope_e2e::axe::{ROUTES, axe_source, violations};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{DONE, READY};

const WAIT: Duration = Duration::from_secs(240);

const TAB: char = '\u{E004}';
const ENTER: char = '\u{E007}';
const SHIFT: char = '\u{E008}';

/// Presses one key where the focus is, as a person would (WebDriver key actions: a key sent to
/// an element would type into it, or name a file to a file input).
async fn press(b: &Browser, key: char) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    b.client.perform_actions(keys).await.unwrap();
}

/// Shift+Tab: the focus moves back one control.
async fn press_back(b: &Browser) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: SHIFT })
        .then(KeyAction::Down { value: TAB })
        .then(KeyAction::Up { value: TAB })
        .then(KeyAction::Up { value: SHIFT });
    b.client.perform_actions(keys).await.unwrap();
}

/// Numbers every visible control (`data-kb`) and returns how many there are with a name each.
const MARK_CONTROLS: &str = r#"
const sel = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), ' +
            'textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';
const shown = el => el.checkVisibility({ visibilityProperty: true });
const all = [...document.querySelectorAll(sel)].filter(shown);
all.forEach((el, i) => el.dataset.kb = String(i));
return all.map(el => el.dataset.testid || el.id || el.getAttribute('aria-label') || el.textContent.trim().slice(0, 30) || el.tagName);
"#;

/// The focused control's number and whether its focus shows (an outline of some width).
const FOCUSED: &str = r#"
const el = document.activeElement;
if (!el || el === document.body) return null;
const st = getComputedStyle(el);
const ring = st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) > 0;
return [el.dataset.kb ?? null, ring, el.dataset.testid || el.id || el.tagName];
"#;

/// Tab reaches every control a mouse can use (links, buttons, fields, sliders, pickers,
/// disclosure summaries, scrollable tables), each with a visible focus ring, and Enter on
/// Generate runs the model.
pub async fn tab_reaches_every_control_and_enter_runs_the_model(b: &Browser, server: &Server) {
    b.goto(&server.url("index.html?backend=cpu&max_tokens=8&temperature=0"))
        .await;
    b.wait_for(READY, WAIT).await.unwrap();
    let names: Vec<String> = serde_json::from_value(b.eval(MARK_CONTROLS).await).unwrap();
    assert!(names.len() > 40, "too few controls found: {names:?}");

    let mut reached = vec![false; names.len()];
    let mut no_ring = vec![];
    let mut generate_at = None;
    for presses in 0..names.len() + 40 {
        press(b, TAB).await;
        let focused = b.eval(FOCUSED).await;
        let Some([kb, ring, name]) = focused.as_array().and_then(|a| <[_; 3]>::try_from(a.clone()).ok()) else {
            continue;
        };
        let name = name.as_str().unwrap_or_default().to_string();
        if ring != true {
            no_ring.push(name.clone());
        }
        if name == "generate" && generate_at.is_none() {
            generate_at = Some(presses);
        }
        if let Some(i) = kb.as_str().and_then(|k| k.parse::<usize>().ok()) {
            reached[i] = true;
        }
        if reached.iter().all(|r| *r) {
            break;
        }
    }
    let missed: Vec<&String> = names
        .iter()
        .zip(&reached)
        .filter(|(_, r)| !**r)
        .map(|(n, _)| n)
        .collect();
    assert!(missed.is_empty(), "Tab never reached: {missed:?}");
    assert!(no_ring.is_empty(), "focused without a visible ring: {no_ring:?}");
    println!(
        "{}: Tab reached all {} controls, each with a focus ring",
        b.engine.name(),
        names.len()
    );

    // Operable: back to Generate by Shift+Tab alone (forward past the last control, headless
    // Firefox's focus leaves for its own controls and comes back to the last one), then Enter
    // runs the model.
    assert!(generate_at.is_some(), "Generate was never focused");
    for _ in 0..2 * names.len() + 20 {
        let name = b.eval("return document.activeElement?.dataset.testid ?? null;").await;
        if name == "generate" {
            break;
        }
        press_back(b).await;
    }
    assert_eq!(
        b.eval("return document.activeElement?.dataset.testid ?? null;").await,
        "generate"
    );
    press(b, ENTER).await;
    b.wait_for(DONE, WAIT).await.unwrap();
    assert_eq!(b.text("generated").await, "8");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
}

/// axe-core on every route, light theme (the browser's default).
pub async fn axe_finds_no_wcag_a_or_aa_violation(b: &Browser, server: &Server) {
    let axe = axe_source();
    let mut problems = Vec::new();
    for (route, drawn) in ROUTES {
        b.goto(&server.url(route)).await;
        b.wait_for(drawn, WAIT).await.unwrap();
        for v in violations(b, &axe).await {
            problems.push(format!("{route}: {v}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{}: accessibility violations:\n{}",
        b.engine.name(),
        problems.join("\n")
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
}
