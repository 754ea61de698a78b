//! What each panel's run holds between the worker's messages: plain data the panels render and
//! apply.rs moves along. Nothing here sends or reads a signal.

use crate::protocol::TokenView;
use crate::speed::SpeedResult;
use tokscope_core::record::{RunKind, RunRecord};
use tokscope_core::text_stats::SAMPLES;

/// The speed check: probe (GPU engines only), then a fixed decode, then its card.
#[derive(Debug, Clone, PartialEq)]
pub enum SpeedStage {
    Idle,
    Probing,
    Decoding,
    /// Boxed: the card is far larger than the other stages.
    Done(Box<SpeedResult>),
    Failed(String),
}

/// Where the precision dial is: re-encoding (then uploading) `DIAL[i]`, decoding at it, or
/// restoring the file's own encoding.
#[derive(Debug, Clone, PartialEq)]
pub enum DialStage {
    Idle,
    Encoding(usize),
    Decoding(usize),
    Restoring,
    Done,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dial {
    pub stage: DialStage,
    /// One record per precision decoded, fewest bytes per token first.
    pub points: Vec<RunRecord>,
    /// Precisions that could not run here, with why.
    pub skipped: Vec<String>,
}

impl Default for Dial {
    fn default() -> Self {
        Self {
            stage: DialStage::Idle,
            points: vec![],
            skipped: vec![],
        }
    }
}

impl Dial {
    pub fn active(&self) -> bool {
        !matches!(self.stage, DialStage::Idle | DialStage::Done)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchDial {
    pub running: bool,
    /// The request its points answer.
    pub id: u32,
    /// One record per batch size.
    pub points: Vec<RunRecord>,
}

/// The request a run answers: the page numbers its requests and the worker echoes the number
/// in its `Done`, so a run's end is credited to the run that asked, whatever stage a panel is in.
#[derive(Debug, Clone, PartialEq)]
pub struct InFlight {
    pub id: u32,
    pub kind: RunKind,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tokens {
    pub text: String,
    pub view: Option<TokenView>,
    /// A request is with the worker.
    pub busy: bool,
    pub error: Option<String>,
    /// No model is loaded on this page (the panel's embed): the vocabulary comes from the
    /// model file's header. Otherwise the panel waits for the loaded model's tokenizer rather
    /// than read the header beside the model's own download.
    pub header_only: bool,
}

impl Tokens {
    pub fn new(text: Option<String>, header_only: bool) -> Self {
        Self {
            text: text.unwrap_or_else(|| SAMPLES[0].1.into()),
            header_only,
            ..Default::default()
        }
    }
}
