//! `cargo xtask fuzz`: the fuzz targets in `fuzz/` (cargo-fuzz, libFuzzer, the nightly toolchain
//! pinned in fuzz/rust-toolchain.toml)
//! run with the limits the project holds itself to, and their seed corpus.
//!
//! - `cargo xtask fuzz seeds` writes `fuzz/seeds/TARGET/` (committed): tiny models of every
//!   family and weight type and mutations of them, the shipped models' chat templates, links.
//! - `cargo xtask fuzz run [--seconds N] [TARGET…]` fuzzes each target for N seconds (default
//!   60) from the seeds and its working corpus (`fuzz/corpus/TARGET/`, not committed). Any
//!   crash, hang or allocation over 256 MiB fails the run, and the input
//!   is left in `fuzz/artifacts/TARGET/`: add it to `fuzz/regressions/TARGET/` with the fix.

use std::path::Path;
use std::process::Command;
use tokscope_core::model::Family;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;

/// The targets, in the order they run.
pub const TARGETS: [&str; 4] = ["gguf", "tokenizer", "chat_template", "url_params"];

/// libFuzzer's flags: inputs up to 1 MiB, no single allocation over 256 MiB, and a hang limit.
/// The hang limit is 10 s, not the project's 1 s: under AddressSanitizer and debug assertions
/// an input runs many times slower than in the product, and a loaded machine stretches that
/// further (a 2 ms tokenizer input, 109 ms instrumented, timed out at 1 s on 2 busy cores). The
/// 1 s limit is held on the product's own build instead: `crates/web/tests/fuzz_regressions.rs`
/// replays the whole corpus (`TOKSCOPE_FUZZ_CORPUS=1`) and fails on any input over 1 s.
const LIMITS: [&str; 4] = [
    "-max_len=1048576",
    "-timeout=10",
    "-malloc_limit_mb=256",
    "-rss_limit_mb=2048",
];

pub fn fuzz(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("seeds") => write_seeds(&crate::root().join("fuzz/seeds")),
        Some("run") => run(&args[1..]),
        _ => Err("usage: cargo xtask fuzz seeds | cargo xtask fuzz run [--seconds N] [TARGET…]".into()),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut targets: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v
                    .parse()
                    .map_err(|_| format!("--seconds: {v:?} is not a whole number"))?;
            }
            t if TARGETS.contains(&t) => targets.push(t),
            other => return Err(format!("unknown target {other:?} (targets: {})", TARGETS.join(", "))),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    let fuzz_dir = crate::root().join("fuzz");
    let toolchain = nightly(&fuzz_dir)?;
    for target in targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        println!("== fuzz {target} for {seconds} s");
        // -a: debug assertions on, so arithmetic overflow is a crash too.
        let status = Command::new("cargo")
            .current_dir(&fuzz_dir)
            // The pinned nightly named outright: an inherited RUSTUP_TOOLCHAIN or the test
            // script's clippy wrapper (a stable tool) must not reach this build.
            .arg(format!("+{toolchain}"))
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .args(["fuzz", "run", "-a", target])
            .arg(&corpus)
            .arg(fuzz_dir.join("seeds").join(target))
            .arg("--")
            .args(LIMITS)
            .arg(format!("-max_total_time={seconds}"))
            .arg("-print_final_stats=1")
            .status()
            .map_err(|e| format!("cannot run cargo fuzz (scripts/setup.sh installs it): {e}"))?;
        if !status.success() {
            return Err(format!(
                "fuzz target {target} failed: the input is in fuzz/artifacts/{target}/ (replay it with \
                 `cargo +nightly fuzz run -a {target} FILE`)"
            ));
        }
    }
    Ok(())
}

