//! tokscope-web: the browser playground. The page (`bin/app.rs`, Leptos) and the engine's
//! worker (`bin/worker.rs`) talk through [`protocol`]; [`params`] reads each panel's settings
//! from the URL and [`route`] which panel it shows. They are plain Rust, tested natively.

pub mod browser;
pub mod chart;
pub mod csp;
pub mod params;
pub mod protocol;
pub mod route;
pub mod speed;

#[cfg(target_arch = "wasm32")]
pub mod worker;

#[cfg(target_arch = "wasm32")]
pub mod app;
