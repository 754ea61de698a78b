//! The roofline panel: a model and a device (presets marked "peak", or this device measured),
//! batch and KV cache in, the decode ceiling, the bytes each step reads and a log-log roofline
//! chart out, with the running model's measured decode and prefill points on it. The figures
//! come from `tokscope_core::roofline`; bad input leaves everything at its last valid state.

use super::field::{Field, Slider};
use super::share::Share;
use super::state::State;
use crate::chart::{self, BOTTOM, DataPoint, HEIGHT, LEFT, RIGHT, TOP, WIDTH};
use crate::params::{ROOFLINE_CUSTOM as CUSTOM, ROOFLINE_LOADED as LOADED, ROOFLINE_MEASURED as MEASURED};
use crate::params::{RooflineSettings, Settings};
use crate::protocol::{ModelInfo, ProbeReport};
use crate::route::Panel;
use leptos::prelude::*;
use tokscope_core::human::{bytes, si};
use tokscope_core::presets::{DEVICES, MODELS};
use tokscope_core::roofline::floor::{Floor, FloorInputs};
use tokscope_core::roofline::{GB, decode_point, mbu, prefill_point};

/// What the floor line says before there is a GPU run and a probe to compute it from.
const NO_FLOOR: &str = "Run the speed check with the model on WebGPU to see this device's floor: \
                        bytes ÷ its bandwidth plus the fixed cost of every dispatch and the wait for completion.";

/// The loaded model's last run at its own precision (a record: its rate with its own bytes):
/// decode and prefill points, with decode's MBU against the panel's bandwidth.
#[derive(Clone, Copy, PartialEq)]
struct Measured {
    decode: Option<(f64, f64)>,
    prefill: Option<(f64, f64)>,
    mbu: Option<f64>,
}

fn measured(state: State, bandwidth_gb_s: f64) -> Measured {
    let none = Measured {
        decode: None,
        prefill: None,
        mbu: None,
    };
    let (Some(m), Some(r)) = (state.model.get(), state.own_run.get()) else {
        return none;
    };
    let (p, bytes) = (m.parameters as f64, r.context.bytes_per_token as f64);
    let prefill = match (r.prefill_tok_s, r.prompt_tokens) {
        (Some(rate), Some(n)) if n > 0 => Some(prefill_point(p, r.context.weight_bytes as f64, n as u64, rate)),
        _ => None,
    };
    Measured {
        decode: r.tok_s.map(|t| decode_point(p, bytes, t)),
        prefill,
        mbu: r.tok_s.and_then(|t| mbu(t, bytes, bandwidth_gb_s * GB)),
    }
}

/// Takes the loaded model's figures; a file the calculator cannot use leaves them as they were.
fn follow_loaded(r: RwSignal<RooflineSettings>, m: &ModelInfo) {
    let shape = (m.layers as u32, m.kv_heads as u32, m.head_dim as u32);
    r.update(|s| {
        let _ = s.use_loaded(m.parameters, m.weight_bytes, shape, m.kv_bits);
    });
}

/// Takes the probe's bandwidth, and the running GPU engine's fixed cost per token (the floor
/// model's fixed term) as the calculator's; a probe that measured nothing usable changes nothing.
fn follow_probe(state: State, p: &ProbeReport) {
    let fixed_ms = state
        .model
        .get_untracked()
        .and_then(|m| engine_floor(&m, p, state.steps_per_submit.get_untracked()))
        .map(|(_, f)| f.fixed_s * 1e3);
    state.roofline.update(|s| {
        let _ = s.use_measured(p.read_gb_s, fixed_ms);
    });
}

/// The floor model of the running engine on this device: the probe's bandwidth and fixed
/// costs, the engine's dispatches, the loaded model's bytes (GPU runs only).
fn engine_floor(m: &ModelInfo, p: &ProbeReport, steps_per_submit: Option<f64>) -> Option<(FloorInputs, Floor)> {
    let dispatches = m.backend.dispatches_per_token.filter(|_| m.backend.gpu)?;
    crate::speed::floor_of(
        m.bytes_per_token as f64,
        p.read_gb_s,
        dispatches,
        p.dispatch_us,
        &p.latency,
        steps_per_submit.unwrap_or(1.0),
    )
}

