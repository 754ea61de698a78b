//! tokscope-web: the browser playground. The page (`bin/app.rs`, Leptos) and the engine's
//! worker (`bin/worker.rs`) talk through [`protocol`]; [`params`] reads a run from the URL.
//! Both modules are plain Rust, tested natively.

pub mod params;
pub mod protocol;

#[cfg(target_arch = "wasm32")]
pub mod worker;

#[cfg(target_arch = "wasm32")]
pub mod app;
