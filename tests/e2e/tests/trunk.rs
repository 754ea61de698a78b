//! Trunk, for contributors (Trunk.toml): where `trunk` is on PATH, `trunk serve --release` builds
//! the page from web/index.html's `data-trunk` links, serves it with the worker, and the page
//! loads the model and generates; its files are the xtask build's, name for name. Where Trunk
//! is missing (CI, a fresh machine: the README's commands do not install it) the test says so
//! and passes.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, dist, root};

/// `trunk serve` until the test ends, passed or not.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The files a build writes, with content hashes and the xtask build's compressed copies left
/// out: `tokscope-app-0123abcd_bg.wasm` → `tokscope-app_bg.wasm`.
fn file_set(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.ends_with(".gz") && !name.ends_with(".br"))
        .map(|name| {
            let (stem, rest) = name
                .split_once(['.', '_'])
                .map_or((name.as_str(), ""), |(s, _)| (s, &name[s.len()..]));
            let stem = match stem.rsplit_once('-') {
                Some((base, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => base,
                _ => stem,
            };
            format!("{stem}{rest}")
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn trunk_serves_the_page_the_xtask_build_makes() {
    if Command::new("trunk").arg("--version").output().is_err() {
        println!("skipped: trunk is not on PATH (cargo install trunk --version 0.21.14 --locked)");
        return;
    }
    let out = root().join("target/trunk-dist");
    let port = free_port();
    let child = Command::new("trunk")
        .args([
            "serve",
            "--release",
            "--no-autoreload",
            "--offline",
            "--port",
            &port.to_string(),
            "--dist",
        ])
        .arg(&out)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("trunk starts");
    let _serving = Serving(child);

    // The first build may compile the wasm (the xtask build's artifacts are reused: the same profile).
    let start = Instant::now();
    let url = format!("http://127.0.0.1:{port}/");
    while status_of(port) != Some(200) {
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "trunk serve answered nothing in 15 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("trunk serve answered after {:.1} s", start.elapsed().as_secs_f64());

    let trunk = file_set(&out);
    let xtask = file_set(&dist());
    println!("trunk: {trunk:?}");
    // The xtask build starts the page from a file (its policy allows no inline script); Trunk
    // inlines that start. Everything else is the same set.
    let only_xtask: Vec<_> = xtask.difference(&trunk).collect();
    let only_trunk: Vec<_> = trunk.difference(&xtask).collect();
    assert_eq!(only_xtask, ["start.js"], "files only the xtask build writes");
    assert!(only_trunk.is_empty(), "files only Trunk writes: {only_trunk:?}");

    let b = Browser::launch(false, 1280, 900).await.unwrap();
    b.client
        .goto(&format!(
            "{url}index.html?backend=cpu&prompt=Hello&max_tokens=4&temperature=0&autorun=1"
        ))
        .await
        .unwrap();
    b.wait_for(DONE, Duration::from_secs(180)).await.unwrap();
    assert_eq!(b.text("generated").await, "4");
    assert!(b.page_errors().await.is_empty(), "{:?}", b.page_errors().await);
    b.close().await;
}

/// The status of `GET /` on `port`, or `None` while nothing answers (Trunk still building).
fn status_of(port: u16) -> Option<u16> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
