//! Decode in chained chunks (chain.rs), two in flight: while the host reads one chunk's tokens
//! the GPU runs the next, so the GPU waits on the host only where a chunk's work is shorter
//! than the host's part. Each chunk's length grows 4× while that measurably pays (core's
//! `roofline::chain::Growth`: until the host's share of a token is under a tenth), or is fixed
//! (`--chain K`). The CLI's `generate` and
//! `bench` and the page's worker all decode through this.
//!
//! The caller takes tokens from [`Chained::next`] one by one, exactly as from a step-at-a-time
//! loop, and says where it stopped ([`Chained::stop`]): the cache then holds the same tokens
//! the step-at-a-time loop would have appended, and at most one chunk of work was wasted.

use crate::engine::{GpuEngine, GpuEngineError};
use tokscope_core::roofline::chain::Growth;
use tokscope_core::roofline::chain::MAX_CHAIN;
use tokscope_core::sampling::Sampler;

/// A chained decode of one generation.
pub struct Chained {
    /// Steps a chunk, where fixed; else grown by measurement.
    fixed: Option<usize>,
    growth: Growth,
    /// Steps the chunks may still take (max tokens, the context).
    budget: usize,
    /// Where the chunk last read started, and its first token's position in the generation.
    read_start: usize,
    /// Submit times of the chunks in flight, oldest first.
    submitted: std::collections::VecDeque<f64>,
    /// When the last chunk came back.
    last_done: Option<f64>,
    /// Seconds the host spent waiting for chunks, and the steps they held.
    pub waited_s: f64,
    pub steps_read: usize,
    /// Chunks read.
    pub chunks: usize,
}

impl Chained {
    /// A decode after `token` (the last token the caller took, not yet in the cache) with room
    /// for `budget` steps; submits the first chunk (and a second, where the budget allows).
    /// `fixed`: steps a chunk (1..=[`MAX_CHAIN`]), or `None` to grow them as they are timed.
    /// `now`: seconds.
    ///
    /// Sampled decodes take each step's draw from `sampler` as its chunk is submitted
    /// (`GpuEngine::set_sampling` chose whether the GPU samples).
    pub fn start<B: AsRef<[u8]>>(
        e: &mut GpuEngine<B>,
        sampler: &mut Sampler,
        token: u32,
        budget: usize,
        fixed: Option<usize>,
        now: f64,
    ) -> Result<Self, GpuEngineError> {
        let mut c = Self {
            fixed: fixed.map(|k| k.clamp(1, MAX_CHAIN)),
            growth: Growth::default(),
            budget,
            read_start: e.position(),
            submitted: Default::default(),
            last_done: None,
            waited_s: 0.0,
            steps_read: 0,
            chunks: 0,
        };
        c.submit(e, sampler, Some(token), now)?;
        c.submit(e, sampler, None, now)?;
        Ok(c)
    }

    /// Steps the next chunk takes.
    fn next_len(&self) -> usize {
        self.fixed.unwrap_or(self.growth.k).min(self.budget)
    }

    fn submit<B: AsRef<[u8]>>(
        &mut self,
        e: &mut GpuEngine<B>,
        sampler: &mut Sampler,
        from: Option<u32>,
        now: f64,
    ) -> Result<(), GpuEngineError> {
        let k = self.next_len();
        if k == 0 {
            return Ok(());
        }
        let draws: Vec<f64> = match e.sampler.candidates() {
            Some(_) => (0..k).map(|_| sampler.draw()).collect(),
            None => Vec::new(),
        };
        e.submit_chain(from, k, &draws)?;
        self.budget -= k;
        self.submitted.push_back(now);
        Ok(())
    }

    /// The next chunk's tokens, in order (empty once the budget is spent); the chunk after it
    /// is submitted first, so the GPU has work while the host reads. `now`: seconds.
    pub async fn next<B: AsRef<[u8]>>(
        &mut self,
        e: &mut GpuEngine<B>,
        sampler: &mut Sampler,
        now: &dyn Fn() -> f64,
    ) -> Result<Vec<u32>, GpuEngineError> {
        if e.chain.len() < 2 && !self.submitted.is_empty() {
            self.submit(e, sampler, None, now())?;
        }
        let Some(submitted) = self.submitted.pop_front() else {
            return Ok(Vec::new());
        };
        let asked = now();
        let chunk = e.read_chain_async().await?;
        let done = now();
        self.waited_s += done - asked;
        // The chunk's own time: from its submit, or from the chunk before it where that was
        // still running (the GPU took this one up only then).
        let began = self.last_done.map_or(submitted, |d| d.max(submitted));
        let k = chunk.tokens.len();
        if self.fixed.is_none() {
            self.growth.observe(k, (done - began) / k as f64);
        }
        self.last_done = Some(done);
        self.read_start = chunk.start;
        self.steps_read += k;
        self.chunks += 1;
        Ok(chunk.tokens)
    }

    /// Blocking [`Chained::next`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn next_blocking<B: AsRef<[u8]>>(
        &mut self,
        e: &mut GpuEngine<B>,
        sampler: &mut Sampler,
        now: &dyn Fn() -> f64,
    ) -> Result<Vec<u32>, GpuEngineError> {
        pollster::block_on(self.next(e, sampler, now))
    }

    /// Tokens in the cache once the caller has taken `used` tokens of the last chunk read
    /// (0 before any: the token `start` was given is not in it yet).
    pub fn position_after(&self, used: usize) -> usize {
        self.read_start + used
    }

    /// The caller stopped after taking `used` tokens of the last chunk read: the cache keeps
    /// what a step-at-a-time decode would hold, and chunks in flight are dropped.
    pub fn stop<B: AsRef<[u8]>>(&mut self, e: &mut GpuEngine<B>, used: usize) {
        e.truncate(self.position_after(used));
        self.submitted.clear();
    }
}
