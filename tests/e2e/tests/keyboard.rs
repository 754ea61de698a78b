//! The page by keyboard alone, in headless Chromium: Tab reaches every control a mouse can use
//! (links, buttons, fields, sliders, pickers, disclosure summaries, scrollable tables), each
//! with a visible focus ring, and the model runs from the keyboard (Enter on Generate). Labels
//! on every input are axe-core's `label` rule (tests/accessibility.rs).

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, READY, serve_dist};

const WAIT: Duration = Duration::from_secs(240);
const TAB: char = '\u{E004}';
const ENTER: char = '\u{E007}';

/// Presses one key where the focus is, as a person would (WebDriver key actions: a key sent to
/// an element would type into it, or name a file to a file input).
async fn press(b: &Browser, key: char) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
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

#[tokio::test]
async fn tab_reaches_every_control_with_a_visible_focus_and_enter_runs_the_model() {
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    b.client
        .goto(&server.url("index.html?backend=cpu&max_tokens=8&temperature=0"))
        .await
        .unwrap();
    b.wait_for(READY, WAIT).await.unwrap();
    let names: Vec<String> = serde_json::from_value(b.eval(MARK_CONTROLS).await).unwrap();
    assert!(names.len() > 40, "too few controls found: {names:?}");

    let mut reached = vec![false; names.len()];
    let mut no_ring = vec![];
    let mut generate_at = None;
    for presses in 0..names.len() + 40 {
        press(&b, TAB).await;
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
    println!("Tab reached all {} controls, each with a focus ring", names.len());

    // Operable: back to Generate by Tab alone, then Enter runs the model.
    assert!(generate_at.is_some(), "Generate was never focused");
    for _ in 0..names.len() + 5 {
        let name = b.eval("return document.activeElement?.dataset.testid ?? null;").await;
        if name == "generate" {
            break;
        }
        press(&b, TAB).await;
    }
    assert_eq!(
        b.eval("return document.activeElement?.dataset.testid ?? null;").await,
        "generate"
    );
    press(&b, ENTER).await;
    b.wait_for(DONE, WAIT).await.unwrap();
    assert_eq!(b.text("generated").await, "8");
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
