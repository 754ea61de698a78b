//! The engine's Web Worker (built for wasm32 by Trunk; natively an empty program).

fn main() {
    #[cfg(target_arch = "wasm32")]
    tokscope_web::worker::start();
}
