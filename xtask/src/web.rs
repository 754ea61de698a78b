//! `cargo xtask build-web [--public-url /path/] [--dist DIR]`: the static page in `dist/`.
//!
//! What a bundler such as Trunk would do for this page, and no more: one release build of the
//! two wasm binaries, `wasm-bindgen` on each (the page as an ES module, the worker for
//! `importScripts`), content-hashed names for what the page loads (so a host may cache them
//! forever), `web/index.html` with the public URL, the stylesheet and the start-up script filled
//! in (as files: the page's Content-Security-Policy, in a `<meta>`, allows no inline script), and the
//! model and the embed example copied beside it. Doing it here keeps a 500-crate
//! tool out of every fresh machine's set-up (CI builds it from source in about a quarter hour).
//! Contributors who have Trunk get the same page from `trunk serve` (Trunk.toml): the index's
//! `data-trunk` links are Trunk's, and this build puts its own files in their place.
//! `wasm-bindgen` must be the CLI at the Cargo.lock version (scripts/setup.sh installs it).

use crate::{root, sha256_hex};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";
const APP: &str = "tokscope-app";
const WORKER: &str = "tokscope-worker";
/// Cargo.toml's profile for the page's wasm (size-optimised around an opt-level 3 engine).
const PROFILE: &str = "wasm-release";
/// Where `web/index.html` asks for the start-up markup; the placeholders are replaced, so a
/// page built from an index without them fails the build rather than loading nothing.
const BASE_MARK: &str = "<base data-trunk-public-url />";
/// The index's Trunk links, from this mark to [`ASSETS_END`], give way to this build's files.
const ASSETS_MARK: &str = "<!-- Trunk's assets (cargo xtask build-web puts its own here) -->";
const ASSETS_END: &str = "<!-- end of Trunk's assets -->";
const CSP_MARK: &str = "<!-- build-web: content security policy -->";

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
            "--profile",
            PROFILE,
            "--locked",
            "--target",
            TARGET,
            "-p",
            "tokscope-web",
        ])
        .args(["--bin", APP, "--bin", WORKER]))?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let wasm_dir = target_dir.join(TARGET).join(PROFILE);

    // Built beside the old dist and swapped in at the end: a failed build leaves the last one.
    let staging = opts.dist.with_extension("partial");
    remove_dir(&staging)?;
    std::fs::create_dir_all(&staging).map_err(|e| format!("cannot create {}: {e}", staging.display()))?;

    let app_wasm = wasm_dir.join(format!("{APP}.wasm"));
    let app_name = format!("{APP}-{}", short_hash(&read(&app_wasm)?));
    bindgen(&app_wasm, &staging, &app_name, "web")?;
    let worker_wasm = wasm_dir.join(format!("{WORKER}.wasm"));
    let worker_name = format!("{WORKER}-{}", short_hash(&read(&worker_wasm)?));
    bindgen(&worker_wasm, &staging, &worker_name, "no-modules")?;
    let loader = format!("importScripts(\"./{worker_name}.js\");wasm_bindgen(\"./{worker_name}_bg.wasm\");");
    let loader_name = format!("{worker_name}_loader.js");
    write(&staging.join(&loader_name), loader.as_bytes())?;

    let web = root.join("web");
    let css = read(&web.join("style.css"))?;
    let css_name = format!("style-{}.css", short_hash(&css));
    write(&staging.join(&css_name), &css)?;
    std::fs::copy(web.join("embed-example.html"), staging.join("embed-example.html"))
        .map_err(|e| format!("cannot copy web/embed-example.html: {e}"))?;
    link_dir(&root.join("public/models"), &staging.join("models"))?;

    // The start-up scripts as files, content-hashed: the page's policy allows no inline script.
    let errors = read(&web.join("errors.js"))?;
    let errors_name = format!("errors-{}.js", short_hash(&errors));
    write(&staging.join(&errors_name), &errors)?;
    let start = start_script(&opts.public_url, &app_name);
    let start_name = format!("start-{}.js", short_hash(start.as_bytes()));
    write(&staging.join(&start_name), start.as_bytes())?;

    let index = String::from_utf8(read(&web.join("index.html"))?).map_err(|e| format!("web/index.html: {e}"))?;
    let assets = Assets {
        app: &app_name,
        css: &css_name,
        errors: &errors_name,
        start: &start_name,
        worker: &loader_name,
    };
    let html = fill_index(&index, &opts.public_url, &assets)?;
    write(&staging.join("index.html"), html.as_bytes())?;
    let weight = precompress(&staging)?;

    remove_dir(&opts.dist)?;
    std::fs::rename(&staging, &opts.dist).map_err(|e| format!("cannot move {} into place: {e}", staging.display()))?;
    println!("{} (public URL {})", opts.dist.display(), opts.public_url);
    println!(
        "page weight: {} bytes gzip, {} bytes brotli (wasm, JS and CSS)",
        weight.gzip, weight.brotli
    );
    Ok(())
}