/// The channel pinned in `fuzz/rust-toolchain.toml`.
fn nightly(fuzz_dir: &Path) -> Result<String, String> {
    let path = fuzz_dir.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("channel = \"")?.strip_suffix('"'))
        .map(str::to_string)
        .ok_or_else(|| format!("{} names no channel", path.display()))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn write_seeds(seeds: &Path) -> Result<(), String> {
    let gguf = seeds.join("gguf");
    for (name, bytes) in gguf_seeds() {
        write(&gguf, &name, &bytes)?;
    }
    // The tokenizer target reads structured input (arbitrary's format): short texts are enough
    // to start from; the vocabularies themselves come from the test model inside the target.
    let tokenizer = seeds.join("tokenizer");
    for (i, s) in [
        "",
        "\u{1}\u{1}\u{0}hello world",
        "\u{0}\u{1}\u{1}\u{1}the cat sat 123 東京 🦀 <|im_start|>",
    ]
    .iter()
    .enumerate()
    {
        write(&tokenizer, &format!("text-{i}"), s.as_bytes())?;
    }
    let chat = seeds.join("chat_template");
    let mut templates = vec![
        ("chatml".to_string(), tokscope_core::chat::CHATML_TEMPLATE.to_string()),
        ("gemma".to_string(), tokscope_core::chat::GEMMA_TEMPLATE.to_string()),
    ];
    // The shipped models' own templates, where they have been fetched.
    for (name, file) in [
        ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
        ("gemma3", "gemma-3-270m-q4_k_m.gguf"),
    ] {
        let path = crate::root().join("public/models").join(file);
        if let Ok(bytes) = std::fs::read(&path)
            && let Ok(g) = tokscope_core::gguf::Gguf::parse(bytes)
            && let Ok(Some(t)) = g.opt_str("tokenizer.chat_template")
        {
            templates.push((name.to_string(), t.to_string()));
        }
    }
    for (name, t) in templates {
        let input = format!("{t}\0You are terse.\0Hi <script>alert(1)</script>\0Hello!\0Bye");
        write(&chat, &name, input.as_bytes())?;
    }
    let url = seeds.join("url_params");
    for (i, link) in [
        "#/run?prompt=The%20capital%20of%20France%20is&max_tokens=32&temperature=0&seed=1&chat=0&autorun=1",
        "#/embed/agent?steps=12&tokens=800&speeds=30,300",
        "#/embed/roofline?model_preset=llama-3.1-8b-16&device=h100-sxm&batch=8&context=4096",
        "#/speed?gbs=12.5&tok_s=40&model=synthetic:tiny:Q4_0",
        "#/run?top_k=40&top_p=0.9&backend=gpu&model=https%3A%2F%2Fexample.org%2Fm.gguf",
        "#/embed/agent?preset=coding&speeds=measured,ceiling,clover-h200",
    ]
    .iter()
    .enumerate()
    {
        write(&url, &format!("link-{i}"), link.as_bytes())?;
    }
    println!("seeds written to {}", seeds.display());
    Ok(())
}

/// Tiny models of each family and weight type (small enough for libFuzzer to mutate quickly),
/// and the malformed variants the reader must refuse by name.
fn gguf_seeds() -> Vec<(String, Vec<u8>)> {
    let small = TinyLlama {
        n_layers: 1,
        d_model: 32,
        n_heads: 2,
        n_kv_heads: 1,
        ffn_dim: 64,
        context_length: 64,
        ..Default::default()
    };
    let mut out = Vec::new();
    for (family, ty, spm) in [
        (Family::Llama, GgmlType::Q4_1, false),
        (Family::Llama, GgmlType::Q8_0, true),
        (Family::Llama, GgmlType::F16, false),
        (Family::Gemma3, GgmlType::Q4_0, false),
        (Family::Qwen2, GgmlType::Q5_1, false),
        (Family::Qwen3, GgmlType::F32, false),
    ] {
        let spec = TinyLlama {
            family,
            weight_type: ty,
            spm,
            ..small.clone()
        };
        out.push((
            format!("{}-{ty}{}", family.name(), if spm { "-spm" } else { "" }),
            spec.build(),
        ));
    }
    for ty in [GgmlType::Q4_K, GgmlType::Q2_K] {
        let spec = TinyLlama {
            weight_type: ty,
            embd_type: GgmlType::Q8_0,
            d_model: 256,
            ffn_dim: 256,
            n_heads: 4,
            n_kv_heads: 2,
            ..small.clone()
        };
        out.push((format!("llama-{ty}"), spec.build()));
    }
    // The malformed files every reader must refuse by name (the bad-input table's rows).
    for m in tokscope_core::malformed::malformed_models() {
        out.push((m.file.trim_end_matches(".gguf").to_string(), m.bytes));
    }
    let mut huge = small.build();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    out.push(("tensor-count-huge".into(), huge));
    out
}
