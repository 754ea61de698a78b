//! The `tokscope` binary end to end on tiny synthetic models: output streams, JSON shapes, and
//! one clear error line (never a panic) for every kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokscope_core::gguf::Value;
use tokscope_core::synthetic::TinyLlama;

/// A file of its own for each call: tests run in parallel and must not rewrite a model another
/// test has mapped.
fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("tokscope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{}-{name}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// `program` as CI and a headless server run it, with no display server in the environment: the
/// GPU tests' one-line checks then also hold the system's Vulkan layers to it (see `headless.rs`).
fn headless(program: &str) -> Command {
    let mut c = Command::new(program);
    for var in ["XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY", "NODEVICE_SELECT"] {
        c.env_remove(var);
    }
    c
}

fn tokscope(args: &[&str]) -> Output {
    headless(env!("CARGO_BIN_EXE_tokscope")).args(args).output().unwrap()
}

/// `tokscope generate --model MODEL ARGS…`
fn generate(model: &Path, args: &[&str]) -> Output {
    let mut all = vec!["generate", "--model", s(model)];
    all.extend_from_slice(args);
    tokscope(&all)
}

fn tiny() -> PathBuf {
    tmp("tiny.gguf", &TinyLlama::default().build())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Fails with exit code 1 and exactly one `error: …` line containing `needle`.
fn assert_clean_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {stderr}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains(needle), "{stderr}");
}

