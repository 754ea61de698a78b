//! The agent panel: an agent loop's shape in, its wall-clock time at up to three decode speeds
//! out, side by side, with a timeline of each step's phases on one time scale and the pace at
//! which a person reads the same visible text. The figures come from `tokscope_core::agent`.

use super::field::Field;
use super::share::Share;
use super::state::State;
use crate::chart::{Phase, timeline};
use crate::params::{AGENT_PRESETS, AgentSettings, Settings, Speed};
use crate::route::Panel;
use leptos::prelude::*;
use tokscope_core::agent::{AgentInputs, AgentRun};
use tokscope_core::human::{count, duration};
use tokscope_core::meter::{READING_WPM, reading_tok_s};
use tokscope_core::presets;

/// A speed resolved to a rate (or why it has none yet), with its label.
#[derive(Clone, PartialEq)]
struct Column {
    label: String,
    run: Result<(AgentInputs, AgentRun), String>,
}

fn resolve(state: State, speed: &Speed) -> (String, Result<f64, String>) {
    match speed {
        Speed::Fixed(v) => (format!("{v} tok/s"), Ok(*v)),
        Speed::Measured => (
            "this device, measured".into(),
            state
                .meter
                .with(|m| m.mean_tok_s())
                .ok_or_else(|| "not measured yet: generate some text first".to_string()),
        ),
        Speed::Ceiling => (
            "roofline ceiling".into(),
            state.roofline.with(|s| {
                s.inputs()
                    .estimate()
                    .map(|e| e.per_user_tok_s)
                    .map_err(|e| e.to_string())
            }),
        ),
        Speed::Claim(id) => {
            let c = presets::claim(id).expect("parsed claims exist");
            (c.label.into(), Ok(c.tok_s))
        }
    }
}

fn columns(state: State) -> Vec<Column> {
    let s = state.agent.get();
    s.speeds
        .iter()
        .map(|speed| {
            let (label, rate) = resolve(state, speed);
            let run = rate.and_then(|r| {
                let inputs = AgentInputs {
                    decode_tok_s: r,
                    ..s.shape
                };
                inputs.simulate().map(|run| (inputs, run)).map_err(|e| e.to_string())
            });
            Column { label, run }
        })
        .collect()
}

const ROW: f64 = 26.0;
const CHART_W: f64 = 480.0;

