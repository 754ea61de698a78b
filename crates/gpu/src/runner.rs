//! Either engine behind one interface: feed tokens, get the sampled next token. The CLI and the
//! browser's worker both drive this, so the CPU fallback and the GPU path sample identically.
//! The GPU engine reads back only the candidates the sampler needs (one when greedy).

use crate::GpuContext;
use crate::engine::{GpuEngine, GpuEngineError, MAX_TOP_K, TokenResult, Want};
use std::sync::Arc;
use tokscope_core::cpu::{CpuEngine, EngineError};
use tokscope_core::model::Model;
use tokscope_core::sampling::Sampler;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Cpu(#[from] EngineError),
    #[error(transparent)]
    Gpu(#[from] GpuEngineError),
    #[error("nothing was started: call begin_prefill or begin_decode first")]
    NothingPending,
}

impl From<crate::GpuError> for RunError {
    fn from(e: crate::GpuError) -> Self {
        RunError::Gpu(e.into())
    }
}

pub enum Runner<B> {
    /// The CPU computes at `begin_*`; `next` holds the sampled token until `finish`.
    Cpu {
        engine: Box<CpuEngine<B>>,
        next: Option<u32>,
    },
    /// The GPU is submitted at `begin_*` and read back at `finish`.
    Gpu(Box<GpuEngine<B>>),
}

/// What the GPU reads back for this sampler: its candidates, or every logit.
pub fn want_for(sampler: &Sampler) -> Want {
    match sampler.candidates_needed() {
        Some(k) if k <= MAX_TOP_K => Want::Top(k),
        _ => Want::Logits,
    }
}

/// The token a GPU step's result says: the GPU's own choice where it sampled (candidate 0,
/// its draw already taken), else the host sampler's.
fn pick(sampler: &mut Sampler, r: TokenResult) -> u32 {
    match r {
        TokenResult::Top(top) if crate::sampling::on_gpu(sampler.params()) => top[0].1,
        TokenResult::Top(top) => sampler.sample_top(&top),
        TokenResult::Logits(l) => sampler.sample(&l),
    }
}

/// Readies a GPU step for `sampler`: sampling on the GPU where it can, with this token's draw.
fn sample_on<B: AsRef<[u8]>>(e: &mut GpuEngine<B>, sampler: &mut Sampler) {
    e.set_sampling(sampler.params());
    if crate::sampling::on_gpu(sampler.params()) {
        e.set_draw(sampler.draw());
    }
}

impl<B: AsRef<[u8]>> Runner<B> {
    pub fn cpu(model: Arc<Model<B>>, context: usize) -> Result<Self, RunError> {
        Ok(Runner::Cpu {
            engine: Box::new(CpuEngine::new(model, context)?),
            next: None,
        })
    }

    /// Uploads the model; `progress(done, total)` counts weight bytes.
    pub fn gpu(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        context: usize,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, RunError> {
        Ok(Runner::Gpu(Box::new(GpuEngine::new(ctx, model, context, progress)?)))
    }

    /// Starts the prompt; its first generated token comes from `finish`.
    pub fn begin_prefill(&mut self, tokens: &[u32], sampler: &mut Sampler) -> Result<(), RunError> {
        match self {
            Runner::Cpu { engine, next } => *next = Some(sampler.sample(engine.prefill(tokens)?)),
            Runner::Gpu(e) => {
                sample_on(e, sampler);
                e.submit_prefill(tokens, want_for(sampler))?
            }
        }
        Ok(())
    }

    /// Runs the prompt's leading tokens with nothing sampled, on the CPU engine: the caller
    /// can then look for Stop before the rest. `None` on the GPU, whose prefill is one submit.
    pub fn feed(&mut self, tokens: &[u32]) -> Option<Result<(), RunError>> {
        match self {
            Runner::Cpu { engine, .. } => Some(engine.feed(tokens).map_err(RunError::from)),
            Runner::Gpu(_) => None,
        }
    }

    /// Starts appending `token`; the token after it comes from `finish`.
    pub fn begin_decode(&mut self, token: u32, sampler: &mut Sampler) -> Result<(), RunError> {
        match self {
            Runner::Cpu { engine, next } => *next = Some(sampler.sample(engine.decode(token)?)),
            Runner::Gpu(e) => {
                sample_on(e, sampler);
                e.submit(token, want_for(sampler))?
            }
        }
        Ok(())
    }

    /// Waits for the started step and samples its token (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn finish(&mut self, sampler: &mut Sampler) -> Result<u32, RunError> {
        match self {
            Runner::Cpu { next, .. } => next.take().ok_or(RunError::NothingPending),
            Runner::Gpu(e) => Ok(pick(sampler, e.read()?)),
        }
    }

    /// Awaits the started step and samples its token (the browser: the event loop drives the
    /// GPU's map, and other messages, such as Stop, are handled meanwhile).
    pub async fn finish_async(&mut self, sampler: &mut Sampler) -> Result<u32, RunError> {
        match self {
            Runner::Cpu { next, .. } => next.take().ok_or(RunError::NothingPending),
            Runner::Gpu(e) => Ok(pick(sampler, e.read_async().await?)),
        }
    }

    /// Runs the prompt and samples the first generated token (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefill(&mut self, tokens: &[u32], sampler: &mut Sampler) -> Result<u32, RunError> {
        self.begin_prefill(tokens, sampler)?;
        self.finish(sampler)
    }

    /// Appends `token` and samples the next (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode(&mut self, token: u32, sampler: &mut Sampler) -> Result<u32, RunError> {
        self.begin_decode(token, sampler)?;
        self.finish(sampler)
    }

    /// The GPU engine, where this runner is one (chained decode drives it directly).
    pub fn gpu_engine(&mut self) -> Option<&mut GpuEngine<B>> {
        match self {
            Runner::Cpu { .. } => None,
            Runner::Gpu(e) => Some(e),
        }
    }

    pub fn reset(&mut self) {
        match self {
            Runner::Cpu { engine, next } => {
                engine.reset();
                *next = None;
            }
            Runner::Gpu(e) => e.reset(),
        }
    }

    /// Tokens in the context so far, and its capacity.
    pub fn fill(&self) -> (usize, usize) {
        match self {
            Runner::Cpu { engine, .. } => (engine.position(), engine.context_capacity()),
            Runner::Gpu(e) => (e.position(), e.context_capacity()),
        }
    }

    /// (buffers, bytes) created on the GPU device so far; `None` on the CPU engine. Decoding
    /// creates none: every buffer is made at load, and the soak measurements check it.
    pub fn gpu_buffers(&self) -> Option<(u64, u64)> {
        match self {
            Runner::Cpu { .. } => None,
            Runner::Gpu(e) => Some(e.ctx.created.get()),
        }
    }

    /// Bytes one cached K or V value takes in this engine's cache (f32 on the CPU, f16 on the
    /// GPU): what `Model::bytes_per_token` counts for it.
    pub fn kv_value_bytes(&self) -> u64 {
        match self {
            Runner::Cpu { .. } => tokscope_core::cpu::KV_VALUE_BYTES,
            Runner::Gpu(_) => crate::engine::KV_VALUE_BYTES,
        }
    }

    /// The capacity, once the context is full.
    pub fn full(&self) -> Option<usize> {
        let (pos, cap) = self.fill();
        (pos == cap).then_some(cap)
    }
}
