//! Everything the page shows, as signals, and how each worker message changes it.

use super::speed_panel::Stage;
use crate::params::{AgentSettings, RooflineSettings, RunSettings};
use crate::protocol::{
    BackendChoice, CachedModel, FromWorker, MemoryReport, ModelInfo, Phase, ProbeReport, Request, StopReason, ToWorker,
};
use leptos::prelude::*;
use tokscope_core::meter::DecodeMeter;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loading {
    pub phase: Phase,
    pub done: u64,
    pub total: Option<u64>,
    /// When this phase's first report arrived (seconds, page clock).
    pub since: f64,
    pub now: f64,
}

#[derive(Clone, Copy)]
pub struct State {
    pub settings: RwSignal<RunSettings>,
    pub status: RwSignal<String>,
    pub error: RwSignal<Option<String>>,
    /// A notice that is not an error: CPU fallback, device lost, settings from the URL.
    pub notice: RwSignal<Option<String>>,
    pub loading: RwSignal<Option<Loading>>,
    pub model: RwSignal<Option<ModelInfo>>,
    pub running: RwSignal<bool>,
    pub output: RwSignal<String>,
    /// Words in `output`, counted by the worker (UAX #29).
    pub output_words: RwSignal<usize>,
    pub prompt_tokens: RwSignal<Option<usize>>,
    pub ttft_s: RwSignal<Option<f64>>,
    pub prefill_tok_s: RwSignal<Option<f64>>,
    pub generated: RwSignal<usize>,
    pub meter: RwSignal<DecodeMeter>,
    /// The last finished decode at the model's own precision (a run or the speed check, not a
    /// precision-dial point): (mean tok/s, tokens timed). The guided path reads it.
    pub rate: RwSignal<Option<(f64, usize)>>,
    pub cache: RwSignal<Vec<CachedModel>>,
    pub cache_note: RwSignal<Option<String>>,
    /// Why the last model was not cached (quota full, no IndexedDB): shown beside the model,
    /// not in the cache list's own note, which the next listing replaces.
    pub cache_warning: RwSignal<Option<String>>,
    /// The worker's memory after its last load or run.
    pub memory: RwSignal<Option<MemoryReport>>,
    /// The worker is up and listening.
    pub alive: RwSignal<bool>,
    /// Load phases reported so far, space-separated (for tests and curious readers).
    pub phases_seen: RwSignal<String>,
    /// The URL asked for a run that has not started yet.
    pub autorun_pending: RwSignal<bool>,
    pub roofline: RwSignal<RooflineSettings>,
    pub agent: RwSignal<AgentSettings>,
    /// This device's measured roofline, once the speed check has run.
    pub probe: RwSignal<Option<ProbeReport>>,
    pub speed: RwSignal<super::speed_panel::Stage>,
    pub dial: RwSignal<super::dial_panel::Dial>,
    pub batch: RwSignal<super::batch_panel::BatchDial>,
    pub tokens: RwSignal<super::tokens_panel::Tokens>,
}

/// Records the first time of an event (ms since navigation) as `window.<key>`, for the
/// end-to-end tests' load figures and anyone curious: `__tokscope_load_start_ms` (the worker's
/// first progress report), `__tokscope_ready_ms` (the model first ready).
fn mark_first(key: &str) {
    let Some(w) = web_sys::window() else { return };
    let key = wasm_bindgen::JsValue::from_str(key);
    if js_sys::Reflect::get(&w, &key).is_ok_and(|v| v.is_undefined()) {
        let _ = js_sys::Reflect::set(&w, &key, &(page_now_s() * 1e3).into());
    }
}

pub fn page_now_s() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now() / 1e3)
        .unwrap_or(0.0)
}

impl State {
    pub fn new(
        settings: RunSettings,
        roofline: RooflineSettings,
        agent: AgentSettings,
        tokens: super::tokens_panel::Tokens,
    ) -> Self {
        Self {
            tokens: RwSignal::new(tokens),
            roofline: RwSignal::new(roofline),
            agent: RwSignal::new(agent),
            probe: RwSignal::new(None),
            speed: RwSignal::new(super::speed_panel::Stage::Idle),
            dial: RwSignal::new(Default::default()),
            batch: RwSignal::new(Default::default()),
            autorun_pending: RwSignal::new(settings.autorun),
            settings: RwSignal::new(settings),
            status: RwSignal::new("Starting the engine…".into()),
            error: RwSignal::new(None),
            notice: RwSignal::new(None),
            loading: RwSignal::new(None),
            model: RwSignal::new(None),
            running: RwSignal::new(false),
            output: RwSignal::new(String::new()),
            output_words: RwSignal::new(0),
            prompt_tokens: RwSignal::new(None),
            ttft_s: RwSignal::new(None),
            prefill_tok_s: RwSignal::new(None),
            generated: RwSignal::new(0),
            meter: RwSignal::new(DecodeMeter::new()),
            rate: RwSignal::new(None),
            cache: RwSignal::new(vec![]),
            cache_note: RwSignal::new(None),
            memory: RwSignal::new(None),
            cache_warning: RwSignal::new(None),
            alive: RwSignal::new(false),
            phases_seen: RwSignal::new(String::new()),
        }
    }

    pub fn fail(&self, message: String) {
        self.running.set(false);
        self.loading.set(None);
        self.status.set(format!("Error: {message}"));
        self.error.set(Some(message));
    }

    /// Clears the previous run's text and figures.
    pub fn begin_run(&self) {
        self.error.set(None);
        self.output.set(String::new());
        self.output_words.set(0);
        self.prompt_tokens.set(None);
        self.ttft_s.set(None);
        self.prefill_tok_s.set(None);
        self.generated.set(0);
        self.meter.set(DecodeMeter::new());
        self.running.set(true);
        self.status.set("Tokenizing the prompt…".into());
    }

