//! The precision dial: the loaded model re-encoded at Q4_0, Q4_K, Q4_1, Q6_K, Q8_0, F16 and F32
//! in the worker (a K-quant point takes llama.cpp's stand-in type where rows are not whole
//! super-blocks: `requant::encoding`), each decoded on this device, plotted as tok/s against
//! bytes per token over the ceiling the probe's bandwidth sets, listed fewest bytes first.
//! Then the file's own encoding is restored.

use super::link::send;
use super::state::State;
use crate::chart::{self, BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH};
use crate::protocol::{ModelInfo, ToWorker};
use leptos::prelude::*;
use tokscope_core::requant::DIAL;

/// Tokens decoded at each precision.
pub const DIAL_TOKENS: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    Idle,
    /// Re-encoding (then uploading) DIAL[i].
    Encoding(usize),
    Decoding(usize),
    /// Back to the file's own encoding.
    Restoring,
    Done,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub precision: &'static str,
    pub bytes_per_token: u64,
    pub tok_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dial {
    pub stage: Stage,
    pub points: Vec<Point>,
    /// Precisions that could not run here, with why.
    pub skipped: Vec<String>,
}

impl Default for Dial {
    fn default() -> Self {
        Self {
            stage: Stage::Idle,
            points: vec![],
            skipped: vec![],
        }
    }
}

fn encode(state: State, i: usize) {
    state.dial.update(|d| d.stage = Stage::Encoding(i));
    state
        .status
        .set(format!("Precision dial: re-encoding the weights as {}…", DIAL[i]));
    send(
        &ToWorker::Requantize {
            precision: Some(DIAL[i].name().into()),
        },
        None,
    );
}

/// Starts from the first precision. The ceiling curve uses the speed check's probe, when it
/// has run (the dial does not run the probe itself: on a CPU engine there is none).
pub fn start(state: State) {
    state.dial.set(Dial::default());
    encode(state, 0);
}

/// The next step after the model is ready at the stage's precision.
pub fn on_ready(state: State) {
    match state.dial.get_untracked().stage {
        Stage::Encoding(i) => {
            state.dial.update(|d| d.stage = Stage::Decoding(i));
            super::speed_panel::fixed_decode(state, DIAL_TOKENS);
            state
                .status
                .set(format!("Precision dial: decoding {DIAL_TOKENS} tokens at {}…", DIAL[i]));
        }
        Stage::Restoring => state.dial.update(|d| d.stage = Stage::Done),
        _ => {}
    }
}

fn next(state: State, i: usize) {
    match i + 1 < DIAL.len() {
        true => encode(state, i + 1),
        false => {
            state.dial.update(|d| d.stage = Stage::Restoring);
            send(&ToWorker::Requantize { precision: None }, None);
        }
    }
}

/// A decode finished: record its point and move on.
pub fn on_done(state: State, info: Option<ModelInfo>) {
    if let Stage::Decoding(i) = state.dial.get_untracked().stage {
        let tok_s = state.meter.with_untracked(|m| m.mean_tok_s());
        if let (Some(tok_s), Some(info)) = (tok_s, info) {
            state.dial.update(|d| {
                d.points.push(Point {
                    precision: DIAL[i].name(),
                    bytes_per_token: info.bytes_per_token,
                    tok_s,
                });
                d.points.sort_by_key(|p| p.bytes_per_token);
            });
        }
        next(state, i);
    }
}

/// A precision that failed (too big for this page or device) is skipped, not the whole dial.
/// Returns whether the dial took the error.
pub fn on_error(state: State, message: &str) -> bool {
    match state.dial.get_untracked().stage {
        Stage::Encoding(i) | Stage::Decoding(i) => {
            state.dial.update(|d| d.skipped.push(format!("{}: {message}", DIAL[i])));
            next(state, i);
            true
        }
        Stage::Restoring => {
            state.dial.update(|d| {
                d.skipped.push(format!("restoring the file's encoding: {message}"));
                d.stage = Stage::Done;
            });
            false
        }
        _ => false,
    }
}

