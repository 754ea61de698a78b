//! axe-core in the page: the routes every accessibility check visits, the pinned axe-core
//! source (npm, installed by scripts/setup.sh --test) and its WCAG 2.0/2.1 A and AA violations.

use crate::browser::Browser;
use crate::site::{READY, root};
use serde_json::Value;

/// The routes and what shows that each is drawn (a model is ready, or the panel's figure).
pub const ROUTES: [(&str, &str); 8] = [
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

pub fn axe_source() -> String {
    let path = root().join("target/npm/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: scripts/setup.sh --test installs axe-core", path.display()))
}

/// axe-core's violations of WCAG 2.0/2.1 A and AA on the current page, one line each.
pub async fn violations(b: &Browser, axe: &str) -> Vec<String> {
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