/// `web/index.html` with the base URL, the stylesheet and the module that starts the page.
/// The names of the files `index.html` loads.
struct Assets<'a> {
    app: &'a str,
    css: &'a str,
    errors: &'a str,
    start: &'a str,
    /// The worker's loader, content-hashed like the rest (the page reads its name from a meta tag).
    worker: &'a str,
}

/// The module that starts the page: the app's bindings, then its wasm.
fn start_script(public_url: &str, app: &str) -> String {
    format!(
        "import init from '{public_url}{app}.js';\nawait init({{ module_or_path: '{public_url}{app}_bg.wasm' }});\n"
    )
}

/// The origin of an absolute public URL (`https://cdn.example/tokscope/` → `https://cdn.example`).
fn origin(public_url: &str) -> Option<&str> {
    let (scheme, rest) = public_url.split_once("://")?;
    let host = rest.split('/').next()?;
    Some(&public_url[..scheme.len() + 3 + host.len()])
}

fn fill_index(index: &str, public_url: &str, a: &Assets) -> Result<String, String> {
    for mark in [CSP_MARK, BASE_MARK, ASSETS_MARK, ASSETS_END] {
        if !index.contains(mark) {
            return Err(format!("web/index.html lacks `{mark}`"));
        }
    }
    let (head, trunk) = index.split_once(ASSETS_MARK).expect("checked above");
    let tail = trunk
        .split_once(ASSETS_END)
        .map(|(_, tail)| tail)
        .ok_or_else(|| format!("web/index.html: `{ASSETS_END}` comes before `{ASSETS_MARK}`"))?;
    let policy = tokscope_web::csp::content_security_policy(origin(public_url));
    let (app, css, errors, start, worker) = (a.app, a.css, a.errors, a.start, a.worker);
    let assets = format!(
        "<meta name=\"tokscope-worker\" content=\"{worker}\" />\n  \
         <link rel=\"stylesheet\" href=\"{public_url}{css}\" />\n  \
         <script src=\"{public_url}{errors}\"></script>\n  \
         <link rel=\"modulepreload\" href=\"{public_url}{app}.js\" />\n  \
         <link rel=\"preload\" href=\"{public_url}{app}_bg.wasm\" as=\"fetch\" type=\"application/wasm\" crossorigin />\n  \
         <script type=\"module\" src=\"{public_url}{start}\"></script>"
    );
    Ok(format!("{head}{assets}{tail}")
        .replace(
            CSP_MARK,
            &format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\" />"),
        )
        .replace(BASE_MARK, &format!("<base href=\"{public_url}\" />")))
}

/// `--remove-name-section`: the function names are for debuggers, not readers (≈0.2 MB of
/// the page's gzip weight); panics still print their messages.
fn bindgen(wasm: &Path, out: &Path, name: &str, target: &str) -> Result<(), String> {
    run(Command::new("wasm-bindgen")
        .args([
            "--target",
            target,
            "--no-typescript",
            "--remove-name-section",
            "--out-name",
            name,
            "--out-dir",
        ])
        .arg(out)
        .arg(wasm))
}

/// What a reader downloads for the page before the model (every wasm, JS and CSS file),
/// compressed as a server sends it.
struct Weight {
    gzip: u64,
    brotli: u64,
}

/// Writes `.gz` (zopfli: standard gzip that every browser reads, ≈ 5 % smaller than level 9)
/// and `.br` (quality 11) beside every HTML, wasm, JS and CSS file in `dir`, for a server that
/// sends precompressed copies (tokscope-serve does), and sums the page's weight from them. The
/// files compress on threads of their own: the worker's wasm takes most of the time.
fn precompress(dir: &Path) -> Result<Weight, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("html" | "wasm" | "js" | "css")
            )
        })
        .collect();
    let sizes = std::thread::scope(|s| {
        let jobs: Vec<_> = files
            .iter()
            .map(|path| s.spawn(move || compress_beside(path)))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().unwrap_or_else(|_| Err("a compression thread panicked".into())))
            .collect::<Result<Vec<_>, String>>()
    })?;
    let mut weight = Weight { gzip: 0, brotli: 0 };
    for (path, (gzip, brotli)) in files.iter().zip(sizes) {
        if path.extension().is_some_and(|e| e != "html") {
            weight.gzip += gzip;
            weight.brotli += brotli;
        }
    }
    Ok(weight)
}

