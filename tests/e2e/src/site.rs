//! Where the built page lives: `dist/` at the workspace root, built by `cargo xtask build-web`
//! (scripts/test.sh does it before the tests).

use std::path::{Path, PathBuf};

/// The default model, as the page fetches it (relative to `dist/`).
pub const MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

pub fn root() -> PathBuf {
    // Canonical: chromedriver refuses file paths with `..` in them.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn dist() -> PathBuf {
    let d = root().join("dist");
    assert!(
        d.join("index.html").is_file() && d.join(MODEL).is_file(),
        "dist/ is not built: scripts/test.sh runs `cargo xtask build-web` first"
    );
    d
}

/// The folder that holds the build made for a sub-path: `tokscope/` in it is
/// `cargo xtask build-web --public-url /tokscope/ --dist target/subpath/tokscope`.
pub fn subpath_root() -> PathBuf {
    let d = root().join("target/subpath");
    assert!(
        d.join("tokscope/index.html").is_file(),
        "the sub-path build is missing: scripts/test.sh runs cargo xtask build-web --public-url /tokscope/ --dist target/subpath/tokscope"
    );
    d
}

/// Where the tests leave their screenshots.
pub fn screenshot_path(name: &str) -> PathBuf {
    root().join("target/e2e").join(name)
}

/// Chromium's own SwiftShader Vulkan driver (Debian's chromium package ships it): the native CLI
/// on the same driver as the page's WebGPU.
pub const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

/// Runs the `tokscope` CLI (through cargo, in the test profile: optimized like a release, and
/// the same compiled crates `cargo test` just built, where a release build would take CI
/// another ten minutes) and returns its stdout; `icd` picks the Vulkan driver for
/// `--backend gpu`, `probe` and `bench`.
pub fn tokscope(args: &[&str], icd: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.current_dir(root())
        .args([
            "run",
            "--profile",
            "test",
            "--quiet",
            "--locked",
            "-p",
            "tokscope-cli",
            "--",
        ])
        .args(args);
    if let Some(icd) = icd {
        cmd.env("VK_ICD_FILENAMES", icd);
    }
    let out = cmd.output().expect("cargo runs the CLI");
    assert!(
        out.status.success(),
        "tokscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
