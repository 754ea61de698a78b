//! `cargo xtask build-web [--public-url /path/] [--dist DIR]`: the static page in `dist/`.
//!
//! What a bundler such as Trunk would do for this page, and no more: one release build of the
//! two wasm binaries, `wasm-bindgen` on each (the page as an ES module, the worker for
//! `importScripts`), content-hashed names for what the page loads (so a host may cache them
//! forever), `web/index.html` with the public URL, the stylesheet and the start-up script filled
//! in, and the model and the embed example copied beside it. Doing it here keeps a 500-crate
//! tool out of every fresh machine's set-up (CI builds it from source in about a quarter hour).
//! `wasm-bindgen` must be the CLI at the Cargo.lock version (scripts/setup.sh installs it).

use crate::{root, sha256_hex};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";
const APP: &str = "tokscope-app";
const WORKER: &str = "tokscope-worker";
/// Where `web/index.html` asks for the start-up markup; the placeholders are replaced, so a
/// page built from an index without them fails the build rather than loading nothing.
const BASE_MARK: &str = "<base data-public-url />";
const ASSETS_MARK: &str = "<!-- build-web: stylesheet and start-up script -->";

struct Options {
    public_url: String,
    dist: PathBuf,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        public_url: "/".into(),
        dist: root().join("dist"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--public-url" => opts.public_url = value()?.clone(),
            "--dist" => opts.dist = PathBuf::from(value()?),
            other => return Err(format!("build-web: unknown argument {other}")),
        }
    }
    if !opts.public_url.starts_with('/') && !opts.public_url.contains("://") {
        opts.public_url.insert(0, '/');
    }
    if !opts.public_url.ends_with('/') {
        opts.public_url.push('/');
    }
    Ok(opts)
}

pub fn build_web(args: &[String]) -> Result<(), String> {
    let opts = parse(args)?;
    let root = root();
    run(Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            TARGET,
            "-p",
            "tokscope-web",
        ])
        .args(["--bin", APP, "--bin", WORKER]))?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let wasm_dir = target_dir.join(TARGET).join("release");

    // Built beside the old dist and swapped in at the end: a failed build leaves the last one.
    let staging = opts.dist.with_extension("partial");
    remove_dir(&staging)?;
    std::fs::create_dir_all(&staging).map_err(|e| format!("cannot create {}: {e}", staging.display()))?;

    let app_wasm = wasm_dir.join(format!("{APP}.wasm"));
    let app_name = format!("{APP}-{}", short_hash(&read(&app_wasm)?));
    bindgen(&app_wasm, &staging, &app_name, "web")?;
    bindgen(&wasm_dir.join(format!("{WORKER}.wasm")), &staging, WORKER, "no-modules")?;
    write(
        &staging.join(format!("{WORKER}_loader.js")),
        format!("importScripts(\"./{WORKER}.js\");wasm_bindgen(\"./{WORKER}_bg.wasm\");").as_bytes(),
    )?;

    let web = root.join("web");
    let css = read(&web.join("style.css"))?;
    let css_name = format!("style-{}.css", short_hash(&css));
    write(&staging.join(&css_name), &css)?;
    std::fs::copy(web.join("embed-example.html"), staging.join("embed-example.html"))
        .map_err(|e| format!("cannot copy web/embed-example.html: {e}"))?;
    link_dir(&root.join("public/models"), &staging.join("models"))?;

    let index = String::from_utf8(read(&web.join("index.html"))?).map_err(|e| format!("web/index.html: {e}"))?;
    let html = fill_index(&index, &opts.public_url, &app_name, &css_name)?;
    write(&staging.join("index.html"), html.as_bytes())?;

    remove_dir(&opts.dist)?;
    std::fs::rename(&staging, &opts.dist).map_err(|e| format!("cannot move {} into place: {e}", staging.display()))?;
    println!("{} (public URL {})", opts.dist.display(), opts.public_url);
    Ok(())
}

/// `web/index.html` with the base URL, the stylesheet and the module that starts the page.
fn fill_index(index: &str, public_url: &str, app: &str, css: &str) -> Result<String, String> {
    for mark in [BASE_MARK, ASSETS_MARK] {
        if !index.contains(mark) {
            return Err(format!("web/index.html lacks `{mark}`"));
        }
    }
    let assets = format!(
        "<link rel=\"stylesheet\" href=\"{public_url}{css}\" />\n  \
         <link rel=\"modulepreload\" href=\"{public_url}{app}.js\" />\n  \
         <link rel=\"preload\" href=\"{public_url}{app}_bg.wasm\" as=\"fetch\" type=\"application/wasm\" crossorigin />\n  \
         <script type=\"module\">\n    \
         import init from '{public_url}{app}.js';\n    \
         await init({{ module_or_path: '{public_url}{app}_bg.wasm' }});\n  \
         </script>"
    );
    Ok(index
        .replace(BASE_MARK, &format!("<base href=\"{public_url}\" />"))
        .replace(ASSETS_MARK, &assets))
}

fn bindgen(wasm: &Path, out: &Path, name: &str, target: &str) -> Result<(), String> {
    run(Command::new("wasm-bindgen")
        .args(["--target", target, "--no-typescript", "--out-name", name, "--out-dir"])
        .arg(out)
        .arg(wasm))
}

fn short_hash(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..16].to_string()
}

/// The model directory, hard-linked file by file where the file system allows (it is 100 MB
/// and is built twice in the tests), else copied.
fn link_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("{}: {e} (run `cargo xtask fetch-model`)", from.display()))?;
    for entry in entries.filter_map(Result::ok).filter(|e| e.path().is_file()) {
        let dest = to.join(entry.file_name());
        if std::fs::hard_link(entry.path(), &dest).is_err() {
            std::fs::copy(entry.path(), &dest).map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({status})", cmd.get_program()))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn remove_dir(path: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("cannot remove {}: {e}", path.display())),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_gets_the_public_url_and_the_hashed_assets() {
        let index = format!("<head>{BASE_MARK}\n{ASSETS_MARK}</head>");
        let html = fill_index(&index, "/tokscope/", "tokscope-app-0123", "style-ab.css").unwrap();
        assert!(html.contains("<base href=\"/tokscope/\" />"));
        assert!(html.contains("href=\"/tokscope/style-ab.css\""));
        assert!(html.contains("import init from '/tokscope/tokscope-app-0123.js'"));
        assert!(html.contains("module_or_path: '/tokscope/tokscope-app-0123_bg.wasm'"));
        assert!(!html.contains("build-web:"));
    }

    #[test]
    fn an_index_without_the_marks_is_refused() {
        let err = fill_index("<head></head>", "/", "a", "b").unwrap_err();
        assert!(err.contains(BASE_MARK), "{err}");
    }

    #[test]
    fn public_urls_are_normalised_to_slashes_on_both_ends() {
        let opts = parse(&["--public-url".into(), "tokscope".into()]).unwrap();
        assert_eq!(opts.public_url, "/tokscope/");
        assert!(parse(&["--dist".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
    }
}