fn pick(state: State, what: &'static str, id: String) {
    let r = state.roofline;
    match (what, id.as_str()) {
        ("model", LOADED) => match state.model.get_untracked() {
            Some(m) => follow_loaded(r, &m),
            None => r.update(|s| s.model_preset = LOADED.into()),
        },
        ("device", MEASURED) => match state.probe.get_untracked() {
            Some(p) => follow_probe(state, &p),
            None => r.update(|s| s.device = MEASURED.into()),
        },
        ("model", _) => r.update(|s| {
            let _ = s.pick_model(&id);
        }),
        _ => r.update(|s| {
            let _ = s.pick_device(&id);
        }),
    }
}

#[component]
pub fn RooflinePanel(state: State) -> impl IntoView {
    let settings = state.roofline;
    // The loaded model and the measured bandwidth follow the engine while they are picked.
    Effect::new(move || {
        if let Some(m) = state.model.get()
            && settings.with_untracked(|s| s.model_preset == LOADED)
        {
            follow_loaded(settings, &m);
        }
    });
    Effect::new(move || {
        if let Some(p) = state.probe.get()
            && settings.with_untracked(|s| s.device == MEASURED)
        {
            follow_probe(state, &p);
        }
    });
    // Settings only ever hold valid inputs, so the estimate always exists.
    let estimate = Memo::new(move |_| settings.with(|s| s.inputs().estimate().ok()));
    let e = move || estimate.get().expect("settings hold valid inputs");
    let meas = Memo::new(move |_| measured(state, settings.with(|s| s.bandwidth_gb_s)));
    let plot = Memo::new(move |_| {
        let s = settings.get();
        let e = e();
        let m = meas.get();
        let pt = |p: Option<(f64, f64)>| {
            p.map_or(
                DataPoint {
                    intensity: f64::NAN,
                    flop_s: f64::NAN,
                },
                |(i, f)| DataPoint {
                    intensity: i,
                    flop_s: f,
                },
            )
        };
        chart::plot(
            s.bandwidth_gb_s * GB,
            s.tflops.map(|t| t * 1e12),
            &[
                DataPoint {
                    intensity: e.arithmetic_intensity,
                    flop_s: e.flops_per_step / e.step_s,
                },
                pt(m.decode),
                pt(m.prefill),
            ],
        )
    });
    let pairs = Signal::derive(move || settings.with(|s| s.to_pairs()));
    let model_name = move || {
        state
            .model
            .get()
            .map(|m| format!("Loaded: {}", m.name))
            .unwrap_or_else(|| "Loaded model (none yet)".into())
    };
    let has_probe = move || state.probe.get().is_some();
    let floor =
        Memo::new(move |_| engine_floor(&state.model.get()?, &state.probe.get()?, state.steps_per_submit.get()));
    let floor_text = move || match floor.get() {
        Some((inputs, f)) => {
            let measured = state
                .meter
                .with(|x| x.mean_tok_s())
                .and_then(|t| f.measured_sentence(t))
                .unwrap_or_default();
            format!("{} {measured}", inputs.sentence(&f))
        }
        None => NO_FLOOR.into(),
    };
    let kv_share = move || {
        let e = e();
        100.0 * e.kv_bytes / e.bytes_per_step
    };
    view! {
        <section class="card roofline" id="roofline" aria-labelledby="roofline-h">
            <h2 id="roofline-h">"Roofline: the ceiling bandwidth sets"</h2>
            <p class="explain">"Each generated token reads every weight once, so tokens per second can be no higher than bandwidth ÷ bytes per token. "
                "Batching shares that read between sequences until compute becomes the limit."</p>
            <div class="fields">
                <label class="field" for="roof-model"><span>"Model"</span>
                    <select id="roof-model" data-testid="roof-model" on:change=move |ev| pick(state, "model", event_target_value(&ev))
                        prop:value=move || settings.with(|s| s.model_preset.clone())>
                        <option value=LOADED>{model_name}</option>
                        {MODELS.iter().map(|m| view! { <option value=m.id title=m.source>{m.name}</option> }).collect_view()}
                        <option value=CUSTOM>"Custom"</option>
                    </select></label>
                <label class="field" for="roof-device"><span>"Device"</span>
                    <select id="roof-device" data-testid="roof-device" on:change=move |ev| pick(state, "device", event_target_value(&ev))
                        prop:value=move || settings.with(|s| s.device.clone())>
                        <option value=MEASURED disabled=move || !has_probe()>"This device, measured (run the speed check)"</option>
                        {DEVICES.iter().map(|d| view! { <option value=d.id title=d.source>{format!("{} (peak)", d.name)}</option> }).collect_view()}
                        <option value=CUSTOM>"Custom"</option>
                    </select></label>
                <Field settings label="Active parameters" key="params" id="roof-params" kind="text" unit="e.g. 8B, 135M" get=|s: &RooflineSettings| si(s.params, "").replace(' ', "").replace('G', "B")/>
                <Field settings label="Bits per weight" key="bits" id="roof-bits" step="0.5" get=|s: &RooflineSettings| format!("{:.3}", s.bits).trim_end_matches('0').trim_end_matches('.').to_string()/>
                <div>
                    <Field settings label="Bandwidth" key="bandwidth" id="roof-bandwidth" unit="GB/s" get=|s: &RooflineSettings| format!("{}", s.bandwidth_gb_s)/>
                    <Slider settings label="bandwidth, log scale" key="bandwidth" id="roof-bandwidth-slider" min=0.0 max=4.0 step=0.01
                        to_slider=|s: &RooflineSettings| s.bandwidth_gb_s.log10() from_slider=|v| format!("{:.3}", 10f64.powf(v))/>
                </div>
                <Field settings label="Peak compute" key="tflops" id="roof-tflops" unit="TFLOP/s; empty: no compute roof" get=|s: &RooflineSettings| s.tflops.map(|t| t.to_string()).unwrap_or_default()/>
                <div>
                    <Field settings label="Batch" key="batch" id="roof-batch" step="1" unit="sequences" get=|s: &RooflineSettings| s.batch.to_string()/>
                    <Slider settings label="batch, powers of two" key="batch" id="roof-batch-slider" min=0.0 max=10.0 step=1.0
                        to_slider=|s: &RooflineSettings| (s.batch as f64).log2() from_slider=|v| format!("{}", 2f64.powf(v).round())/>
                </div>
                <div>
                    <Field settings label="Context in the KV cache" key="context" id="roof-context" step="1" unit="tokens" get=|s: &RooflineSettings| s.context.to_string()/>
                    <Slider settings label="context" key="context" id="roof-context-slider" min=0.0 max=131072.0 step=1024.0
                        to_slider=|s: &RooflineSettings| s.context as f64 from_slider=|v| format!("{v:.0}")/>
                </div>
                <Field settings label="KV bits" key="kv_bits" id="roof-kv-bits" step="1" get=|s: &RooflineSettings| s.kv_bits.to_string()/>
                <Field settings label="Fixed cost per token" key="overhead_ms" id="roof-overhead" unit="ms" get=|s: &RooflineSettings| s.overhead_ms.to_string()/>
            </div>
            <div class="results">
                <div class="big"><span class="figure" data-testid="roof-tok-s">{move || format!("{:.1}", e().per_user_tok_s)}</span>
                    <span class="unit">" tok/s per user (ceiling)"</span></div>
                <dl class="figures">
                    <dt>"Aggregate"</dt><dd><span data-testid="roof-aggregate">{move || format!("{:.1}", e().aggregate_tok_s)}</span>" tok/s"
                        {move || match settings.with(|s| s.batch) { 1 => " for one sequence".to_string(), b => format!(" across {b} sequences") }}</dd>
                    <dt>"Step time"</dt><dd><span data-testid="roof-step-ms">{move || format!("{:.3}", e().step_s * 1e3)}</span>" ms"</dd>
                    <dt>"Bytes per step"</dt><dd data-testid="roof-bytes">{move || bytes(e().bytes_per_step)}</dd>
                    <dt>"Bound by"</dt><dd data-testid="roof-bound">{move || e().bound.as_str()}</dd>
                    <dt>"Arithmetic intensity"</dt><dd><span data-testid="roof-intensity">{move || format!("{:.2}", e().arithmetic_intensity)}</span>" FLOP/byte"
                        {move || e().ridge_point.map(|r| format!(" (ridge at {r:.0})"))}</dd>
                    <dt>"Floor model (this device)"</dt><dd data-testid="roof-floor">{move || floor.get().map_or("–".into(), |(_, f)| format!("{:.1} tok/s (bandwidth alone: {:.1})", f.tok_s, f.ceiling_tok_s))}</dd>
                    <dt>"Measured MBU"</dt><dd data-testid="roof-mbu">{move || meas.get().mbu.map(|m| format!("{:.0} % of {} GB/s", 100.0 * m, settings.with(|s| s.bandwidth_gb_s)))
                        .unwrap_or_else(|| match state.model.get() {
                            Some(_) => "– (generate text to measure)".into(),
                            None => "– (no model running here)".into(),
                        })}</dd>
                </dl>
                <div class="split" role="img" aria-label=move || format!("bytes per step: weights {}, KV cache {}", bytes(e().weight_bytes), bytes(e().kv_bytes))>
                    <div class="weights" style:width=move || format!("{:.1}%", 100.0 - kv_share())></div>
                    <div class="kv" style:width=move || format!("{:.1}%", kv_share())></div>
                </div>
                <p class="explain" data-testid="roof-floor-sentence">{floor_text}</p>
                <p class="caption"><span class="key weights"></span>" weights " <span data-testid="roof-weights">{move || bytes(e().weight_bytes)}</span>
                    " · " <span class="key kv"></span>" KV cache " <span data-testid="roof-kv">{move || bytes(e().kv_bytes)}</span></p>
            </div>
            <div class="chart-wrap" tabindex="0" role="region" aria-label="roofline chart (scrolls sideways on a narrow screen)">
            <svg class="chart" data-testid="roof-chart" data-roof=move || plot.get().roof viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img"
                aria-label="roofline chart: attainable FLOP/s against arithmetic intensity, log-log">
                {move || {
                    let p = plot.get();
                    let (x_ticks, y_ticks) = (p.x_ticks.clone(), p.y_ticks.clone());
                    // Labelled in the reader's units: tok/s at each point, GB/s on the roof.
                    // Right of the point, or left of it in the chart's right half (inside the frame);
                    // above it, or below for prefill, which often sits just under decode.
                    let dot = |i: usize, class: &'static str, label: String| p.points[i].map(|(x, y)| {
                        let (lx, anchor) = if x > WIDTH * 0.55 { (x - 8.0, "end") } else { (x + 8.0, "start") };
                        let ly = if i == 2 { y + 18.0 } else { y - 6.0 };
                        view! { <g class=class><circle cx=x cy=y r="5"/><text x=lx y=ly text-anchor=anchor>{label}</text></g> }
                    });
                    let (bw, tflops) = settings.with(|s| (s.bandwidth_gb_s, s.tflops));
                    let run = state.own_run.get();
                    let decode = run.as_ref().and_then(|r| r.tok_s).map_or(String::new(), |t| match meas.get().mbu {
                        Some(u) => format!("you: {t:.1} tok/s ({:.0} % MBU)", 100.0 * u),
                        None => format!("you: {t:.1} tok/s"),
                    });
                    let prefill = run.and_then(|r| r.prefill_tok_s).map_or(String::new(), |t| format!("prefill: {t:.0} tok/s"));
                    let roof = match tflops {
                        Some(t) => format!("roof: {bw} GB/s × intensity, up to {t} TFLOP/s"),
                        None => format!("roof: {bw} GB/s × intensity"),
                    };
                    view! {
                        <g class="axes">
                            {x_ticks.into_iter().map(|(x, l)| view! { <line x1=x x2=x y1=TOP y2=HEIGHT - BOTTOM/><text x=x y=HEIGHT - BOTTOM + 16.0 text-anchor="middle">{l}</text> }).collect_view()}
                            {y_ticks.into_iter().map(|(y, l)| view! { <line x1=LEFT x2=WIDTH - RIGHT y1=y y2=y/><text x=LEFT - 4.0 y=y + 4.0 text-anchor="end">{l}</text> }).collect_view()}
                            <text x=WIDTH / 2.0 y=HEIGHT - 4.0 text-anchor="middle">"arithmetic intensity (FLOP/byte)"</text>
                            <text transform=format!("translate(11 {}) rotate(-90)", (TOP + HEIGHT - BOTTOM) / 2.0) text-anchor="middle">"attainable FLOP/s"</text>
                            <text class="roof-label" x=LEFT + 8.0 y=TOP + 16.0 data-testid="roof-chart-label">{roof}</text>
                        </g>
                        <polyline class="roof" points=p.roof.clone()/>
                        {p.ridge.map(|(x, y)| view! { <g class="ridge"><circle cx=x cy=y r="3"/><text x=x y=y - 8.0 text-anchor="middle">"ridge"</text></g> })}
                        {dot(0, "pt-estimate", format!("ceiling: {:.1} tok/s", e().per_user_tok_s))}
                        {dot(1, "pt-decode", decode)}
                        {dot(2, "pt-prefill", prefill)}
                    }
                }}
            </svg>
            </div>
            <Share panel=Panel::Roofline pairs/>
        </section>
    }
}
