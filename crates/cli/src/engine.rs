//! The engine `--backend` chose, behind one interface: feed tokens, get the sampled next token.
//! The GPU engine reads back only the candidates the sampler needs (one when greedy).

use crate::args::Backend;
use crate::model_file::FileBytes;
use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::sampling::Sampler;
use tokscope_gpu::GpuContext;
use tokscope_gpu::engine::{GpuEngine, MAX_TOP_K, TokenResult, Want};

pub enum Engine {
    Cpu(Box<CpuEngine<FileBytes>>),
    Gpu(Box<GpuEngine<FileBytes>>),
}

/// What the GPU reads back for this sampler: its candidates, or every logit.
pub fn want_for(sampler: &Sampler) -> Want {
    match sampler.candidates_needed() {
        Some(k) if k <= MAX_TOP_K => Want::Top(k),
        _ => Want::Logits,
    }
}

fn pick(sampler: &mut Sampler, r: TokenResult) -> u32 {
    match r {
        TokenResult::Top(top) => sampler.sample_top(&top),
        TokenResult::Logits(l) => sampler.sample(&l),
    }
}

impl Engine {
    pub fn new(backend: Backend, model: Arc<Model<FileBytes>>, context: usize) -> Result<Self, String> {
        Ok(match backend {
            Backend::Cpu => Engine::Cpu(Box::new(CpuEngine::new(model, context).map_err(|e| e.to_string())?)),
            Backend::Gpu => {
                let ctx = Arc::new(GpuContext::new_blocking().map_err(|e| e.to_string())?);
                Engine::Gpu(Box::new(
                    GpuEngine::new(ctx, model, context, |_, _| {}).map_err(|e| e.to_string())?,
                ))
            }
        })
    }

    /// Runs the prompt and samples the first generated token.
    pub fn prefill(&mut self, tokens: &[u32], sampler: &mut Sampler) -> Result<u32, String> {
        match self {
            Engine::Cpu(e) => Ok(sampler.sample(e.prefill(tokens).map_err(|e| e.to_string())?)),
            Engine::Gpu(e) => {
                let r = e.prefill(tokens, want_for(sampler)).map_err(|e| e.to_string())?;
                Ok(pick(sampler, r))
            }
        }
    }

    /// Appends `token` and samples the next.
    pub fn decode(&mut self, token: u32, sampler: &mut Sampler) -> Result<u32, String> {
        match self {
            Engine::Cpu(e) => Ok(sampler.sample(e.decode(token).map_err(|e| e.to_string())?)),
            Engine::Gpu(e) => {
                e.submit(token, want_for(sampler)).map_err(|e| e.to_string())?;
                let r = e.read().map_err(|e| e.to_string())?;
                Ok(pick(sampler, r))
            }
        }
    }

    pub fn reset(&mut self) {
        match self {
            Engine::Cpu(e) => e.reset(),
            Engine::Gpu(e) => e.reset(),
        }
    }

    /// The capacity, once the context is full.
    pub fn full(&self) -> Option<usize> {
        let (pos, cap) = match self {
            Engine::Cpu(e) => (e.position(), e.context_capacity()),
            Engine::Gpu(e) => (e.position(), e.context_capacity()),
        };
        (pos == cap).then_some(cap)
    }
}
