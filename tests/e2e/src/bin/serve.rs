//! `tokscope-serve [DIR] [ADDR]`: serves the built page, `dist/` (default), on 127.0.0.1:8080 (default),
//! as scripts/run.sh does. The same server the end-to-end tests use.

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "dist".into());
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let root = std::path::Path::new(&dir);
    if !root.join("index.html").is_file() {
        eprintln!("error: {dir}/index.html is missing: build the page first (scripts/run.sh does)");
        std::process::exit(1);
    }
    match tokscope_e2e::server::start(root, &addr) {
        Ok(s) => {
            println!("tokscope: serving {dir} at http://{}/ (Ctrl-C stops)", s.addr);
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    }
}
