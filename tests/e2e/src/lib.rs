//! End-to-end support: a static file server that logs what it serves (so a test can count the
//! model's downloads) and the three browser engines (Chromium, Firefox, WebKitGTK) driven
//! through their WebDriver servers.

pub mod axe;
pub mod browser;
pub mod engine;
mod processes;
pub mod server;
pub mod site;
