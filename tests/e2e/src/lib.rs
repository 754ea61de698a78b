//! End-to-end support: a static file server that logs what it serves (so a test can count the
//! model's downloads) and a headless Chromium driven through chromedriver (WebDriver).

pub mod browser;
pub mod server;
pub mod site;