#[test]
fn generate_streams_text_to_stdout_and_timings_to_stderr() {
    let m = tiny();
    let out = generate(&m, &["--prompt", "the cat", "--max-tokens", "12", "--ignore-eos"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for key in ["prompt tokens: ", "time to first token: ", "prefill: ", "decode: "] {
        assert!(stderr.contains(key), "{stderr}");
    }
    assert!(stderr.contains("(12 tokens)"), "{stderr}");
    assert!(!out.stdout.is_empty());
    // Greedy is deterministic; sampling with a seed is reproducible.
    let again = generate(&m, &["--prompt", "the cat", "--max-tokens", "12", "--ignore-eos"]);
    assert_eq!(out.stdout, again.stdout);
    let sample = |seed: &str| {
        generate(
            &m,
            &[
                "--prompt",
                "the",
                "--max-tokens",
                "16",
                "--ignore-eos",
                "--temperature",
                "20",
                "--top-k",
                "0",
                "--top-p",
                "1",
                "--seed",
                seed,
            ],
        )
        .stdout
    };
    assert_eq!(sample("7"), sample("7"));
    assert_ne!(sample("7"), sample("8"));
}

#[test]
fn chat_mode_uses_the_template() {
    let m = tiny();
    let out = generate(&m, &["--prompt", "hi", "--chat", "--max-tokens", "3", "--ignore-eos"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" with the specials as single
    // tokens: 3 + 9 + 8 byte-level pieces ("us" "er" merge) — 20, not the 56 of literal text.
    assert!(stderr.contains("prompt tokens: 20"), "{stderr}");
    let raw = generate(
        &m,
        &[
            "--prompt",
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            "--max-tokens",
            "3",
            "--ignore-eos",
        ],
    );
    assert_eq!(raw.stdout, out.stdout);
    assert!(String::from_utf8_lossy(&raw.stderr).contains("prompt tokens: 20"));
}

#[test]
fn inspect_reports_structure_and_bytes_per_token() {
    let m = tiny();
    let out = tokscope(&["inspect", s(&m), "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["architecture"], "llama");
    assert_eq!(v["config"]["n_layers"], 2);
    assert_eq!(v["config"]["n_kv_heads"], 2);
    assert_eq!(v["quantization"]["Q4_1"]["tensors"], 14);
    assert_eq!(v["quantization"]["Q4_1"]["bits_per_weight"], 5.0);
    assert!(v["weight_bytes_per_token"].as_u64().unwrap() > 0);
    // 2 layers × (K, V) × 2 KV heads × 16 dims: f16 on the GPU, f32 on the CPU.
    assert_eq!(v["kv_bytes_per_token"]["gpu"], 2 * 2 * 32 * 2);
    assert_eq!(v["kv_bytes_per_token"]["cpu"], 2 * 2 * 32 * 4);
    assert_eq!(v["tokenizer"]["model"], "gpt2");
    let text = tokscope(&["inspect", s(&m)]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("bytes read per decoded token"));
}

#[test]
fn tokenize_prints_pieces_and_counts() {
    let m = tiny();
    let out = tokscope(&["tokenize", "--model", s(&m), "the cat", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = v["tokens"].as_array().unwrap();
    assert!(!tokens.is_empty());
    let per_word = tokens.len() as f64 / 2.0;
    assert_eq!(v["tokens_per_word"].as_f64(), Some(per_word));
    assert_eq!(v["words"], 2);
    assert_eq!(v["characters"], 7);
    let joined: String = tokens
        .iter()
        .filter(|t| t["special"] == false)
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(joined.trim(), "the cat");
    let text = tokscope(&["tokenize", "--model", s(&m), "the cat"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&format!("{} tokens, 2 words, 7 characters", tokens.len())));
}

#[test]
fn inspect_explains_what_cannot_run() {
    let mut w = TinyLlama::default().writer();
    *w.meta_mut("general.architecture").unwrap() = Value::String("mamba".into());
    let m = tmp("mamba.gguf", &w.to_bytes());
    let out = tokscope(&["inspect", s(&m)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot run:    unsupported architecture \"mamba\""));
}

#[test]
fn bench_json_has_the_figures() {
    let m = tiny();
    let out = tokscope(&[
        "bench",
        "--model",
        s(&m),
        "--tokens",
        "16",
        "--prompt-tokens",
        "8",
        "--runs",
        "3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["decode_tok_s", "prefill_tok_s", "bytes_per_token", "effective_gb_s"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}: {v}");
    }
    assert_eq!(v["decode_tok_s_runs"].as_array().unwrap().len(), 3);
    assert_eq!(v["backend"], "cpu");
}

#[test]
fn bad_inputs_give_one_clear_line() {
    let good = TinyLlama::default().build();
    let truncated = tmp("truncated.gguf", &good[..good.len() / 2]);
    assert_clean_error(&generate(&truncated, &["--prompt", "x"]), "truncated");
    assert_clean_error(&tokscope(&["inspect", s(&truncated)]), "truncated");
    let not_gguf = tmp("notes.txt", b"hello, this is not a model");
    assert_clean_error(&tokscope(&["inspect", s(&not_gguf)]), "not a GGUF file");
    let empty = tmp("empty.gguf", b"");
    assert_clean_error(&tokscope(&["inspect", s(&empty)]), "not a GGUF file");
    assert_clean_error(
        &tokscope(&["inspect", "/nonexistent/model.gguf"]),
        "cannot open /nonexistent/model.gguf",
    );
    let dir = std::env::temp_dir();
    assert_clean_error(&tokscope(&["inspect", s(&dir)]), "directory");

    let m = tiny();
    assert_clean_error(&generate(&m, &["--prompt", "x", "--temperature=-1"]), "temperature");
    assert_clean_error(&generate(&m, &["--prompt", "x", "--top-p", "0"]), "top-p");
    assert_clean_error(&generate(&m, &["--prompt", ""]), "empty prompt");
    assert_clean_error(
        &generate(&m, &["--prompt", "a long prompt here", "--context", "4"]),
        "context full",
    );
    assert_clean_error(&tokscope(&["bench", "--model", s(&m), "--runs", "2"]), "at least 3");
    assert_clean_error(&tokscope(&["--threads", "0", "inspect", s(&m)]), "threads");
    // Argument errors are one line too, with exit code 2 as is usual for usage errors.
    let out = tokscope(&["generate", "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--model"), "{stderr}");
}

/// Every row of the bad-model table (core's `malformed_models`), one line each.
#[test]
fn every_malformed_model_is_one_clear_line() {
    for m in tokscope_core::malformed::malformed_models() {
        let path = tmp(m.file, &m.bytes);
        assert_clean_error(&generate(&path, &["--prompt", "x"]), m.says);
    }
}

#[test]
fn generation_stops_cleanly_when_the_context_fills() {
    let m = tiny();
    let out = generate(
        &m,
        &["--prompt", "ab", "--max-tokens", "50", "--context", "8", "--ignore-eos"],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped: context full (8 tokens)"), "{stderr}");
}

#[test]
fn probe_reports_the_roofline_figures() {
    let out = tokscope(&["probe", "--json", "--runs", "2"]);
    if !gpu_ran(&out) {
        return;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["read_gb_s", "dispatch_us", "stream_extra_ms", "empty_extra_ms"] {
        assert!(v[key].as_f64().is_some(), "{key}: {v}");
    }
    for key in ["min_ms", "median_ms", "max_ms"] {
        assert!(v["latency"][key].as_f64().is_some(), "{key}: {v}");
    }
    assert!(v["adapter"]["name"].as_str().is_some());
}

#[test]
fn a_bad_tick_is_refused_by_name() {
    let out = tokscope(&["probe", "--tick-ms", "-5"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tick-ms must be a time in ms"), "{err}");
}

#[test]
fn no_adapter_is_one_clear_line() {
    // No Vulkan driver visible: the adapter request fails as in a browser without WebGPU.
    let out = headless(env!("CARGO_BIN_EXE_tokscope"))
        .args(["probe"])
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: no GPU adapter"), "{stderr}");
}

#[test]
fn gpu_backend_generates_the_same_greedy_text() {
    let m = tiny();
    let cpu = generate(&m, &["--prompt", "the cat", "--max-tokens", "8", "--ignore-eos"]);
    let gpu = generate(
        &m,
        &[
            "--prompt",
            "the cat",
            "--max-tokens",
            "8",
            "--ignore-eos",
            "--backend",
            "gpu",
        ],
    );
    if !gpu_ran(&gpu) {
        return;
    }
    assert_eq!(gpu.stdout, cpu.stdout);
    assert!(String::from_utf8_lossy(&gpu.stderr).contains("(8 tokens)"));
}

#[test]
fn gpu_bench_json_has_the_issue_fields() {
    let m = tiny();
    let args = [
        "bench",
        "--model",
        s(&m),
        "--backend",
        "gpu",
        "--tokens",
        "8",
        "--prompt-tokens",
        "8",
        "--runs",
        "3",
        "--json",
    ];
    let out = tokscope(&args);
    if !gpu_ran(&out) {
        return;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["decode_tok_s", "prefill_tok_s", "bytes_per_token", "probe_gb_s", "mbu"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}: {v}");
    }
    assert_eq!(v["backend"], "gpu");
    assert_eq!(v["batch"], 1);
    // The embedding lookup, two layers of five, the head and top-k.
    assert_eq!(v["dispatches_per_token"], 1 + 2 * 5 + 2);
    // Greedy steps chained, with the host's wait per token and the steps a submit.
    assert_eq!(v["chain"], "chained");
    assert!(v["steps_per_submit"].as_f64().unwrap() >= 1.0, "{v}");
    assert!(v["host_wait_ms_per_token"].as_f64().unwrap() >= 0.0, "{v}");
    assert!(!v["adapter"].as_str().unwrap().is_empty());
    let classes = v["profile"]["classes"].as_array().unwrap();
    let names: Vec<&str> = classes.iter().map(|c| c["class"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "embed",
            "qkv",
            "attention",
            "attn_output",
            "gate_up",
            "down",
            "head",
            "top_k"
        ]
    );
    let counts: Vec<u64> = classes.iter().map(|c| c["dispatches"].as_u64().unwrap()).collect();
    assert_eq!(counts, [1, 2, 2, 2, 2, 2, 1, 1]);
    // The floor model from the probe's figures, and the measured step against it.
    let floor = &v["floor"];
    let step = floor["step_s"].as_f64().unwrap();
    let parts = ["bytes_s", "dispatch_s", "sync_s"].map(|k| floor[k].as_f64().unwrap());
    assert!(
        (step - parts.iter().sum::<f64>()).abs() < 1e-12 * step.max(1.0),
        "{floor}"
    );
    assert!(v["floor_ratio"].as_f64().unwrap() > 0.0);
    assert!(v["probe"]["dispatch_us"].as_f64().unwrap() >= 0.0);
}

#[test]
fn bench_batch_out_of_range_is_a_clear_error() {
    let m = tiny();
    assert_clean_error(
        &tokscope(&["bench", "--model", s(&m), "--batch", "17"]),
        "--batch must be 1 to 16",
    );
}

/// Whether a GPU command ran: without an adapter it is skipped (false), unless
/// TOKSCOPE_REQUIRE_GPU=1 (CI), where any failure fails the test.
fn gpu_ran(out: &Output) -> bool {
    if !out.status.success() && std::env::var("TOKSCOPE_REQUIRE_GPU").as_deref() != Ok("1") {
        eprintln!("skipping: {}", String::from_utf8_lossy(&out.stderr));
        return false;
    }
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    true
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn roofline_reproduces_the_worked_example_in_json() {
    let v = json(&tokscope(&[
        "roofline",
        "--params",
        "8.03B",
        "--bits",
        "16",
        "--bandwidth-gbs",
        "1000",
        "--json",
    ]));
    assert_eq!(v["bytes_per_step"], 16.06e9);
    assert_eq!(v["per_user_tok_s"].as_f64().unwrap().round(), 62.0);
    assert_eq!(v["bound"], "memory");
    let v8 = json(&tokscope(&[
        "roofline",
        "--model",
        "llama-3.1-8b-8",
        "--bandwidth-gbs",
        "1000",
        "--json",
    ]));
    let ratio = v8["per_user_tok_s"].as_f64().unwrap() / v["per_user_tok_s"].as_f64().unwrap();
    assert!((ratio - 2.0).abs() < 1e-12, "{ratio}");
    for field in [
        "aggregate_tok_s",
        "arithmetic_intensity",
        "ridge_point",
        "kv_bytes",
        "weight_bytes",
    ] {
        assert!(v.get(field).is_some(), "{field}");
    }
}

#[test]
fn roofline_presets_kv_cache_and_compute_roof() {
    let v = json(&tokscope(&[
        "roofline",
        "--model",
        "llama-3.1-8b-16",
        "--device",
        "h100-sxm",
        "--batch",
        "512",
        "--context",
        "1",
        "--json",
    ]));
    assert_eq!(v["bound"], "compute");
    assert_eq!(v["batch"], 512);
    // 2 (K, V) × 32 layers × 8 heads × 128 dims × 1 token × 2 bytes × 512 sequences.
    assert_eq!(v["kv_bytes"], 2.0 * 32.0 * 8.0 * 128.0 * 2.0 * 512.0);
    let text = String::from_utf8(tokscope(&["roofline", "--list"]).stdout).unwrap();
    assert!(text.contains("h200") && text.contains("peak"), "{text}");
}

#[test]
fn roofline_bad_input_is_one_clear_line() {
    let base = ["roofline", "--params", "8B", "--bits", "16"];
    let with = |extra: &[&str]| tokscope(&[&base[..], extra].concat());
    assert_clean_error(
        &with(&["--bandwidth-gbs", "-3"]),
        "bandwidth: must be more than zero, got -3",
    );
    assert_clean_error(&with(&["--bandwidth-gbs", "NaN"]), "bandwidth: must be a number");
    assert_clean_error(&with(&[]), "missing --bandwidth-gbs");
    assert_clean_error(
        &with(&["--bandwidth-gbs", "100", "--context", "10"]),
        "--context needs --layers",
    );
    assert_clean_error(&with(&["--device", "nope"]), "no device preset \"nope\"");
    assert_clean_error(
        &tokscope(&["roofline", "--params", "eight", "--bits", "4", "--bandwidth-gbs", "1"]),
        "not a count",
    );
}

#[test]
fn agent_reproduces_the_seeds_example_and_lists_steps() {
    let v = json(&tokscope(&[
        "agent",
        "--steps",
        "12",
        "--output-tokens",
        "800",
        "--tok-s",
        "30",
        "--json",
    ]));
    assert_eq!(v["total_s"], 320.0);
    assert_eq!(v["decode_s"], 320.0);
    assert_eq!(v["tokens"], 9600);
    assert_eq!(v["prefill_s"], 0.0);
    assert_eq!(v["steps"].as_array().unwrap().len(), 12);
    let fast = json(&tokscope(&[
        "agent",
        "--steps",
        "12",
        "--output-tokens",
        "800",
        "--tok-s",
        "300",
        "--json",
    ]));
    assert!((fast["total_s"].as_f64().unwrap() - 32.0).abs() < 1e-9);
    let out = tokscope(&["agent", "--steps", "12", "--output-tokens", "800", "--tok-s", "30"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("take 5 min 20 s"), "{text}");
}

#[test]
fn agent_prefix_cache_off_prefills_the_whole_context() {
    let run = |cache: &str| {
        json(&tokscope(&[
            "agent",
            "--steps",
            "3",
            "--output-tokens",
            "100",
            "--reasoning-tokens",
            "50",
            "--prompt-tokens",
            "1000",
            "--tool-tokens",
            "200",
            "--prefill-tok-s",
            "1000",
            "--ttft-s",
            "0.5",
            "--tool-s",
            "2",
            "--tok-s",
            "50",
            "--prefix-cache",
            cache,
            "--json",
        ]))
    };
    let (on, off) = (run("on"), run("off"));
    assert!((on["total_s"].as_f64().unwrap() - 15.9).abs() < 1e-9, "{on}");
    assert!((off["total_s"].as_f64().unwrap() - 18.4).abs() < 1e-9, "{off}");
    assert_eq!(off["steps"][2]["prefill_tokens"], 1600);
    assert_eq!(on["tool_s"], 4.0);
}

#[test]
fn agent_bad_input_is_one_clear_line() {
    assert_clean_error(
        &tokscope(&["agent", "--steps", "0", "--output-tokens", "8", "--tok-s", "3"]),
        "steps: must be between 1",
    );
    assert_clean_error(
        &tokscope(&["agent", "--steps", "2", "--output-tokens", "8", "--tok-s", "-3"]),
        "decode rate: must be more than zero",
    );
    assert_clean_error(
        &tokscope(&["agent", "--steps", "2", "--output-tokens", "0", "--tok-s", "3"]),
        "at least one token",
    );
}

#[test]
fn bench_sweeps_the_precision_dial() {
    let m = tiny();
    let args = [
        "bench",
        "--model",
        s(&m),
        "--sweep",
        "precision",
        "--tokens",
        "8",
        "--prompt-tokens",
        "8",
        "--runs",
        "3",
    ];
    let v = json(&tokscope(&[&args[..], &["--json"]].concat()));
    assert_eq!(v["sweep"], "precision");
    let rows = v["rows"].as_array().unwrap();
    let types: Vec<&str> = rows.iter().map(|r| r["type"].as_str().unwrap()).collect();
    // Fewest bytes first; the tiny model's 64-wide rows give the K-quant points llama.cpp's
    // stand-ins (Q4_K → Q5_0, Q6_K → Q8_0, as many bytes as the Q8_0 point).
    assert_eq!(types, ["Q4_0", "Q4_1", "Q4_K", "Q6_K", "Q8_0", "F16", "F32"]);
    let bytes: Vec<f64> = rows.iter().map(|r| r["bytes_per_token"].as_f64().unwrap()).collect();
    assert!(
        bytes.windows(2).all(|w| w[0] <= w[1]) && bytes[0] < bytes[6],
        "bytes per token rise along the dial: {bytes:?}"
    );
    let bits: Vec<f64> = rows.iter().map(|r| r["bits_per_weight"].as_f64().unwrap()).collect();
    assert_eq!(bits[2], 5.5, "Q4_K's stand-in Q5_0 on 64-wide rows: {bits:?}");
    assert!(rows.iter().all(|r| r["decode_tok_s"].as_f64().unwrap() > 0.0));
    let text = String::from_utf8(tokscope(&args).stdout).unwrap();
    assert!(text.contains("precision sweep") && text.contains("F16"), "{text}");
}

#[test]
fn bench_sweeps_batch_sizes_on_the_cpu_engine() {
    let m = tiny();
    let v = json(&tokscope(&[
        "bench",
        "--model",
        s(&m),
        "--sweep",
        "batch",
        "--tokens",
        "8",
        "--runs",
        "3",
        "--json",
    ]));
    let rows = v["rows"].as_array().unwrap();
    let batches: Vec<u64> = rows.iter().map(|r| r["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, [1, 2, 4, 8, 16]);
    for r in rows {
        let (user, all, b) = (
            r["per_user_tok_s"].as_f64().unwrap(),
            r["aggregate_tok_s"].as_f64().unwrap(),
            r["batch"].as_f64().unwrap(),
        );
        assert!(user > 0.0 && (all - user * b).abs() < 1e-6 * all, "{r}");
    }
    let one = json(&tokscope(&[
        "bench",
        "--model",
        s(&m),
        "--batch",
        "4",
        "--tokens",
        "8",
        "--runs",
        "3",
        "--json",
    ]));
    assert_eq!(one["rows"][0]["batch"], 4);
}

#[test]
fn bench_batch_on_the_gpu_engine() {
    let m = tiny();
    let args = [
        "bench",
        "--model",
        s(&m),
        "--backend",
        "gpu",
        "--batch",
        "8",
        "--tokens",
        "8",
        "--runs",
        "3",
        "--json",
    ];
    let out = tokscope(&args);
    if !gpu_ran(&out) {
        return;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["backend"], "gpu");
    assert!(v["probe_gb_s"].as_f64().unwrap() > 0.0, "{v}");
    let row = &v["rows"][0];
    assert_eq!(row["batch"], 8);
    let (user, all) = (
        row["per_user_tok_s"].as_f64().unwrap(),
        row["aggregate_tok_s"].as_f64().unwrap(),
    );
    assert!(user > 0.0 && (all - 8.0 * user).abs() < 1e-6 * all, "{row}");
}

/// A decode to the context limit allocates nothing per token: resident memory grows only by
/// the KV cache's own pages, and the GPU engine creates no buffer after load.
#[test]
fn soak_to_the_context_limit_keeps_memory_flat() {
    let m = tiny();
    for backend in ["cpu", "gpu"] {
        let out = tokscope(&[
            "soak",
            "--model",
            s(&m),
            "--tokens",
            "1000",
            "--every",
            "32",
            "--backend",
            backend,
            "--json",
        ]);
        if backend == "gpu" && !gpu_ran(&out) {
            continue;
        }
        let v = json(&out);
        assert_eq!(v["stopped_by_context"], true, "{v}");
        // Every slot of the context (256) holds a prompt token or a fed-back one; the last
        // token decoded needs none.
        let used = v["tokens"].as_u64().unwrap() - 1 + v["prompt_tokens"].as_u64().unwrap();
        assert_eq!(used, 256, "decoded up to the tiny model's context: {v}");
        let beyond = v["rss_growth_beyond_kv_bytes"].as_i64().unwrap();
        assert!(
            beyond.abs() < 4 << 20,
            "resident memory grew {beyond} bytes beyond the KV cache: {v}"
        );
        if backend == "gpu" {
            assert_eq!(v["gpu_buffers_growth"], 0, "{v}");
        }
    }
    assert_clean_error(
        &tokscope(&["soak", "--model", s(&m), "--tokens", "10", "--every", "8"]),
        "twice --every",
    );
}

/// Out of GPU memory is one clear line naming the tensor, never wgpu's panic. A lavapipe
/// "GPU" allocates from the process's own memory, so capping the address space (`prlimit`)
/// runs it out: a ladder of caps, from below what device creation needs to above what the
/// model needs, must give that line at least once and a panic never. (A cap can also land
/// on a host allocation first, which aborts; that is the host's memory, not this row.)
#[test]
fn out_of_gpu_memory_is_one_clear_line() {
    let tiny = tiny();
    if !gpu_ran(&generate(&tiny, &ONE_GPU_TOKEN)) {
        return;
    }
    if Command::new("prlimit").arg("--version").output().is_err() {
        assert_ne!(
            std::env::var("TOKSCOPE_REQUIRE_GPU").as_deref(),
            Ok("1"),
            "prlimit (util-linux) is missing"
        );
        eprintln!("skipping: no prlimit");
        return;
    }
    let path = smollm2_shaped();
    let mut said = vec![];
    // Stops at the first cap the model runs under (here 1,000 MB); the ladder reaches far above
    // it for machines whose baseline address space is larger.
    for cap_mb in (400..=3000).step_by(50) {
        let out = headless("prlimit")
            .arg(format!("--as={}", cap_mb << 20))
            .arg(env!("CARGO_BIN_EXE_tokscope"))
            .args(["--threads", "1", "generate", "--model", s(&path)])
            .args(ONE_GPU_TOKEN)
            // Fewer threads and malloc arenas: less address space that is not the model's.
            .env("LP_NUM_THREADS", "2")
            .env("MALLOC_ARENA_MAX", "2")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !stderr.contains("panicked") && !stderr.contains("internal error"),
            "cap {cap_mb} MB: {stderr}"
        );
        if stderr.contains("ran out of memory") {
            assert_clean_error(&out, "error: the GPU ran out of memory for this model: \"blk.");
        }
        said.push(format!("{cap_mb} MB: {}", stderr.lines().next().unwrap_or("")));
        if out.status.success() {
            break;
        }
    }
    assert!(
        said.iter().any(|l| l.contains("ran out of memory")),
        "no cap ran the GPU out of memory:\n{}",
        said.join("\n")
    );
}

/// One greedy token on the GPU engine.
const ONE_GPU_TOKEN: [&str; 6] = ["--backend", "gpu", "--prompt", "a", "--max-tokens", "1"];

/// SmolLM2 135M's exact tensor shapes in Q8_0, random weights (144 MB): written once, for
/// the tests that only read it.
fn smollm2_shaped() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let shape = tokscope_core::shaped::ShapeSpec::by_id("smollm2-135m").unwrap();
        let path = tmp("smollm2-q8_0.gguf", &[]);
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        shape.write(tokscope_core::quant::GgmlType::Q8_0, 1, &mut file).unwrap();
        path
    })
    .clone()
}

/// A buffer over the adapter's binding limit is one clear line naming it and the limit: the
/// tiny shape at 16 layers and 131,072 tokens keeps 268,435,456 bytes of f16 keys, over
/// lavapipe's (and WebGPU's default) 128 MiB binding (an adapter that holds it must run it).
/// SmolLM2 at its full 8,192 tokens fits since the cache is f16 (94,371,840 bytes of keys; f32
/// took 188,743,680, over the limit), and must run.
#[test]
fn a_kv_cache_over_the_binding_limit_is_one_clear_line() {
    let probe = tokscope(&["probe", "--json"]);
    if !gpu_ran(&probe) {
        return;
    }
    let limit = json(&probe)["adapter"]["max_storage_buffer_binding_size"]
        .as_u64()
        .unwrap();
    let tiny = tokscope_core::shaped::ShapeSpec::by_id("tiny").unwrap();
    let long = tokscope_core::shaped::ShapeSpec {
        layers: 16,
        context: 1 << 17,
        ..*tiny
    };
    let path = tmp("long.gguf", &[]);
    long.write(
        tokscope_core::quant::GgmlType::Q8_0,
        1,
        &mut std::fs::File::create(&path).unwrap(),
    )
    .unwrap();
    let out = generate(&path, &[&ONE_GPU_TOKEN[..], &["--context", "131072"]].concat());
    if limit >= 268_435_456 {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    } else {
        assert_clean_error(
            &out,
            &format!(
                "the model does not fit this GPU: \"KV cache\" needs a 268435456 byte buffer, above this device's \
                 limit of {limit} bytes (maxStorageBufferBindingSize)"
            ),
        );
    }
    if limit >= 94_371_840 {
        let out = generate(
            &smollm2_shaped(),
            &[&ONE_GPU_TOKEN[..], &["--context", "8192"]].concat(),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
