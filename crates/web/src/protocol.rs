//! The messages between the page and the engine's worker: typed enums, sent as JSON strings
//! through `postMessage` (a picked file travels beside its message as a `File`).

use serde::{Deserialize, Serialize};
use tokscope_core::engine_trial::EngineTrial;
use tokscope_core::roofline::completion::Completion;
use tokscope_core::roofline::probe::Latency;
use tokscope_core::sampling::SamplingParams;
use tokscope_core::text_stats::TextStats;
use tokscope_core::tokenizer::Piece;

/// Where the model's bytes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ModelSource {
    /// A URL (relative to the page, or absolute https); cached after the first download.
    Url(String),
    /// The `File` sent along with the message (file picker or drag-and-drop).
    File { name: String },
    /// Random weights with a real model's shapes, made in the worker (`core::shaped`): the
    /// bytes per token of the real file, for speed only.
    Synthetic { shape: String, ty: String },
}

/// How the `model=` setting names a synthetic model: `synthetic:SHAPE:TYPE`.
pub const SYNTHETIC_PREFIX: &str = "synthetic:";

/// The synthetic models the page offers: those whose file fits a browser's memory comfortably
/// (Llama 3.1 8B's 4.5 GB does not fit a 32-bit wasm heap).
pub const SYNTHETIC_CHOICES: [(&str, &str); 7] = [
    ("qwen2.5-0.5b", "Q4_0"),
    ("qwen2.5-0.5b", "Q4_1"),
    ("qwen2.5-0.5b", "Q8_0"),
    ("llama-3.2-1b", "Q4_0"),
    ("llama-3.2-1b", "Q4_1"),
    ("llama-3.2-1b", "Q8_0"),
    ("tiny", "Q4_0"),
];