#[component]
pub fn DialPanel(state: State) -> impl IntoView {
    let busy = move || !matches!(state.dial.get().stage, Stage::Idle | Stage::Done);
    let ready = move || state.model.get().is_some() && !state.running.get() && !busy();
    let probe_gb_s = move || state.probe.get().map(|p| p.read_gb_s);
    let plot = Memo::new(move |_| {
        let pts: Vec<(f64, f64)> = state
            .dial
            .with(|d| d.points.iter().map(|p| (p.bytes_per_token as f64, p.tok_s)).collect());
        chart::dial(&pts, probe_gb_s().map(|g| g * 1e9))
    });
    view! {
        <div class="dial" data-testid="dial">
            <h3>"Precision dial"</h3>
            <p class="explain">"The same weights re-encoded at seven precisions (Q4_K and Q6_K take llama.cpp's Q5_0 and Q8_0 where rows are not whole 256-value super-blocks), each decoded here. If decoding is bandwidth-bound, "
                "tok/s falls as bytes per token rise, along the ceiling bandwidth ÷ bytes (drawn once the speed check has measured the bandwidth)."</p>
            <Show when=move || state.model.get().is_some_and(|m| !m.backend.gpu)>
                <p class="note">"On the CPU engine, unpacking each format costs arithmetic as well as bytes (F16 most of all, "
                    "with no half-precision instructions in WebAssembly), so the points need not follow the bytes."</p>
            </Show>
            <button data-testid="dial-run" disabled=move || !ready() on:click=move |_| start(state)>"Run the precision dial"</button>
            <p class="caption" data-testid="dial-stage" aria-live="polite">{move || match state.dial.get().stage {
                Stage::Idle => String::new(),
                Stage::Encoding(i) => format!("Re-encoding as {}…", DIAL[i]),
                Stage::Decoding(i) => format!("Decoding {DIAL_TOKENS} tokens at {}…", DIAL[i]),
                Stage::Restoring => "Restoring the file's own encoding…".into(),
                Stage::Done => "Done.".into(),
            }}</p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="precision dial results"><table class="dial-table">
                <thead><tr><th>"Precision"</th><th>"MB per token"</th><th>"Decode tok/s"</th><th>"Effective GB/s"</th><th>"Ceiling tok/s"</th><th>"of ceiling"</th></tr></thead>
                <tbody>{move || state.dial.get().points.into_iter().map(|p| {
                    let ceiling = probe_gb_s().map(|g| g * 1e9 / p.bytes_per_token as f64);
                    view! {
                        <tr data-testid=format!("dial-row-{}", p.precision)>
                            <td>{p.precision}</td>
                            <td>{format!("{:.1}", p.bytes_per_token as f64 / 1e6)}</td>
                            <td data-testid=format!("dial-tok-s-{}", p.precision)>{format!("{:.1}", p.tok_s)}</td>
                            <td>{format!("{:.2}", p.tok_s * p.bytes_per_token as f64 / 1e9)}</td>
                            <td>{ceiling.map_or("–".into(), |c| format!("{c:.1}"))}</td>
                            <td>{ceiling.map_or("–".into(), |c| format!("{:.0} %", 100.0 * p.tok_s / c))}</td>
                        </tr>
                    }
                }).collect_view()}</tbody>
            </table></div>
            {move || state.dial.get().skipped.into_iter().map(|s| view! { <p class="note" data-testid="dial-skipped">{format!("Skipped {s}")}</p> }).collect_view()}
            <svg class="chart" data-testid="dial-chart" viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img"
                aria-label="decode tok/s against bytes per token, log-log, with the bandwidth ceiling">
                {move || {
                    let p = plot.get();
                    view! {
                        <g class="axes">
                            {p.x_ticks.into_iter().map(|(x, l)| view! { <line x1=x x2=x y1=TOP y2=HEIGHT - BOTTOM/><text x=x y=HEIGHT - BOTTOM + 16.0 text-anchor="middle">{l}</text> }).collect_view()}
                            {p.y_ticks.into_iter().map(|(y, l)| view! { <line x1=LEFT x2=WIDTH - RIGHT y1=y y2=y/><text x=LEFT - 4.0 y=y + 4.0 text-anchor="end">{l}</text> }).collect_view()}
                            <text x=WIDTH / 2.0 y=HEIGHT - 4.0 text-anchor="middle">"bytes per token"</text>
                        </g>
                        {p.ceiling.map(|c| view! { <polyline class="roof" points=c/> })}
                        {p.points.into_iter().map(|(x, y)| view! { <g class="pt-decode"><circle cx=x cy=y r="5"/></g> }).collect_view()}
                    }
                }}
            </svg>
        </div>
    }
}
