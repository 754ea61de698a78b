//! Everything the page shows, as signals. How each worker message and each start button changes
//! them is apply.rs; what a panel's run holds between messages is stages.rs. The panels import
//! this module; it imports no panel.

pub mod apply;
pub mod stages;

use crate::params::{AgentSettings, RooflineSettings, RunSettings};
use crate::protocol::{BackendChoice, CachedModel, MemoryReport, ModelInfo, Phase, ProbeReport};
use leptos::prelude::*;
use stages::{BatchDial, Dial, InFlight, SpeedStage, Tokens};
use tokscope_core::meter::DecodeMeter;
use tokscope_core::record::RunRecord;

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
    /// The generate request (a run, the speed check's decode, a dial point) the worker is on.
    pub in_flight: RwSignal<Option<InFlight>>,
    /// The number the next request takes.
    next_id: RwSignal<u32>,
    pub output: RwSignal<String>,
    /// Words in `output`, counted by the worker (UAX #29).
    pub output_words: RwSignal<usize>,
    pub prompt_tokens: RwSignal<Option<usize>>,
    pub ttft_s: RwSignal<Option<f64>>,
    pub prefill_tok_s: RwSignal<Option<f64>>,
    /// Steps a submit the last run chained on WebGPU (`None`: one): the floor model's share of
    /// the completion wait per token.
    pub steps_per_submit: RwSignal<Option<f64>>,
    pub generated: RwSignal<usize>,
    /// The in-flight or last run's token times (the live meter).
    pub meter: RwSignal<DecodeMeter>,
    /// The last finished run of any kind: what the meter's figures belong to once it ends.
    pub last_run: RwSignal<Option<RunRecord>>,
    /// The last finished run of the loaded model as its file encodes it (Generate or the speed
    /// check; no dial point): the roofline's "you" point and the guided path read it.
    pub own_run: RwSignal<Option<RunRecord>>,
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
    /// This device's measured roofline, once the speed check has run on this engine.
    pub probe: RwSignal<Option<ProbeReport>>,
    pub speed: RwSignal<SpeedStage>,
    pub dial: RwSignal<Dial>,
    pub batch: RwSignal<BatchDial>,
    pub tokens: RwSignal<Tokens>,
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
    pub fn new(settings: RunSettings, roofline: RooflineSettings, agent: AgentSettings, tokens: Tokens) -> Self {
        Self {
            tokens: RwSignal::new(tokens),
            roofline: RwSignal::new(roofline),
            agent: RwSignal::new(agent),
            probe: RwSignal::new(None),
            speed: RwSignal::new(SpeedStage::Idle),
            dial: RwSignal::new(Default::default()),
            batch: RwSignal::new(Default::default()),
            autorun_pending: RwSignal::new(settings.autorun),
            settings: RwSignal::new(settings),
            status: RwSignal::new("Starting the engine…".into()),
            error: RwSignal::new(None),
            notice: RwSignal::new(None),
            loading: RwSignal::new(None),
            model: RwSignal::new(None),
            in_flight: RwSignal::new(None),
            next_id: RwSignal::new(1),
            output: RwSignal::new(String::new()),
            output_words: RwSignal::new(0),
            prompt_tokens: RwSignal::new(None),
            ttft_s: RwSignal::new(None),
            prefill_tok_s: RwSignal::new(None),
            steps_per_submit: RwSignal::new(None),
            generated: RwSignal::new(0),
            meter: RwSignal::new(DecodeMeter::new()),
            last_run: RwSignal::new(None),
            own_run: RwSignal::new(None),
            cache: RwSignal::new(vec![]),
            cache_note: RwSignal::new(None),
            memory: RwSignal::new(None),
            cache_warning: RwSignal::new(None),
            alive: RwSignal::new(false),
            phases_seen: RwSignal::new(String::new()),
        }
    }

    /// Whether a generate request is with the worker (Stop can end it).
    pub fn generating(&self) -> bool {
        self.in_flight.with(Option::is_some)
    }

    pub fn generating_untracked(&self) -> bool {
        self.in_flight.with_untracked(Option::is_some)
    }

    pub fn fail(&self, message: String) {
        self.in_flight.set(None);
        self.loading.set(None);
        self.status.set(format!("Error: {message}"));
        self.error.set(Some(message));
    }

    /// Clears the previous run's text and live figures.
    fn begin_run(&self) {
        self.error.set(None);
        self.output.set(String::new());
        self.output_words.set(0);
        self.prompt_tokens.set(None);
        self.ttft_s.set(None);
        self.prefill_tok_s.set(None);
        self.generated.set(0);
        self.meter.set(DecodeMeter::new());
        self.status.set("Tokenizing the prompt…".into());
    }

    fn note_backend(&self, info: &ModelInfo) {
        if info.backend.gpu
            && let Some(trial) = info.backend.trial
        {
            self.notice
                .set(Some(format!("The model runs on WebGPU: {}.", trial.describe())));
        }
        if let Some(reason) = info.backend.fallback_reason.as_ref()
            && self.settings.get_untracked().backend != BackendChoice::Cpu
        {
            self.notice.set(Some(format!(
                "The model runs on the CPU engine in WebAssembly: {reason}. The results are the same."
            )));
        }
    }
}