/// `path.gz` and `path.br`; their sizes.
fn compress_beside(path: &Path) -> Result<(u64, u64), String> {
    let bytes = read(path)?;
    let mut gz = Vec::new();
    // Five iterations compress as well as fifteen here; more block splits than the default 15
    // take 20 kB off the two wasm files (1,208 → 1,189 kB in all; no gain past 200) for ≈ 10 s.
    let options = zopfli::Options {
        iteration_count: std::num::NonZeroU64::new(5).expect("not zero"),
        maximum_block_splits: 200,
        ..Default::default()
    };
    zopfli::compress(options, zopfli::Format::Gzip, bytes.as_slice(), &mut gz).map_err(|e| e.to_string())?;
    let mut br = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut bytes.as_slice(), &mut br, &params).map_err(|e| e.to_string())?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    write(&path.with_file_name(format!("{name}.gz")), &gz)?;
    write(&path.with_file_name(format!("{name}.br")), &br)?;
    Ok((gz.len() as u64, br.len() as u64))
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
    fn the_index_gets_the_public_url_the_policy_and_the_hashed_assets() {
        let trunk = "<link data-trunk rel=\"rust\" data-bin=\"tokscope-app\" />";
        let index = format!("<head>{CSP_MARK}\n{BASE_MARK}\n{ASSETS_MARK}{trunk}{ASSETS_END}</head>");
        let assets = Assets {
            app: "tokscope-app-0123",
            css: "style-ab.css",
            errors: "errors-cd.js",
            start: "start-ef.js",
            worker: "tokscope-worker-12_loader.js",
        };
        let html = fill_index(&index, "/tokscope/", &assets).unwrap();
        assert!(html.contains("<base href=\"/tokscope/\" />"));
        assert!(html.contains("href=\"/tokscope/style-ab.css\""));
        assert!(html.contains("<meta name=\"tokscope-worker\" content=\"tokscope-worker-12_loader.js\" />"));
        assert!(html.contains("<script src=\"/tokscope/errors-cd.js\"></script>"));
        assert!(html.contains("<script type=\"module\" src=\"/tokscope/start-ef.js\"></script>"));
        let policy = tokscope_web::csp::CONTENT_SECURITY_POLICY;
        assert!(html.contains(&format!("http-equiv=\"Content-Security-Policy\" content=\"{policy}\"")));
        assert!(!html.contains("build-web:"));
        assert!(
            !html.contains("data-trunk") && !html.contains("Trunk's assets"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "no inline script: {html}");
        let start = start_script("/tokscope/", "tokscope-app-0123");
        assert!(start.contains("import init from '/tokscope/tokscope-app-0123.js'"));
        assert!(start.contains("module_or_path: '/tokscope/tokscope-app-0123_bg.wasm'"));
    }

    #[test]
    fn an_absolute_public_url_adds_its_origin_to_the_policy() {
        assert_eq!(origin("https://cdn.example/tokscope/"), Some("https://cdn.example"));
        assert_eq!(origin("/tokscope/"), None);
        let index = format!("{CSP_MARK}{BASE_MARK}{ASSETS_MARK}{ASSETS_END}");
        let assets = Assets {
            app: "a",
            css: "b",
            errors: "c",
            start: "d",
            worker: "e",
        };
        let html = fill_index(&index, "https://cdn.example/t/", &assets).unwrap();
        assert!(
            html.contains("script-src 'self' https://cdn.example 'wasm-unsafe-eval'"),
            "{html}"
        );
    }

    #[test]
    fn an_index_without_the_marks_is_refused() {
        let assets = Assets {
            app: "a",
            css: "b",
            errors: "c",
            start: "d",
            worker: "e",
        };
        let err = fill_index("<head></head>", "/", &assets).unwrap_err();
        assert!(err.contains(CSP_MARK), "{err}");
        let backwards = format!("{CSP_MARK}{BASE_MARK}{ASSETS_END}{ASSETS_MARK}");
        let err = fill_index(&backwards, "/", &assets).unwrap_err();
        assert!(err.contains("comes before"), "{err}");
    }

    #[test]
    fn public_urls_are_normalised_to_slashes_on_both_ends() {
        let opts = parse(&["--public-url".into(), "tokscope".into()]).unwrap();
        assert_eq!(opts.public_url, "/tokscope/");
        assert!(parse(&["--dist".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
    }
}
