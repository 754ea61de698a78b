//! tokscope and wllama 3.8.1 (llama.cpp in WebAssembly) side by side in one headless Chromium,
//! one run, the same GGUF: decode tok/s on each one's WebGPU path and on each one's wasm CPU
//! path, and tokscope's native GPU engine on the browser's own driver (Chromium's SwiftShader
//! Vulkan where there is no GPU, else the machine's Vulkan GPU) for the browser ÷ native ratio.
//! Run it with `scripts/vs_wllama.sh [MODEL]` (which installs the npm package and builds the
//! page and the CLI); MODEL is a path under dist/ (default: the default model), e.g.
//! `models/gemma-3-270m-q4_k_m.gguf`; `--cpu-only` skips the WebGPU rows. Where tokscope's GPU engine does not run the model's
//! architecture, its WebGPU rows say so (the page falls back to its CPU engine).
//!
//! Both CPU paths run one thread: the static server sends no cross-origin isolation headers,
//! so neither gets SharedArrayBuffer threads (tokscope's wasm engine is single-threaded anyway).

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server;
use tokscope_e2e::site::{MODEL, SWIFTSHADER_ICD, dist, root};

const TOKENS: usize = 64;
const PROMPT: &str = "The history of the printing press";
const TIMEOUT: Duration = Duration::from_secs(900);

/// bench/wllama/index.html, the package's esm/ and the model, in one folder to serve.
fn wllama_site(package: &Path, model_path: &str) -> PathBuf {
    let site = root().join("target/wllama-site");
    let _ = std::fs::remove_dir_all(&site);
    std::fs::create_dir_all(site.join("esm/wasm")).unwrap();
    std::fs::copy(root().join("bench/wllama/index.html"), site.join("index.html")).unwrap();
    for entry in walk(&package.join("esm")) {
        let rel = entry.strip_prefix(package).unwrap();
        std::fs::create_dir_all(site.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(&entry, site.join(rel)).unwrap();
    }
    let model = site.join("model.gguf");
    let source = dist().join(model_path);
    if std::fs::hard_link(&source, &model).is_err() {
        std::fs::copy(&source, &model).unwrap();
    }
    site
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

async fn wllama(b: &Browser, server: &server::Server, gpu: bool) -> serde_json::Value {
    let url = server.url(&format!(
        "index.html?gpu={}&tokens={TOKENS}&model=model.gguf",
        u8::from(gpu)
    ));
    b.client.goto(&url).await.unwrap();
    b.wait_for("window.__result !== undefined", TIMEOUT).await.unwrap();
    b.eval("return window.__result;").await
}

async fn tokscope(b: &Browser, server: &server::Server, model: &str, cpu: bool) -> (f64, String) {
    let prompt = PROMPT.replace(' ', "%20");
    let backend = if cpu { "&backend=cpu" } else { "&backend=gpu" };
    // Two runs: the first warms up (pipelines, caches); the meter's mean of the second counts.
    let url = server.url(&format!(
        "index.html?prompt={prompt}&max_tokens={TOKENS}&temperature=0{backend}&model={model}"
    ));
    b.client.goto(&url).await.unwrap();
    let ready = "document.querySelector('[data-testid=status]').textContent.startsWith('Ready')";
    let done = "document.querySelector('[data-testid=status]').textContent.startsWith('Done')";
    b.wait_for(ready, TIMEOUT).await.unwrap();
    for _ in 0..2 {
        b.eval("document.querySelector('[data-testid=generate]').click(); return 0;")
            .await;
        b.wait_for("document.querySelector('[data-testid=generate]').disabled", TIMEOUT)
            .await
            .ok();
        b.wait_for(done, TIMEOUT).await.unwrap();
    }
    let tok_s = b.text("tok-s-mean").await.trim().parse().unwrap_or(f64::NAN);
    (tok_s, b.text("backend").await)
}

/// The native GPU engine's decode tok/s (`tokscope bench --backend gpu`, release build) on the
/// driver the browser's WebGPU used: Chromium's own SwiftShader when `swiftshader`, else the
/// machine's default Vulkan adapter (a real GPU).
fn native_on_same_driver(swiftshader: bool, model: &str) -> f64 {
    let mut cmd = std::process::Command::new(root().join("target/release/tokscope"));
    if swiftshader {
        cmd.env("VK_ICD_FILENAMES", SWIFTSHADER_ICD);
    }
    let out = cmd
        .current_dir(root())
        .args(["bench", "--backend", "gpu", "--json", "--runs", "3"])
        .args(["--tokens", &TOKENS.to_string(), "--model"])
        .arg(root().join("dist").join(model))
        .output()
        .expect("target/release/tokscope runs (scripts/vs_wllama.sh builds it)");
    if !out.status.success() {
        println!("native GPU engine: {}", String::from_utf8_lossy(&out.stderr).trim());
        return f64::NAN;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bench --json");
    v["decode_tok_s"].as_f64().unwrap_or(f64::NAN)
}

#[tokio::main]
async fn main() {
    let package = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .expect("usage: vs_wllama PATH/TO/node_modules/@wllama/wllama");
    let rest: Vec<String> = std::env::args().skip(2).collect();
    let cpu_only = rest.iter().any(|a| a == "--cpu-only");
    let model = rest
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| MODEL.to_string());
    let site = wllama_site(&package, &model);
    let (ours, theirs) = (
        server::start(&dist(), "127.0.0.1:0").unwrap(),
        server::start_foreign(&site, "127.0.0.1:0").unwrap(),
    );
    let b = Browser::launch(true, 1280, 900).await.unwrap();
    let w_cpu = wllama(&b, &theirs, false).await;
    let (t_cpu, _) = tokscope(&b, &ours, &model, true).await;
    let rate = |v: &serde_json::Value| v["decode_tok_s"].as_f64().unwrap_or(f64::NAN);
    let table = || {
        println!("same browser, same GGUF ({model}), {TOKENS} greedy tokens, second of two runs:");
        println!("path              tokscope tok/s   wllama tok/s   tokscope ÷ wllama");
    };
    let cpu_row = || {
        println!(
            "wasm CPU, 1 thread{:>14.1} {:>14.1} {:>19.2}",
            t_cpu,
            rate(&w_cpu),
            t_cpu / rate(&w_cpu)
        )
    };
    if cpu_only {
        b.close().await;
        table();
        cpu_row();
        println!("wllama details: cpu {w_cpu}");
        return;
    }
    let w_gpu = wllama(&b, &theirs, true).await;
    let (t_gpu, t_gpu_backend) = tokscope(&b, &ours, &model, false).await;
    b.close().await;
    let swiftshader = t_gpu_backend.to_lowercase().contains("swiftshader");
    let native = native_on_same_driver(swiftshader, &model);
    table();
    println!(
        "WebGPU            {:>14.1} {:>14.1} {:>19.2}   ({t_gpu_backend})",
        t_gpu,
        rate(&w_gpu),
        t_gpu / rate(&w_gpu)
    );
    cpu_row();
    println!(
        "tokscope WebGPU in the browser ÷ native on the same driver ({}): {t_gpu:.1} ÷ {native:.1} = {:.2}",
        if swiftshader {
            "SwiftShader"
        } else {
            "the default Vulkan adapter"
        },
        t_gpu / native
    );
    println!("wllama details: gpu {w_gpu}\n                cpu {w_cpu}");
}
