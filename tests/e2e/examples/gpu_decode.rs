//! The page's WebGPU decode in a browser against the native GPU engine on the same Vulkan
//! driver, side by side in one run (issue #32's proof): rounds of native `tokscope bench
//! --backend gpu`, the page nudged (the default) and the page with `nudge=0`, in turn, so a
//! noisy minute on this shared machine hits each. Prints each round's decode tok/s, then the
//! medians and each page ÷ native.
//!
//!     cargo run -p tokscope-e2e --example gpu_decode -- [ROUNDS] [firefox|chromium] [tiny|smollm2] [CHAIN]
//!
//! `CHAIN`: steps a submit for both (`auto`, the default; `0`: one step a submit, read back
//! each; or a number), as `tokscope bench --chain` and the page's `chain=` take it.
//! `tiny` is the synthetic tiny Q4_0 model (the page's `model=synthetic:tiny:Q4_0`, the same
//! bytes as `cargo xtask synth-model --shape tiny --type q4_0`); `smollm2` the default model.
//! Firefox's WebGPU and the native engine both run on lavapipe; Chromium's on SwiftShader.
//! Needs the built page (`cargo xtask build-web`) and the browsers (`scripts/setup.sh --test`).

use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::{Engine, Options};
use tokscope_e2e::site::{DONE, LAVAPIPE_ICD, MODEL, SWIFTSHADER_ICD, root, serve_dist, tokscope, url_encode};

const TOKENS: usize = 64;
const PROMPT: &str = "The history of the printing press";
const TIMEOUT: Duration = Duration::from_secs(900);

/// Decode tok/s of the second of two greedy runs of the page on WebGPU, and its latency line.
async fn page(
    engine: Engine,
    server: &tokscope_e2e::server::Server,
    model: &str,
    nudge: bool,
    chain: &str,
) -> (f64, String) {
    let b = Browser::open(
        engine,
        Options {
            webgpu: true,
            width: 1280,
            height: 900,
        },
    )
    .await
    .unwrap();
    let url = server.url(&format!(
        "index.html?prompt={}&max_tokens={TOKENS}&temperature=0&ignore_eos=1&backend=gpu&autorun=1&model={}{}&chain={chain}",
        url_encode(PROMPT),
        url_encode(model),
        if nudge { "" } else { "&nudge=0" }
    ));
    b.client.goto(&url).await.unwrap();
    b.wait_for(DONE, TIMEOUT).await.unwrap();
    b.click("generate").await;
    b.wait_for("document.querySelector('[data-testid=generate]').disabled", TIMEOUT)
        .await
        .ok();
    b.wait_for(DONE, TIMEOUT).await.unwrap();
    let badge = b.text("backend").await;
    assert!(badge.starts_with("WebGPU"), "{badge}: {}", b.text("notice").await);
    let rate = b.text("tok-s-mean").await.trim().parse::<f64>().unwrap_or(f64::NAN);
    let completion = b
        .eval("return document.querySelector('[data-testid=backend]').title;")
        .await;
    b.close().await;
    (rate, completion.as_str().unwrap_or("").to_string())
}

/// The native GPU engine's decode tok/s (bench's median of 3 runs).
fn native(model: &str, icd: &str, chain: &str) -> f64 {
    let out = tokscope(
        &[
            "bench",
            "--model",
            model,
            "--backend",
            "gpu",
            "--tokens",
            &TOKENS.to_string(),
            "--runs",
            "3",
            "--prompt-tokens",
            "8",
            "--json",
            "--chain",
            chain,
        ],
        Some(icd),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["decode_tok_s"].as_f64().unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    let engine = match args.get(1).map(String::as_str) {
        Some("chromium") => Engine::Chromium,
        _ => Engine::Firefox,
    };
    let icd = match engine {
        Engine::Chromium => SWIFTSHADER_ICD,
        _ => LAVAPIPE_ICD,
    };
    let tiny = args.get(2).map(String::as_str) != Some("smollm2");
    let chain = args.get(3).map_or("auto", String::as_str);
    let (page_model, native_model) = if tiny {
        let path = root().join("target/e2e/synthetic-tiny-q4_0.gguf");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let spec = tokscope_core::shaped::ShapeSpec::by_id("tiny").unwrap();
        let bytes = spec.build(tokscope_core::quant::GgmlType::Q4_0, 1).unwrap();
        std::fs::write(&path, bytes).unwrap();
        ("synthetic:tiny:Q4_0".to_string(), path.display().to_string())
    } else {
        (MODEL.to_string(), format!("public/{MODEL}"))
    };
    let server = serve_dist();
    let (mut nat, mut nudged, mut plain) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let n = native(&native_model, icd, chain);
        let (a, line) = page(engine, &server, &page_model, true, chain).await;
        let (b, plain_line) = page(engine, &server, &page_model, false, chain).await;
        println!(
            "round {round}: native {n:.1} tok/s; {} nudged {a:.1} ({line}); nudge=0 {b:.1} ({plain_line})",
            engine.name()
        );
        nat.push(n);
        nudged.push(a);
        plain.push(b);
    }
    let (n, a, b) = (median(nat), median(nudged), median(plain));
    println!(
        "{page_model}, {TOKENS} tokens, chain {chain}, medians of {rounds}: native {n:.1} tok/s; {} nudged {a:.1} ({:.2}×), nudge=0 {b:.1} ({:.2}×)",
        engine.name(),
        a / n,
        b / n
    );
}
