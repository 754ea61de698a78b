//! The engine's Web Worker (built for wasm32 by `cargo xtask build-web`; natively an empty program).

fn main() {
    #[cfg(target_arch = "wasm32")]
    tokscope_web::worker::start();
}