    pub fn apply(&self, m: FromWorker) {
        match m {
            FromWorker::Alive => {
                self.alive.set(true);
                self.status.set("Engine started.".into());
            }
            FromWorker::Progress { phase, done, total } => {
                mark_first("__tokscope_load_start_ms");
                let name = format!("{phase:?}");
                if !self.phases_seen.get_untracked().split(' ').any(|p| p == name) {
                    self.phases_seen.update(|s| {
                        s.push(' ');
                        s.push_str(&name)
                    });
                }
                let now = page_now_s();
                let since = match self.loading.get_untracked() {
                    Some(l) if l.phase == phase => l.since,
                    _ => now,
                };
                self.loading.set(Some(Loading {
                    phase,
                    done,
                    total,
                    since,
                    now,
                }));
                self.status.set(format!("{}…", super::link::phase_name(phase)));
            }
            FromWorker::Ready(info) => {
                self.loading.set(None);
                mark_first("__tokscope_ready_ms");
                self.status
                    .set(format!("Ready: {} on {}.", info.name, info.backend.label));
                self.note_backend(&info);
                self.model.set(Some(info));
                super::dial_panel::on_ready(*self);
            }
            FromWorker::Started { prompt_tokens } => {
                self.prompt_tokens.set(Some(prompt_tokens));
                self.status.set(format!("Prefilling {prompt_tokens} prompt tokens…"));
            }
            FromWorker::FirstToken { ttft_s, prefill_tok_s } => {
                self.ttft_s.set(Some(ttft_s));
                self.prefill_tok_s.set(Some(prefill_tok_s));
                self.status.set("Generating…".into());
            }
            FromWorker::Token { text, seconds, words } => {
                self.output.update(|o| o.push_str(&text));
                self.output_words.set(words);
                self.generated.update(|g| *g += 1);
                if let Some(s) = seconds {
                    let up = |m: &DecodeMeter| crate::speed::time_is_up(m.count(), m.total_s());
                    let was_up = self.meter.with_untracked(up);
                    self.meter.update(|m| m.push(s));
                    // The speed check stops early on a slow device (once, when time runs out).
                    if self.speed.get_untracked() == Stage::Decoding && !was_up && self.meter.with_untracked(up) {
                        super::link::send(&ToWorker::Stop, None);
                    }
                }
            }
            FromWorker::Done { generated, reason } => {
                self.running.set(false);
                let why = match reason {
                    StopReason::EndOfText => "the model ended its text",
                    StopReason::MaxTokens => "reached max tokens",
                    StopReason::Stopped => "stopped",
                    StopReason::ContextFull => "the context is full",
                };
                self.status.set(format!("Done: {generated} tokens ({why})."));
                if self.speed.get_untracked() == Stage::Decoding {
                    self.speed.set(super::speed_panel::result(*self));
                }
                let dial_point = matches!(self.dial.get_untracked().stage, super::dial_panel::Stage::Decoding(_));
                if !dial_point && let (Some(r), n) = self.meter.with_untracked(|m| (m.mean_tok_s(), m.count())) {
                    self.rate.set(Some((r, n)));
                }
                super::dial_panel::on_done(*self, self.model.get_untracked());
            }
            FromWorker::Cache { entries, note } => {
                self.cache.set(entries);
                self.cache_note.set(note);
            }
            FromWorker::CacheNote(note) => self.cache_warning.set(Some(note)),
            FromWorker::DeviceLost { message } => {
                self.running.set(false);
                self.notice.set(Some(format!(
                    "The GPU device was lost ({message}). Recovering the engine…"
                )));
                self.status.set("GPU device lost: recovering…".into());
            }
            FromWorker::Recovered(info) => {
                self.notice.set(Some(format!(
                    "Recovered after the GPU device was lost: running on {}.",
                    info.backend.label
                )));
                self.status.set(format!("Ready again on {}.", info.backend.label));
                self.model.set(Some(info));
            }
            FromWorker::Probe(report) => {
                self.probe.set(Some(report));
                if self.speed.get_untracked() == Stage::Probing {
                    super::speed_panel::decode(*self);
                }
            }
            FromWorker::BatchPoint {
                batch,
                per_user_tok_s,
                aggregate_tok_s,
            } => self
                .batch
                .update(|b| b.points.push((batch, per_user_tok_s, aggregate_tok_s))),
            FromWorker::Memory(m) => self.memory.set(Some(m)),
            FromWorker::Tokens(view) => self.tokens.update(|t| {
                t.busy = false;
                t.error = None;
                t.view = Some(view);
            }),
            FromWorker::BatchDone => {
                self.batch.update(|b| b.running = false);
                self.status.set("Batch dial: done.".into());
            }
            // An error answering the token view's request shows there; the page's model and run
            // stay as they were.
            FromWorker::Error {
                message,
                to: Request::Tokenize,
            } => self.tokens.update(|t| {
                t.busy = false;
                t.error = Some(message);
            }),
            FromWorker::Error { message, .. } => {
                self.batch.update(|b| b.running = false);
                if matches!(self.speed.get_untracked(), Stage::Probing | Stage::Decoding) {
                    self.speed.set(Stage::Failed(message.clone()));
                }
                if super::dial_panel::on_error(*self, &message) {
                    self.running.set(false);
                    self.loading.set(None);
                } else {
                    self.fail(message)
                }
            }
        }
    }

    fn note_backend(&self, info: &ModelInfo) {
        if let Some(reason) = info.backend.fallback_reason.as_ref()
            && self.settings.get_untracked().backend != BackendChoice::Cpu
        {
            self.notice.set(Some(format!(
                "The model runs on the CPU engine in WebAssembly: {reason}. The results are the same."
            )));
        }
    }
}
