//! The precision dial: the loaded model re-encoded at Q4_0, Q4_K, Q4_1, Q6_K, Q8_0, F16 and F32
//! in the worker (a K-quant point takes llama.cpp's stand-in type where rows are not whole
//! super-blocks: `requant::encoding`), each decoded on this device, plotted as tok/s against
//! bytes per token over the ceiling the probe's bandwidth sets, listed fewest bytes first.
//! Then the file's own encoding is restored.

use super::state::State;
use super::state::apply::DIAL_TOKENS;
use super::state::stages::DialStage as Stage;
use crate::chart::{self, BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH};
use leptos::prelude::*;
use tokscope_core::record::RunRecord;
use tokscope_core::requant::DIAL;

/// The precision a dial point was decoded at.
pub fn precision(r: &RunRecord) -> String {
    r.context.encoding.clone().unwrap_or_default()
}

#[component]
pub fn DialPanel(state: State) -> impl IntoView {
    let ready = move || state.busy().is_none();
    let probe_gb_s = move || state.probe.get().map(|p| p.read_gb_s);
    let plot = Memo::new(move |_| {
        let pts: Vec<(f64, f64)> = state.dial.with(|d| {
            d.points
                .iter()
                .filter_map(|p| Some((p.context.bytes_per_token as f64, p.tok_s?)))
                .collect()
        });
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
            <button data-testid="dial-run" disabled=move || !ready() on:click=move |_| state.start_dial()>"Run the precision dial"</button>
            <super::Why state testid="dial-why"/>
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
                    let bytes = p.context.bytes_per_token as f64;
                    let ceiling = probe_gb_s().map(|g| g * 1e9 / bytes);
                    let (name, tok_s) = (precision(&p), p.tok_s.unwrap_or(f64::NAN));
                    view! {
                        <tr data-testid=format!("dial-row-{name}")>
                            <td>{name.clone()}</td>
                            <td>{format!("{:.1}", bytes / 1e6)}</td>
                            <td data-testid=format!("dial-tok-s-{name}")>{format!("{tok_s:.1}")}</td>
                            <td>{p.effective_gb_s().map_or("–".into(), |g| format!("{g:.2}"))}</td>
                            <td>{ceiling.map_or("–".into(), |c| format!("{c:.1}"))}</td>
                            <td>{ceiling.map_or("–".into(), |c| format!("{:.0} %", 100.0 * tok_s / c))}</td>
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