#[component]
pub fn AgentPanel(state: State) -> impl IntoView {
    let settings = state.agent;
    let cols = Memo::new(move |_| columns(state));
    let pairs = Signal::derive(move || settings.with(|s| s.to_pairs()));
    let visible = move || settings.with(|s| s.shape.output_tokens * s.shape.steps as u64);
    let reading_s = move || visible() as f64 / reading_tok_s();
    let rows = Memo::new(move |_| {
        let cs = cols.get();
        let runs: Vec<&AgentRun> = cs.iter().filter_map(|c| c.run.as_ref().ok().map(|(_, r)| r)).collect();
        timeline(&runs, Some(reading_s()))
    });
    let row_labels = move || {
        let mut l: Vec<String> = cols
            .get()
            .iter()
            .filter(|c| c.run.is_ok())
            .map(|c| c.label.clone())
            .collect();
        l.push(format!("reading at {READING_WPM:.0} wpm"));
        l
    };
    let speeds_text = |s: &AgentSettings| s.speeds.iter().map(Speed::key).collect::<Vec<_>>().join(", ");
    view! {
        <section class="card agent" id="agent" aria-labelledby="agent-h">
            <h2 id="agent-h">"Agent steps: tokens per second becomes minutes"</h2>
            <p class="explain">"An agent calls the model again and again; every call waits for its first token, reads what is new, writes its answer, then waits for a tool. "
                "Decode speed multiplies through every step."</p>
            <div class="fields">
                <label class="field" for="agent-preset"><span>"Preset"</span>
                    <select id="agent-preset" data-testid="agent-preset"
                        on:change=move |ev| { let id = event_target_value(&ev); settings.update(|s| { let _ = s.pick(&id); }); }>
                        <option value="" selected>"Choose a loop…"</option>
                        {AGENT_PRESETS.iter().map(|(id, name)| view! { <option value=*id>{*name}</option> }).collect_view()}
                    </select></label>
                <Field settings label="Steps" key="steps" id="agent-steps" step="1" get=|s: &AgentSettings| s.shape.steps.to_string()/>
                <Field settings label="Output tokens per step" key="tokens" id="agent-tokens" step="1" get=|s: &AgentSettings| s.shape.output_tokens.to_string()/>
                <Field settings label="Hidden reasoning tokens per step" key="reasoning" id="agent-reasoning" step="1" get=|s: &AgentSettings| s.shape.reasoning_tokens.to_string()/>
                <Field settings label="Initial prompt" key="prompt_tokens" id="agent-prompt" step="1" unit="tokens" get=|s: &AgentSettings| s.shape.prompt_tokens.to_string()/>
                <Field settings label="Tool result per step" key="tool_tokens" id="agent-tool-tokens" step="1" unit="tokens" get=|s: &AgentSettings| s.shape.tool_tokens.to_string()/>
                <Field settings label="Prefill rate (0: not counted)" key="prefill" id="agent-prefill" unit="tok/s" get=|s: &AgentSettings| s.shape.prefill_tok_s.map(|r| r.to_string()).unwrap_or_else(|| "0".into())/>
                <Field settings label="Time to first token per call" key="ttft" id="agent-ttft" unit="s" get=|s: &AgentSettings| s.shape.ttft_s.to_string()/>
                <Field settings label="Tool latency per step" key="tool_s" id="agent-tool-s" unit="s" get=|s: &AgentSettings| s.shape.tool_s.to_string()/>
                <label class="check"><input type="checkbox" data-testid="agent-cache" prop:checked=move || settings.with(|s| s.shape.prefix_cache)
                    on:change=move |ev| { let on = event_target_checked(&ev); settings.update(|s| s.shape.prefix_cache = on); }/>
                    " Prefix cache (only new tokens are prefilled each call)"</label>
                <Field settings wide=true label="Decode speeds to compare" key="speeds" id="agent-speeds" kind="text"
                    unit="tok/s, measured, ceiling, or a claim: clover-gb300, clover-h200, mercury-3" get=speeds_text/>
            </div>
            <div class="columns" data-testid="agent-columns">
                {move || cols.get().into_iter().enumerate().map(|(i, c)| match c.run {
                    Ok((inputs, run)) => view! {
                        <div class="column">
                            <h3 data-testid=format!("agent-speed-{i}")>{c.label.clone()}</h3>
                            <p class="big"><span class="figure" data-testid=format!("agent-total-{i}")>{duration(run.total_s)}</span></p>
                            <p class="caption" data-testid=format!("agent-split-{i}")>{format!(
                                "decode {} · prefill {} · tools {} · first tokens {}",
                                duration(run.decode_s), duration(run.prefill_s), duration(run.tool_s), duration(run.ttft_s))}</p>
                            <p data-testid=format!("agent-sentence-{i}")>{run.explain(&inputs)}</p>
                        </div>
                    }.into_any(),
                    Err(why) => view! {
                        <div class="column">
                            <h3 data-testid=format!("agent-speed-{i}")>{c.label.clone()}</h3>
                            <p class="note" data-testid=format!("agent-total-{i}")>{why}</p>
                        </div>
                    }.into_any(),
                }).collect_view()}
            </div>
            <p class="caption" data-testid="agent-tokens">{move || {
                let s = settings.get();
                format!("{} tokens decoded per speed ({} visible). A person reads the visible text in {} ({READING_WPM:.0} words a minute ≈ {:.1} tok/s).",
                    count(s.shape.steps as u64 * (s.shape.output_tokens + s.shape.reasoning_tokens)), count(visible()), duration(reading_s()), reading_tok_s())
            }}</p>
            <svg class="timeline" data-testid="agent-chart" role="img" aria-label="timeline of each step's phases, one row per speed"
                viewBox=move || format!("0 0 {CHART_W} {}", ROW * rows.get().len() as f64 + 4.0)>
                {move || {
                    let labels = row_labels();
                    rows.get().into_iter().enumerate().map(|(r, segs)| {
                        let y = r as f64 * ROW;
                        view! {
                            <g class="row">
                                {segs.into_iter().map(|s| view! {
                                    <rect class=s.phase.class() x=s.x * CHART_W y=y + 14.0 width=(s.w * CHART_W).max(0.5) height="10"/>
                                }).collect_view()}
                                <text x="0" y=y + 11.0>{labels.get(r).cloned().unwrap_or_default()}</text>
                            </g>
                        }
                    }).collect_view()
                }}
            </svg>
            <p class="legend caption">
                {[(Phase::Ttft, "first token"), (Phase::Prefill, "prefill"), (Phase::Decode, "decode"), (Phase::Tool, "tool"), (Phase::Reading, "reading")]
                    .into_iter().map(|(p, l)| view! { <span class=format!("key {}", p.class())></span>{format!(" {l} ")} }).collect_view()}
            </p>
            <Share panel=Panel::Agent pairs/>
        </section>
    }
}
