//! Where the built page lives: `dist/` at the workspace root, built by `trunk build --release`
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
        "dist/ is not built: scripts/test.sh runs `trunk build --release` first"
    );
    d
}

/// Where the tests leave their screenshots.
pub fn screenshot_path(name: &str) -> PathBuf {
    root().join("target/e2e").join(name)
}
