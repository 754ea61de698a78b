//! A small static file server for `dist/` (`cargo xtask build-web`'s output): correct MIME types (wasm must be
//! `application/wasm` for streaming compilation), CORS open (embeds and model URLs from another
//! origin), and a log of every path requested (and of those sent with cookies).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Every path requested, and those that came with a `Cookie` header (credentials).
#[derive(Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<String>>>, Arc<Mutex<Vec<String>>>);

impl RequestLog {
    /// The paths requested with cookies attached.
    pub fn with_cookies(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }

    /// How many requests asked for a path ending with `suffix`.
    pub fn count(&self, suffix: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|p| p.ends_with(suffix)).count()
    }

    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub struct Server {
    pub addr: SocketAddr,
    pub log: RequestLog,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }
}

/// Serves `root` on `addr` (port 0: any free port) from background threads.
pub fn start(root: &Path, addr: &str) -> std::io::Result<Server> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let log = RequestLog::default();
    let (root, shared) = (root.to_path_buf(), log.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (root, log) = (root.clone(), shared.clone());
            std::thread::spawn(move || {
                let _ = handle(stream, &root, &log);
            });
        }
    });
    Ok(Server { addr, log })
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

/// The file for a URL path, refusing anything that climbs out of `root`.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let path = url_path.split(['?', '#']).next()?;
    let mut out = root.to_path_buf();
    for c in Path::new(path.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    out.is_file().then_some(out)
}

/// The page's Content-Security-Policy (the same as its `<meta>`; the header also reaches the
/// worker's script) and no MIME sniffing. The embed example stands for someone else's
/// article, with its own inline script, so it is served without the app's policy.
fn security_headers(file: &Path) -> String {
    let policy = match file.file_name().and_then(|n| n.to_str()) {
        Some("embed-example.html") => String::new(),
        _ => format!(
            "Content-Security-Policy: {}\r\n",
            tokscope_web::csp::CONTENT_SECURITY_POLICY
        ),
    };
    format!("{policy}X-Content-Type-Options: nosniff\r\n")
}

fn handle(stream: TcpStream, root: &Path, log: &RequestLog) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/").to_string());
        let mut keep_alive = true;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if lower.starts_with("connection:") && lower.contains("close") {
                keep_alive = false;
            }
            if lower.starts_with("cookie:") {
                log.1.lock().unwrap().push(path.clone());
            }
        }
        log.0.lock().unwrap().push(path.clone());
        let cors = "Access-Control-Allow-Origin: *\r\n";
        match (method, resolve(root, &path)) {
            ("GET" | "HEAD", Some(file)) => {
                let mut f = std::fs::File::open(&file)?;
                let len = f.metadata()?.len();
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {len}\r\nCache-Control: no-cache\r\n{cors}{}\r\n",
                    mime(&file),
                    security_headers(&file),
                )?;
                if method == "GET" {
                    let mut buf = vec![0; 1 << 20];
                    loop {
                        let n = f.read(&mut buf)?;
                        if n == 0 {
                            break;
                        }
                        out.write_all(&buf[..n])?;
                    }
                }
            }
            ("GET" | "HEAD", None) => {
                let body = format!("not found: {path}\n");
                write!(
                    out,
                    "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{cors}\r\n{body}",
                    body.len()
                )?;
            }
            _ => {
                write!(out, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?;
                keep_alive = false;
            }
        }
        out.flush()?;
        if !keep_alive {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_outside_the_root() {
        let root = std::env::temp_dir();
        assert!(resolve(&root, "/../etc/passwd").is_none());
        assert!(resolve(&root, "/no-such-file-here.wasm").is_none());
    }

    #[test]
    fn wasm_is_served_as_wasm() {
        assert_eq!(mime(Path::new("a_bg.wasm")), "application/wasm");
    }
}