/// A `model=` setting the page may load: an http(s) address, one relative to the page, or a
/// synthetic model. Any other scheme (`javascript:`, `data:`, `file:`, `blob:`) is refused
/// by name rather than handed to `fetch`, whose failure would not say why.
pub fn check_model_setting(model: &str) -> Result<&str, String> {
    if model.starts_with(SYNTHETIC_PREFIX) {
        return Ok(model);
    }
    // A scheme is letters, digits, '+', '-', '.' before the first ':' (RFC 3986 §3.1), and a
    // relative address has no ':' before its first '/', '?' or '#'.
    let head = model.split(['/', '?', '#']).next().unwrap_or("");
    let scheme = head.split_once(':').map(|(s, _)| s).filter(|s| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    match scheme {
        None => Ok(model),
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => Ok(model),
        Some(s) => Err(format!(
            "only http(s) addresses can be loaded, not a {s}: address (pick a file to load one from this device)"
        )),
    }
}

impl ModelSource {
    /// The `model=` setting as a source: `synthetic:SHAPE:TYPE`, else a URL.
    pub fn from_setting(model: &str) -> ModelSource {
        match model
            .strip_prefix(SYNTHETIC_PREFIX)
            .and_then(|rest| rest.split_once(':'))
        {
            Some((shape, ty)) => ModelSource::Synthetic {
                shape: shape.into(),
                ty: ty.into(),
            },
            None => ModelSource::Url(model.into()),
        }
    }

    /// The setting that names this source (files have none).
    pub fn setting(&self) -> Option<String> {
        match self {
            ModelSource::Url(u) => Some(u.clone()),
            ModelSource::Synthetic { shape, ty } => Some(format!("{SYNTHETIC_PREFIX}{shape}:{ty}")),
            ModelSource::File { .. } => None,
        }
    }
}

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackendChoice {
    /// WebGPU when the browser offers a hardware adapter, else the CPU engine in wasm (a
    /// software adapter such as SwiftShader decodes slower than the CPU engine itself).
    Auto,
    Cpu,
    /// WebGPU whenever there is an adapter, software ones included.
    Gpu,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateRequest {
    pub prompt: String,
    /// Render the model's own chat template around the prompt as one user turn.
    pub chat: bool,
    pub sampling: SamplingParams,
    pub max_tokens: usize,
    /// Keep decoding past end-of-text (the speed check's fixed-length decode).
    #[serde(default)]
    pub ignore_eos: bool,
    /// The page's number for this request, echoed in its [`FromWorker::Done`].
    #[serde(default)]
    pub run: u32,
    /// How the WebGPU engine submits greedy steps (the URL's `chain=`; tokscope-gpu's
    /// `decode`): chained chunks by default.
    #[serde(default)]
    pub chain: tokscope_core::roofline::chain::Chain,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    Load {
        source: ModelSource,
        backend: BackendChoice,
        /// Whether the WebGPU engine may nudge the queue (the URL's `nudge=0` says no).
        nudge: bool,
    },
    Generate(GenerateRequest),
    /// Runs the bandwidth probe on the engine's GPU (answered with [`FromWorker::Probe`]).
    Probe,
    /// The batch dial: `tokens` steps of batched greedy decode on the CPU engine for each batch
    /// size (answered with one [`FromWorker::BatchPoint`] each, then `BatchDone`).
    BatchDial {
        batches: Vec<usize>,
        tokens: usize,
    },
    /// Re-encodes the loaded model's matrices at a precision of the dial (`"Q8_0"`), or back to
    /// the file's own with `None`; answered with [`FromWorker::Ready`].
    Requantize {
        precision: Option<String>,
    },
    /// Stop generating after the token in flight.
    Stop,
    /// Lists what the model cache holds (answered with [`FromWorker::Cache`]).
    ListCache,
    /// Deletes one cached model by key, or all of them.
    Forget {
        key: Option<String>,
    },
    /// Splits a text into tokens (answered with [`FromWorker::Tokens`]): with the loaded
    /// model's tokenizer when `model` is `None`, else with the one in that URL's GGUF header,
    /// read by range requests without the weights.
    Tokenize {
        text: String,
        model: Option<String>,
    },
    /// Destroys the GPU device, to exercise recovery from a lost device (tests, and two
    /// "simulate" buttons for the curious); without `gpu_after` the recovery finds no GPU and
    /// lands on the CPU engine.
    LoseDevice {
        gpu_after: bool,
    },
}

/// The engine that runs, as the backend badge shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// true: WebGPU; false: the CPU engine in WebAssembly.
    pub gpu: bool,
    /// The adapter's description, or "CPU (WASM)".
    pub label: String,
    /// Why the GPU is not used, when it is not.
    pub fallback_reason: Option<String>,
    /// Dispatches the GPU engine records per token (the floor model's fixed-cost term).
    #[serde(default)]
    pub dispatches_per_token: Option<u32>,
    /// How soon this device's completions reach the page, and whether reads nudge the queue
    /// (tokscope-core's `roofline::completion`); WebGPU only.
    #[serde(default)]
    pub completion: Option<Completion>,
    /// What the GPU kernels are shaped for and why (tokscope-gpu's `GpuContext::kernels_words`).
    #[serde(default)]
    pub kernels: Option<String>,
    /// `backend=auto`: both engines' rates over the same steps, where both could run.
    #[serde(default)]
    pub trial: Option<EngineTrial>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub architecture: String,
    pub parameters: u64,
    pub file_bytes: u64,
    pub bytes_per_token: u64,
    /// The weights' share of `bytes_per_token` (read once per step whatever the batch).
    pub weight_bytes: u64,
    pub context: usize,
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Bits per element of the engine's KV cache (its bytes per token grow with the context).
    pub kv_bits: u32,
    /// The precision dial's re-encoding of the matrices; `None`: as the file encodes them.
    #[serde(default)]
    pub precision: Option<String>,
    pub backend: BackendInfo,
}

/// This device's measured roofline (the bandwidth probe, tokscope-gpu's `probe`), for the speed
/// card and the roofline panel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Wall clock, from differences.
    pub read_gb_s: f64,
    pub dispatch_us: f64,
    /// Submit → read-back mapped, and the tick it waits for where there is one.
    pub latency: Latency,
    /// The same on the GPU's clock (`timestamp-query`), where the adapter offers it.
    pub gpu_read_gb_s: Option<f64>,
    pub gpu_dispatch_us: Option<f64>,
    /// The latency without the nudge, where the engine's reads nudge the queue.
    #[serde(default)]
    pub unnudged: Option<Latency>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    Download,
    Cache,
    Parse,
    /// Re-encoding the weights (the precision dial).
    Encode,
    Upload,
    /// `backend=auto`: timing both engines over the same steps.
    Trial,
}

