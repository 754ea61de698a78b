//! A generation's tokens after its first, one at a time, from either path: one step a submit
//! (the CPU engine, sampling without a top-k cut, embeddings looked up on the host, `--chain 0`),
//! or chained chunks on the GPU (chained.rs). The CLI's `generate` and `bench` and the page's worker take
//! tokens from here and check end of text, max tokens, Stop and the context between them, as a
//! step-at-a-time loop would; [`Decode::stop`] then leaves the cache as that loop would.

use crate::chained::Chained;
use crate::runner::{RunError, Runner};
use std::collections::VecDeque;
use tokscope_core::sampling::Sampler;

pub use tokscope_core::roofline::chain::Chain;

/// Why a decode runs one step a submit, where chaining was asked for; `None`: it chains.
pub fn why_not_chained<B: AsRef<[u8]>>(runner: &mut Runner<B>, sampler: &Sampler, chain: Chain) -> Option<String> {
    if chain == Chain::Off {
        return Some("one step a submit, as asked".into());
    }
    let Some(e) = runner.gpu_engine() else {
        return Some("the CPU engine runs a step at a time".into());
    };
    if !sampler.params().is_greedy() && !crate::sampling::on_gpu(sampler.params()) {
        return Some(format!(
            "sampling without a top-k cut of 1 to {} reads every logit back: one step a submit",
            crate::graph::MAX_TOP_K
        ));
    }
    if !e.looks_up_embedding() {
        return Some(format!(
            "the embedding's type ({}) is looked up on the host: one step a submit",
            e.model.desc.token_embd.ty
        ));
    }
    None
}

pub struct Decode {
    chained: Option<Chained>,
    /// Tokens read and not yet taken.
    queue: VecDeque<u32>,
    /// The token last taken (the next step's input on the one-step path).
    last: u32,
    /// Tokens taken from the chunk last read.
    used: usize,
    /// When the last tokens came back (seconds), and each one's share of the time since the
    /// read before.
    last_done: f64,
    per_token_s: f64,
}

impl Decode {
    /// A decode after `first` (taken, not yet in the cache) with room for `budget` more steps:
    /// chained where [`why_not_chained`] finds nothing against it. `now`: seconds.
    pub fn start<B: AsRef<[u8]>>(
        runner: &mut Runner<B>,
        sampler: &mut Sampler,
        first: u32,
        budget: usize,
        chain: Chain,
        now: f64,
    ) -> Result<Self, RunError> {
        let chained = match (why_not_chained(runner, sampler, chain), runner.gpu_engine()) {
            (None, Some(e)) if budget > 0 => {
                let fixed = match chain {
                    Chain::Fixed(k) => Some(k),
                    _ => None,
                };
                Some(Chained::start(e, sampler, first, budget, fixed, now)?)
            }
            _ => None,
        };
        Ok(Self {
            chained,
            queue: VecDeque::new(),
            last: first,
            used: 0,
            last_done: now,
            per_token_s: 0.0,
        })
    }

    /// Whether the steps are chained.
    pub fn is_chained(&self) -> bool {
        self.chained.is_some()
    }

    /// The chain's bookkeeping (chunks, steps, the host's wait), where it chains.
    pub fn chained(&self) -> Option<&Chained> {
        self.chained.as_ref()
    }

    /// The token after the last one taken, and its share of the time since the last read
    /// (seconds: a chunk's time ÷ its tokens, or one step's).
    pub async fn next<B: AsRef<[u8]>>(
        &mut self,
        runner: &mut Runner<B>,
        sampler: &mut Sampler,
        now: &dyn Fn() -> f64,
    ) -> Result<(u32, f64), RunError> {
        if self.queue.is_empty() {
            match (&mut self.chained, runner.gpu_engine()) {
                (Some(c), Some(e)) => {
                    let tokens = c.next(e, sampler, now).await?;
                    if tokens.is_empty() {
                        return Err(RunError::NothingPending);
                    }
                    self.used = 0;
                    self.queue.extend(tokens);
                }
                _ => {
                    runner.begin_decode(self.last, sampler)?;
                    let t = runner.finish_async(sampler).await?;
                    self.queue.push_back(t);
                }
            }
            let done = now();
            self.per_token_s = (done - self.last_done) / self.queue.len() as f64;
            self.last_done = done;
        }
        let t = self.queue.pop_front().expect("filled above");
        self.used += 1;
        self.last = t;
        Ok((t, self.per_token_s))
    }

    /// Blocking [`Decode::next`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn next_blocking<B: AsRef<[u8]>>(
        &mut self,
        runner: &mut Runner<B>,
        sampler: &mut Sampler,
        now: &dyn Fn() -> f64,
    ) -> Result<(u32, f64), RunError> {
        pollster::block_on(self.next(runner, sampler, now))
    }

    /// Tokens in the cache as a step-at-a-time decode would hold them now: the last token
    /// taken is not in it yet.
    pub fn position<B: AsRef<[u8]>>(&self, runner: &Runner<B>) -> usize {
        match &self.chained {
            Some(c) => c.position_after(self.used),
            None => runner.fill().0,
        }
    }

    /// Whether the context has no room for the last token taken.
    pub fn full<B: AsRef<[u8]>>(&self, runner: &Runner<B>) -> bool {
        self.position(runner) >= runner.fill().1
    }

    /// The caller takes no more tokens: the cache keeps what a step-at-a-time decode would,
    /// and chained work past it is dropped.
    pub fn stop<B: AsRef<[u8]>>(mut self, runner: &mut Runner<B>) {
        if let (Some(c), Some(e)) = (&mut self.chained, runner.gpu_engine()) {
            c.stop(e, self.used);
        }
    }
}
