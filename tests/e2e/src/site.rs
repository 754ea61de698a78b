//! Where the built page lives: `dist/` at the workspace root, built by `cargo xtask build-web`
//! (scripts/test.sh does it before the tests).

use std::path::{Path, PathBuf};

/// The default model, as the page fetches it (relative to `dist/`).
pub const MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// The prompt of the greedy runs compared with the CLI's.
pub const PROMPT: &str = "The capital of France is";

/// The status line says a model is loaded, or that a run has finished.
pub const READY: &str = "document.querySelector('[data-testid=status]').textContent.startsWith('Ready')";
pub const DONE: &str = "document.querySelector('[data-testid=status]').textContent.startsWith('Done')";

/// The token view shows its chips and has finished tokenizing.
pub const TOKENIZED: &str = "document.querySelector('[data-testid=tok-chips] li') !== null \
     && !document.querySelector('[data-testid=tok-source]').textContent.startsWith('Tokenizing')";

/// Conditions for `Browser::wait_for` on one `data-testid` element: it exists; its text is
/// `text`; its text starts with `prefix` (false while the element is missing).
pub fn present(testid: &str) -> String {
    format!("document.querySelector('[data-testid=\"{testid}\"]') !== null")
}

pub fn text_is(testid: &str, text: &str) -> String {
    format!("(document.querySelector('[data-testid=\"{testid}\"]') || {{}}).textContent === {text:?}")
}

pub fn text_starts(testid: &str, prefix: &str) -> String {
    format!("(document.querySelector('[data-testid=\"{testid}\"]') || {{}}).textContent?.startsWith({prefix:?})")
}

/// Opens `url` as a new page, runs the speed check once the model is ready, and waits for its
/// card (the probe and a decode of up to 20 s: minutes on a CPU-backed adapter).
pub async fn speed_check(b: &crate::browser::Browser, url: &str) {
    b.goto(url).await;
    b.wait_for(
        "!document.querySelector('[data-testid=speed-run]').disabled",
        std::time::Duration::from_secs(300),
    )
    .await
    .unwrap();
    b.click("speed-run").await;
    b.wait_for(&present("speed-card"), std::time::Duration::from_secs(400))
        .await
        .unwrap();
}

/// The built page (`dist/`) on a free port.
pub fn serve_dist() -> crate::server::Server {
    crate::server::start(&dist(), "127.0.0.1:0").expect("the static server starts")
}

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

/// Prints `line` and appends it to `target/e2e/engine-times.txt`, which scripts/test.sh shows
/// after the tests (cargo's test harness keeps a passing test's output to itself).
pub fn report_time(line: &str) {
    use std::io::Write;
    println!("{line}");
    let path = root().join("target/e2e/engine-times.txt");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(f, "{line}");
    }
}

/// Where the tests leave their screenshots.
pub fn screenshot_path(name: &str) -> PathBuf {
    root().join("target/e2e").join(name)
}

