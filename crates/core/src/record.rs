//! One record per finished run: every figure a panel shows about a run (its rate, time to first
//! token, total response time, the bytes each token read) comes from one record made when that
//! run ended, so no panel pairs one run's rate with another run's bytes.
//!
//! The three figures a reader should look at together — time to first token, tokens per second
//! and total response time — are the decomposition of inference speed in Infercom's glossary
//! ("Inference Speed", infercom.ai/glossary/inference-speed: "Total response time is
//! approximately TTFT plus the number of generated tokens multiplied by the time per token");
//! `total_s` is that sum as measured.

use crate::meter::DecodeMeter;
use serde::{Deserialize, Serialize};

/// What a run was for: which panel started it and which reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// The run panel's Generate.
    Generate,
    /// The speed check's decode.
    SpeedCheck,
    /// One point of the precision dial, at this encoding.
    Dial { precision: String },
    /// One point of the batch dial: this many sequences decoded together.
    Batch { batch: u32 },
}

impl RunKind {
    /// In the words a disabled button uses: "the precision dial is running".
    pub fn what(&self) -> &'static str {
        match self {
            RunKind::Generate => "a generation",
            RunKind::SpeedCheck => "the speed check",
            RunKind::Dial { .. } => "the precision dial",
            RunKind::Batch { .. } => "the batch dial",
        }
    }
}

/// The engine and model a run ran on, as they were when it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    pub model: String,
    /// The encoding the matrices had: `None` as the file stores them, else the precision dial's.
    pub encoding: Option<String>,
    /// The engine's name ("WebGPU: …", "CPU (WebAssembly)").
    pub engine: String,
    pub gpu: bool,
    /// Bytes one decoded token read (weights + KV cache).
    pub bytes_per_token: u64,
    /// The weights' bytes (what prefill reads once per chunk).
    pub weight_bytes: u64,
    /// Bits per element of the engine's KV cache.
    pub kv_bits: u32,
}

/// One finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The request it answers (the page numbers its requests).
    pub id: u32,
    pub kind: RunKind,
    pub context: RunContext,
    /// Tokens decoded after the first (timed one by one).
    pub tokens: usize,
    /// Mean decode rate over them: tokens ÷ their total time.
    pub tok_s: Option<f64>,
    pub prompt_tokens: Option<usize>,
    pub prefill_tok_s: Option<f64>,
    /// Time to first token: prefill and the first decoded token.
    pub ttft_s: Option<f64>,
    /// Time to first token + every later token's time: the whole response.
    pub total_s: Option<f64>,
}

impl RunRecord {
    /// The record of a run from the meter of its tokens and its first token's figures.
    pub fn new(
        id: u32,
        kind: RunKind,
        context: RunContext,
        meter: &DecodeMeter,
        first: Option<(f64, f64)>,
        prompt_tokens: Option<usize>,
    ) -> Self {
        let ttft_s = first.map(|f| f.0);
        Self {
            id,
            kind,
            context,
            tokens: meter.count(),
            tok_s: meter.mean_tok_s(),
            prompt_tokens,
            prefill_tok_s: first.map(|f| f.1),
            ttft_s,
            total_s: ttft_s.map(|t| t + meter.total_s()),
        }
    }

    /// A batch-dial point: `tokens` steps of `batch` sequences at `per_user_tok_s` each.
    pub fn batch_point(id: u32, batch: u32, context: RunContext, tokens: usize, per_user_tok_s: f64) -> Self {
        Self {
            id,
            kind: RunKind::Batch { batch },
            context,
            tokens,
            tok_s: Some(per_user_tok_s),
            prompt_tokens: None,
            prefill_tok_s: None,
            ttft_s: None,
            total_s: (per_user_tok_s > 0.0).then(|| tokens as f64 / per_user_tok_s),
        }
    }

    /// Sequences decoded together (1 outside the batch dial).
    pub fn batch(&self) -> u32 {
        match self.kind {
            RunKind::Batch { batch } => batch,
            _ => 1,
        }
    }

    /// All sequences' tokens per second together.
    pub fn aggregate_tok_s(&self) -> Option<f64> {
        self.tok_s.map(|t| t * self.batch() as f64)
    }

    /// Bytes the decode read per second: rate × bytes per token, GB/s.
    pub fn effective_gb_s(&self) -> Option<f64> {
        self.tok_s.map(|t| t * self.context.bytes_per_token as f64 / 1e9)
    }

    /// Whether it measured the model as its file encodes it (not a dial's re-encoding or batch):
    /// the runs the roofline's "you" point, the guided path and the meter's summary read.
    pub fn at_own_precision(&self) -> bool {
        matches!(self.kind, RunKind::Generate | RunKind::SpeedCheck) && self.context.encoding.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RunContext {
        RunContext {
            model: "SmolLM2 135M Instruct".into(),
            encoding: None,
            engine: "CPU (WebAssembly)".into(),
            gpu: false,
            bytes_per_token: 100_000_000,
            weight_bytes: 99_000_000,
            kv_bits: 32,
        }
    }

    #[test]
    fn a_run_is_its_three_figures_together() {
        let mut m = DecodeMeter::new();
        for _ in 0..20 {
            m.push(0.05);
        }
        let r = RunRecord::new(7, RunKind::Generate, ctx(), &m, Some((0.3, 400.0)), Some(120));
        assert_eq!((r.id, r.tokens), (7, 20));
        assert!((r.tok_s.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(r.ttft_s, Some(0.3));
        // 0.3 s to the first token + 20 × 50 ms.
        assert!((r.total_s.unwrap() - 1.3).abs() < 1e-9);
        assert!((r.effective_gb_s().unwrap() - 2.0).abs() < 1e-9);
        assert!(r.at_own_precision());
        assert_eq!(r.batch(), 1);
    }

    #[test]
    fn dial_and_batch_points_are_not_the_models_own_rate() {
        let m = DecodeMeter::new();
        let dial = RunRecord::new(
            8,
            RunKind::Dial {
                precision: "F32".into(),
            },
            RunContext {
                encoding: Some("F32".into()),
                ..ctx()
            },
            &m,
            None,
            None,
        );
        assert!(!dial.at_own_precision());
        assert_eq!((dial.tok_s, dial.total_s), (None, None));
        let b = RunRecord::batch_point(9, 4, ctx(), 16, 10.0);
        assert!(!b.at_own_precision());
        assert_eq!(b.aggregate_tok_s(), Some(40.0));
        assert_eq!(b.total_s, Some(1.6));
        assert_eq!(b.kind.what(), "the batch dial");
    }
}
