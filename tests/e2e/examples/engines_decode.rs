//! The page's wasm CPU engine in the three browser engines, side by side in one run: rounds of
//! Chromium, Firefox and WebKitGTK in turn (so a noisy minute on this shared machine hits each),
//! each a greedy decode of the same prompt and model, the second of two runs counted. Prints each
//! engine's decode and prefill tok/s per round, then the median and each engine ÷ Chromium.
//!
//!     cargo run -p tokscope-e2e --example engines_decode -- [ROUNDS] [MODEL] [--route '#/embed/run']
//!
//! MODEL is a path under dist/ (default: the default model); `--route` opens the page at that
//! fragment (the whole page by default: a panel alone shows what the other panels' drawing costs). Needs the built page (`cargo xtask
//! build-web`) and the three browsers (`scripts/setup.sh --test`).

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::{Engine, Options};
use tokscope_e2e::site::{DONE, MODEL, READY, serve_dist, url_encode};

const TOKENS: usize = 64;
const PROMPT: &str = "The history of the printing press";
const TIMEOUT: Duration = Duration::from_secs(600);

/// (decode tok/s, prefill tok/s) of the second of two greedy runs in a fresh browser.
async fn decode(engine: Engine, server: &tokscope_e2e::server::Server, model: &str, route: &str) -> (f64, f64) {
    let opts = Options {
        webgpu: false,
        width: 1280,
        height: 900,
    };
    let b = Browser::open(engine, opts).await.unwrap();
    let url = server.url(&format!(
        "index.html?prompt={}&max_tokens={TOKENS}&temperature=0&ignore_eos=1&backend=cpu&model={}{route}",
        url_encode(PROMPT),
        url_encode(model)
    ));
    b.client.goto(&url).await.unwrap();
    b.wait_for(READY, TIMEOUT).await.unwrap();
    for _ in 0..2 {
        b.click("generate").await;
        b.wait_for("document.querySelector('[data-testid=generate]').disabled", TIMEOUT)
            .await
            .ok();
        b.wait_for(DONE, TIMEOUT).await.unwrap();
    }
    let num = |s: String| s.trim().parse::<f64>().unwrap_or(f64::NAN);
    let rates = (num(b.text("tok-s-mean").await), num(b.text("prefill-tok-s").await));
    b.close().await;
    rates
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let route = match args.iter().position(|a| a == "--route") {
        Some(i) => {
            let r = args.get(i + 1).cloned().unwrap_or_default();
            args.drain(i..(i + 2).min(args.len()));
            r
        }
        None => String::new(),
    };
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    let model = args.get(1).cloned().unwrap_or_else(|| MODEL.to_string());
    let server = serve_dist();
    let mut rates: Vec<Vec<(f64, f64)>> = vec![vec![]; Engine::ALL.len()];
    for round in 1..=rounds {
        for (i, engine) in Engine::ALL.into_iter().enumerate() {
            let r = decode(engine, &server, &model, &route).await;
            println!(
                "round {round}: {:<8} decode {:>6.1} tok/s, prefill {:>6.1} tok/s",
                engine.name(),
                r.0,
                r.1
            );
            rates[i].push(r);
        }
    }
    let page = if route.is_empty() { "the whole page" } else { &route };
    println!("{model}, {TOKENS} greedy tokens, wasm CPU engine, {page}, median of {rounds} rounds:");
    println!("engine     decode tok/s  ÷ Chromium   prefill tok/s  ÷ Chromium");
    let med = |i: usize, f: fn(&(f64, f64)) -> f64| median(rates[i].iter().map(f).collect());
    for (i, engine) in Engine::ALL.into_iter().enumerate() {
        let (d, p) = (med(i, |r| r.0), med(i, |r| r.1));
        println!(
            "{:<10} {d:>12.1} {:>11.2} {p:>15.1} {:>11.2}",
            engine.name(),
            d / med(0, |r| r.0),
            p / med(0, |r| r.1)
        );
    }
}
