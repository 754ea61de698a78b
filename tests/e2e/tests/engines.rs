//! Everything a reader does, in each of the three browser engines (issue #30): Chromium,
//! Firefox and WebKitGTK, each started once, without WebGPU, going through the same paths in
//! one session — the playground on the CPU engine (the CLI's greedy text, token for token),
//! the model cache, "copy link", the token view, the calculators and their embeds in an article
//! from another origin, the guided path's links, the page's answers to bad input, the
//! Content-Security-Policy, the keyboard and axe-core. Each engine prints the time each path
//! took; WebGPU has its own binary (webgpu.rs).

mod engines {
    pub mod access;
    pub mod bad_input;
    pub mod calculators;
    pub mod guide;
    pub mod run;
    pub mod tokens;
}

use engines::*;
use std::time::Instant;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::engine::{Engine, Options};
use tokscope_e2e::site::{report_time, serve_dist};

/// One browser at a time: the machines running this have two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs every path in `engine`, one after another in one browser, and prints each one's time.
async fn every_path(engine: Engine) {
    let _one = ONE_AT_A_TIME.lock().await;
    let start = Instant::now();
    let server = serve_dist();
    let b = Browser::open(
        engine,
        Options {
            webgpu: false,
            width: 1280,
            height: 1000,
        },
    )
    .await
    .unwrap();
    let mut times = vec![("start", start.elapsed().as_secs_f64())];
    macro_rules! path {
        ($name:literal, $check:expr) => {{
            let t = Instant::now();
            $check.await;
            times.push(($name, t.elapsed().as_secs_f64()));
        }};
    }
    path!("playground", run::cpu_engine_runs_the_clis_text(&b, &server));
    path!("cache", run::the_cache_reloads_and_forgets(&b, &server));
    path!("copy link", run::copy_link_round_trips(&b, &server));
    path!(
        "tokens",
        tokens::the_embed_tokenizes_like_the_cli_from_the_header_alone(&b, &server)
    );
    path!(
        "roofline",
        calculators::roofline_embed_reads_the_url_and_keeps_its_last_valid_state(&b, &server)
    );
    path!(
        "agent",
        calculators::agent_embed_shows_the_seeds_example_and_copy_link_round_trips(&b, &server)
    );
    path!(
        "article",
        calculators::the_example_article_embeds_three_panels_cross_origin(&b)
    );
    path!("guide", guide::every_steps_link_and_next_and_back(&b, &server));
    path!(
        "bad input",
        bad_input::every_bad_model_and_address_is_named_and_nothing_is_lost(&b, &server)
    );
    path!("csp", bad_input::the_content_security_policy_is_in_force(&b, &server));
    path!(
        "keyboard",
        access::tab_reaches_every_control_and_enter_runs_the_model(&b, &server)
    );
    path!("axe", access::axe_finds_no_wcag_a_or_aa_violation(&b, &server));
    b.close().await;
    let line: Vec<String> = times.iter().map(|(n, s)| format!("{n} {s:.1}")).collect();
    report_time(&format!(
        "{}: every reader's path (engines.rs) in {:.0} s ({})",
        engine.name(),
        start.elapsed().as_secs_f64(),
        line.join(", ")
    ));
}

#[tokio::test]
async fn chromium() {
    every_path(Engine::Chromium).await;
}

#[tokio::test]
async fn firefox() {
    every_path(Engine::Firefox).await;
}

#[tokio::test]
async fn webkit() {
    every_path(Engine::WebKit).await;
}