impl Phase {
    /// What the page's status line says while it lasts.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Download => "Downloading the model",
            Phase::Cache => "Looking in the model cache",
            Phase::Parse => "Reading the GGUF",
            Phase::Encode => "Re-encoding the weights",
            Phase::Upload => "Uploading the weights to the GPU",
            Phase::Trial => "Timing WebGPU and the CPU engine on the same steps",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// The model produced an end-of-sequence token.
    EndOfText,
    MaxTokens,
    Stopped,
    ContextFull,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedModel {
    pub key: String,
    pub source: String,
    pub bytes: u64,
}

/// A text as a tokenizer splits it, for the token view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenView {
    pub text: String,
    pub pieces: Vec<Piece>,
    pub stats: TextStats,
    /// Whose vocabulary: the model's name.
    pub tokenizer: String,
    /// Bytes of the GGUF read to get the vocabulary without the weights (`None`: the loaded
    /// model's own tokenizer).
    pub header_bytes: Option<u64>,
    /// The whole file's size, where the server said.
    pub file_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    /// The worker's wasm is running and listening.
    Alive,
    /// Loading progress: `done` of `total` bytes (total unknown without a Content-Length).
    Progress {
        phase: Phase,
        done: u64,
        total: Option<u64>,
    },
    Ready(ModelInfo),
    /// The prompt is tokenized and prefill starts.
    Started {
        prompt_tokens: usize,
    },
    /// The prompt is done and the first token sampled: time to first token.
    FirstToken {
        ttft_s: f64,
        prefill_tok_s: f64,
    },
    /// One generated token's text (may be empty while a multi-byte character is incomplete)
    /// and how long its decode step took (none for the first token: that is the TTFT).
    Token {
        text: String,
        seconds: Option<f64>,
        /// Words in the output so far ([`tokscope_core::text_stats::count_words`]), for the
        /// meter's measured words per token.
        words: usize,
    },
    Done {
        /// The request it answers ([`GenerateRequest::run`]).
        #[serde(default)]
        run: u32,
        generated: usize,
        reason: StopReason,
        /// Decode steps one submit held on average, where WebGPU chained them.
        #[serde(default)]
        steps_per_submit: Option<f64>,
    },
    /// What the model cache holds, with how much of the quota is used.
    Cache {
        entries: Vec<CachedModel>,
        note: Option<String>,
    },
    /// The cache failed (unavailable, quota full); the model loads anyway.
    CacheNote(String),
    /// The GPU device was lost; the worker rebuilds the engine from the bytes it holds.
    DeviceLost {
        message: String,
    },
    /// Recovered after a lost device.
    Recovered(ModelInfo),
    /// The bandwidth probe's figures.
    Probe(ProbeReport),
    /// One batch size measured: one sequence's rate and all sequences' together.
    BatchPoint {
        batch: usize,
        per_user_tok_s: f64,
        aggregate_tok_s: f64,
    },
    BatchDone,
    Tokens(TokenView),
    /// The worker's memory after a load or a run: its WebAssembly memory (which only grows:
    /// flat across runs and reloads means nothing leaks) and the GPU buffers it has created.
    Memory(MemoryReport),
    Error {
        message: String,
        /// The request it answers: the page shows it where that request was made.
        to: Request,
    },
}

