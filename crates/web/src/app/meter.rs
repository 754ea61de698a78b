//! The decode meter beside the text: live and mean tok/s, time to first token, total response
//! time, prefill tok/s, tokens generated, a per-token latency sparkline, and the rate in words
//! per minute against the reading line. The figures come from `tokscope_core::meter`; once a
//! run ends they are its record's, and the meter says which run that was.

use super::state::State;
use leptos::prelude::*;
use tokscope_core::meter::{READING_WPM, WORDS_PER_TOKEN, reading_tok_s, words_per_minute};
use tokscope_core::text_stats::{MIN_TOKENS_FOR_RATIO, measured_words_per_token};

/// Tokens the sparkline shows (the most recent).
const SPARK_TOKENS: usize = 96;

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "–".into())
}

/// SVG polyline points for latencies (ms), scaled to a 200 × 40 box.
fn spark_points(latencies: &[f64]) -> String {
    let from = latencies.len().saturating_sub(SPARK_TOKENS);
    let xs = &latencies[from..];
    let max = xs.iter().cloned().fold(1e-9, f64::max);
    let step = 200.0 / (SPARK_TOKENS - 1) as f64;
    xs.iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", i as f64 * step, 40.0 - 38.0 * v / max))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The meter's figures in one line under the run's output, for screens too narrow to put the
/// meter beside the run (style.css shows it below 760 px, pinned to the bottom of the view
/// while the run is on screen): the rate stays in sight as the text arrives. The full meter,
/// which screen readers get, follows the run.
#[component]
pub fn RunRate(state: State) -> impl IntoView {
    let line = move || {
        let (now, mean) = state.meter.with(|m| (m.current_tok_s(), m.mean_tok_s()));
        format!(
            "{} tok/s now · {} mean · {} tokens",
            fmt(now, 1),
            fmt(mean, 1),
            state.generated.get()
        )
    };
    view! { <p class="run-rate" aria-hidden="true" data-testid="run-rate">{line}</p> }
}

#[component]
pub fn Meter(state: State) -> impl IntoView {
    let current = move || state.meter.with(|m| m.current_tok_s());
    let mean = move || state.meter.with(|m| m.mean_tok_s());
    // Words per token measured on the text being generated, once it is long enough; until then
    // the rule of thumb, and the line says which.
    let measured = move || measured_words_per_token(state.output_words.get(), state.generated.get());
    let ratio = move || measured().unwrap_or(WORDS_PER_TOKEN);
    let wpm = move || mean().or(current()).map(|r| words_per_minute(r, ratio()));
    let ratio_line = move || match measured() {
        Some(r) => format!(" at {r:.2} words a token, measured on this text."),
        None => format!(
            " at {WORDS_PER_TOKEN} words a token (a rule of thumb for English, until {MIN_TOKENS_FOR_RATIO} tokens are generated)."
        ),
    };
    // The bar's scale: the reading line sits at a quarter unless the rate is far above it.
    let scale = move || (READING_WPM * 4.0).max(wpm().unwrap_or(0.0) * 1.1);
    let latest_ms = move || state.meter.with(|m| m.latencies().last().map(|s| s * 1e3));
    // Time to first token + every later token's time: live while a run goes, then its record's.
    let total_s = move || match (state.generating(), state.last_run.get()) {
        (false, Some(r)) => r.total_s,
        _ => state.ttft_s.get().map(|t| t + state.meter.with(|m| m.total_s())),
    };
    // Chained WebGPU steps come back a chunk at a time: each token's time is its share.
    let how_timed = move || {
        state.steps_per_submit.get().map(|k| {
            format!(" (WebGPU chained {k:.1} steps a submit: each token's time is its chunk's time ÷ its tokens)")
        })
    };
    let whose = move || match (state.in_flight.get(), state.last_run.get()) {
        (Some(f), _) => format!("Now: {}.", f.kind.what()),
        (None, Some(r)) => format!(
            "Last run: {}, {} on {}.",
            r.kind.what(),
            r.context.model,
            r.context.engine
        ),
        (None, None) => String::new(),
    };
    view! {
        <section class="card meter" aria-labelledby="meter-h">
            <h2 id="meter-h">"Decode meter"</h2>
            <div class="big">
                <span class="figure" data-testid="tok-s">{move || fmt(current(), 1)}</span>
                <span class="unit">" tok/s now"</span>
            </div>
            <dl class="figures">
                <dt>"Mean"</dt><dd><span data-testid="tok-s-mean">{move || fmt(mean(), 1)}</span>" tok/s"</dd>
                <dt>"Time to first token"</dt>
                <dd><span data-testid="ttft">{move || fmt(state.ttft_s.get().map(|s| s * 1e3), 0)}</span>" ms"</dd>
                <dt>"Total response time"</dt>
                <dd><span data-testid="total-time">{move || fmt(total_s(), 2)}</span>" s"</dd>
                <dt>"Prefill"</dt>
                <dd><span data-testid="prefill-tok-s">{move || fmt(state.prefill_tok_s.get(), 1)}</span>" tok/s"
                    {move || state.prompt_tokens.get().map(|n| format!(" ({n} prompt tokens)"))}</dd>
                <dt>"Tokens generated"</dt><dd data-testid="generated">{move || state.generated.get()}</dd>
                <dt>"Last token"</dt><dd>{move || fmt(latest_ms(), 1)}" ms"</dd>
            </dl>
            <p class="caption" data-testid="meter-run">{whose}</p>
            <svg class="spark" viewBox="0 0 200 40" preserveAspectRatio="none" role="img"
                aria-label="latency of each generated token (taller is slower)">
                <polyline points=move || state.meter.with(|m| spark_points(m.latencies()))/>
            </svg>
            <p class="caption">"Per-token latency, last " {SPARK_TOKENS} " tokens"
                <span data-testid="meter-chain">{how_timed}</span></p>
            <div class="wpm" aria-label="words per minute against reading speed">
                <div class="bar"><div class="fill" style:width=move || format!("{:.1}%", 100.0 * wpm().unwrap_or(0.0) / scale())></div>
                    <div class="line" style:left=move || format!("{:.1}%", 100.0 * READING_WPM / scale())
                        title="reading speed"></div></div>
                <p>
                    <span data-testid="wpm">{move || fmt(wpm(), 0)}</span>" words/min"
                    <span data-testid="wpm-ratio">{ratio_line}</span>
                    {format!(" People read about {READING_WPM:.0} (≈{:.1} tok/s at {WORDS_PER_TOKEN} words a token).", reading_tok_s())}
                </p>
            </div>
        </section>
    }
}