/// The speed card's probe against `tokscope probe` on the same Vulkan driver (`icd`), right after
/// it: read bandwidth within 0.75–1.33×, cost per dispatch within 0.5–3× (the bounds;
/// a CPU adapter's dispatch cost moves by a third with the machine's load). This shared machine's
/// speed drifts between the page's probe and the native one (CI once read SwiftShader natively at
/// 2.50 GB/s a minute after the page's 3.59, where 3.46 against 3.10 was usual; another run read
/// the page at 2.76 against 4.82 and 4.58 natively while other work ran), so where a figure falls
/// outside, the native probe runs once more; where it is still outside, the page's speed check
/// runs once more with a native probe after it. Each figure must fall within the bounds of one
/// pair of readings. Prints every reading.
pub async fn probe_agrees_with_native(b: &crate::browser::Browser, engine: &str, icd: Option<&str>) {
    let num = |s: String| s.trim().parse::<f64>().unwrap_or(f64::NAN);
    let native =
        || -> serde_json::Value { serde_json::from_str(&tokscope(&["probe", "--json", "--runs", "3"], icd)).unwrap() };
    let (mut bw_ok, mut per_ok, mut first) = (false, false, None);
    for page_run in 0..2 {
        if page_run == 1 {
            b.click("speed-run").await;
            b.wait_for(
                &format!("!({})", present("speed-card")),
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
            b.wait_for(&present("speed-card"), std::time::Duration::from_secs(400))
                .await
                .unwrap();
        }
        let (gb_s, us) = (num(b.text("speed-gbs").await), num(b.text("speed-dispatch").await));
        let latency = b.text("speed-latency").await;
        for _ in 0..2 {
            let n = native();
            let field = |k: &str| n[k].as_f64().unwrap_or(f64::NAN);
            let (bw, per) = (gb_s / field("read_gb_s"), us / field("dispatch_us"));
            println!(
                "{engine}: page probe {gb_s} GB/s, {us} µs a dispatch, completion {latency}; native on the same \
                 driver: {:.2} GB/s, {:.1} µs, completion {:.3} ms (page ÷ native: {bw:.2}, {per:.2})",
                field("read_gb_s"),
                field("dispatch_us"),
                n["latency"]["median_ms"].as_f64().unwrap_or(f64::NAN)
            );
            first.get_or_insert((bw, per));
            bw_ok |= (0.75..=1.0 / 0.75).contains(&bw);
            per_ok |= (0.5..=3.0).contains(&per);
            if bw_ok && per_ok {
                return;
            }
        }
    }
    let (bw, per) = first.expect("a reading");
    assert!(bw_ok, "{engine}: bandwidth page ÷ native = {bw:.2}");
    assert!(per_ok, "{engine}: cost per dispatch page ÷ native = {per:.2}");
}

/// Chromium's own SwiftShader Vulkan driver (Debian's chromium package ships it): the native CLI
/// on the same driver as the page's WebGPU.
pub const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

/// Mesa's lavapipe (Debian's mesa-vulkan-drivers): the Vulkan driver Firefox's WebGPU runs on
/// here, so the CLI on it is the page's native twin in Firefox.
pub const LAVAPIPE_ICD: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

/// Runs the `tokscope` CLI and returns its stdout; `icd` picks the Vulkan driver for
/// `--backend gpu`, `probe` and `bench`. The binary is the one `cargo test --workspace` built
/// for the CLI's own tests (optimized: the test profile), used when it is newer than every
/// source it is built from; otherwise (`cargo test -p tokscope-e2e` alone, edited sources)
/// cargo builds it. `cargo run -p tokscope-cli` from here would not reuse the workspace build:
/// one package's feature set differs from the workspace's, so on CI's 2 cores it recompiled
/// wgpu and tokenizers for ten minutes.
pub fn tokscope(args: &[&str], icd: Option<&str>) -> String {
    let mut cmd = match built_cli() {
        Some(bin) => std::process::Command::new(bin),
        None => {
            let mut cargo = std::process::Command::new(env!("CARGO"));
            cargo.args([
                "run",
                "--profile",
                "test",
                "--quiet",
                "--locked",
                "-p",
                "tokscope-cli",
                "--",
            ]);
            cargo
        }
    };
    cmd.current_dir(root()).args(args);
    if let Some(icd) = icd {
        cmd.env("VK_ICD_FILENAMES", icd);
    }
    let out = cmd.output().expect("the CLI (or cargo, to build it) runs");
    assert!(
        out.status.success(),
        "tokscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What `tokscope generate` prints (stdout, its trailing newline dropped) for a greedy run of
/// `tokens` tokens after [`PROMPT`] with the model at `model` (under public/); `gpu`: `--backend
/// gpu`, on the Vulkan ICD `icd` when given.
pub fn cli_greedy(model: &str, tokens: usize, gpu: bool, icd: Option<&str>) -> String {
    let model = format!("public/{model}");
    let tokens = tokens.to_string();
    let mut args = vec![
        "generate",
        "--model",
        &model,
        "--prompt",
        PROMPT,
        "--max-tokens",
        &tokens,
        "--temperature",
        "0",
    ];
    if gpu {
        args.extend(["--backend", "gpu"]);
    }
    let text = tokscope(&args, icd);
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

/// The page's address for a greedy run of [`PROMPT`] that starts by itself, `extra` appended
/// to its query.
pub fn greedy_run_url(server: &crate::server::Server, tokens: usize, extra: &str) -> String {
    server.url(&format!(
        "index.html?prompt={}&max_tokens={tokens}&temperature=0&autorun=1{extra}",
        url_encode(PROMPT)
    ))
}

/// `tokscope` in this test binary's target folder (target/debug/deps/.. ), when it is newer than
/// the CLI's sources, its engine crates' sources and Cargo.lock.
fn built_cli() -> Option<PathBuf> {
    let dir = std::env::current_exe().ok()?.parent()?.parent()?.to_path_buf();
    let bin = dir.join(format!("tokscope{}", std::env::consts::EXE_SUFFIX));
    let built = std::fs::metadata(&bin).ok()?.modified().ok()?;
    let sources = ["crates/cli", "crates/core", "crates/gpu", "Cargo.lock"];
    let newest = sources.iter().filter_map(|s| newest_change(&root().join(s))).max()?;
    (built >= newest).then_some(bin)
}

/// The latest modification time of `path` or anything under it.
fn newest_change(path: &Path) -> Option<std::time::SystemTime> {
    let own = std::fs::metadata(path).ok()?.modified().ok();
    let inner = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| newest_change(&e.path()));
    own.into_iter().chain(inner).max()
}

/// Percent-encodes everything but unreserved characters (RFC 3986 §2.3), for URL settings.
pub fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (c as char).to_string(),
            _ => format!("%{c:02X}"),
        })
        .collect()
}