/// What an error answers (one request at a time runs in the worker, so its kind says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    Load,
    Generate,
    Cache,
    Probe,
    BatchDial,
    Requantize,
    Tokenize,
    /// Rebuilding the engine after a lost GPU device.
    Recover,
    /// A message the worker could not read.
    Message,
}

impl ToWorker {
    /// The kind of request this message makes.
    pub fn request(&self) -> Request {
        match self {
            ToWorker::Load { .. } => Request::Load,
            ToWorker::Generate(_) | ToWorker::Stop => Request::Generate,
            ToWorker::ListCache | ToWorker::Forget { .. } => Request::Cache,
            ToWorker::LoseDevice { .. } => Request::Recover,
            ToWorker::Probe => Request::Probe,
            ToWorker::BatchDial { .. } => Request::BatchDial,
            ToWorker::Requantize { .. } => Request::Requantize,
            ToWorker::Tokenize { .. } => Request::Tokenize,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub wasm_bytes: u64,
    /// Buffers ever created on this worker's GPU device, and their bytes (none on the CPU engine).
    pub gpu_buffers: Option<u64>,
    pub gpu_buffer_bytes: Option<u64>,
}

impl ToWorker {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("messages serialize")
    }
}

impl FromWorker {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("messages serialize")
    }
}

/// Parses a message, naming what was wrong (a page and worker from different builds, say).
pub fn parse<'a, T: Deserialize<'a>>(json: &'a str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| format!("unreadable message between page and worker: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let m = ToWorker::Generate(GenerateRequest {
            prompt: "<b>hi</b> \"quoted\"".into(),
            chat: true,
            sampling: SamplingParams::default(),
            max_tokens: 32,
            ignore_eos: false,
            run: 7,
            chain: tokscope_core::roofline::chain::Chain::Fixed(5),
        });
        assert_eq!(parse::<ToWorker>(&m.to_json()).unwrap(), m);
        let f = FromWorker::Progress {
            phase: Phase::Download,
            done: 5,
            total: None,
        };
        assert_eq!(parse::<FromWorker>(&f.to_json()).unwrap(), f);
    }

    /// An error names the request it answers, so a failed tokenization lands in the token view
    /// even while a run or a load is going on.
    #[test]
    fn errors_name_their_request() {
        let tokenize = ToWorker::Tokenize {
            text: "hi".into(),
            model: None,
        };
        assert_eq!(tokenize.request(), Request::Tokenize);
        assert_eq!(ToWorker::Probe.request(), Request::Probe);
        assert_eq!(ToWorker::Forget { key: None }.request(), Request::Cache);
        let e = FromWorker::Error {
            message: "no vocabulary".into(),
            to: tokenize.request(),
        };
        assert_eq!(parse::<FromWorker>(&e.to_json()).unwrap(), e);
    }

    #[test]
    fn synthetic_models_are_named_in_the_model_setting() {
        let s = ModelSource::from_setting("synthetic:qwen2.5-0.5b:Q4_0");
        assert_eq!(
            s,
            ModelSource::Synthetic {
                shape: "qwen2.5-0.5b".into(),
                ty: "Q4_0".into()
            }
        );
        assert_eq!(s.setting().unwrap(), "synthetic:qwen2.5-0.5b:Q4_0");
        assert_eq!(
            ModelSource::from_setting("models/a.gguf"),
            ModelSource::Url("models/a.gguf".into())
        );
        // Every offered choice names a shape and a type that exist.
        for (shape, ty) in SYNTHETIC_CHOICES {
            assert!(tokscope_core::shaped::ShapeSpec::by_id(shape).is_some(), "{shape}");
            assert!(tokscope_core::quant::GgmlType::from_name(ty).is_some_and(|t| t.is_supported()));
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let e = parse::<ToWorker>("{\"Nope\":1}").unwrap_err();
        assert!(e.contains("unreadable message"), "{e}");
    }
}
