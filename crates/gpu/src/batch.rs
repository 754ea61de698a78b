//! B sequences decoded together, greedily, on either engine: the CLI's batch sweep and the
//! page's batch dial drive this. One step appends a token to every sequence in one pass, so the
//! weights are read once for all of them (the lesson: aggregate tok/s grows with B while one
//! sequence's rate barely moves, as long as decoding is bandwidth-bound).

use crate::GpuContext;
use crate::engine::{GpuEngine, TokenResult, Want};
use crate::runner::RunError;
use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::sampling::argmax;

pub enum Batch<B> {
    /// The CPU computes at `begin_*`; `next` holds the tokens until `finish`.
    Cpu { engine: Box<CpuEngine<B>>, next: Vec<u32> },
    /// The GPU is submitted at `begin_*` and read back (one candidate per sequence) at `finish`.
    Gpu(Box<GpuEngine<B>>),
}

fn greedy(results: Vec<TokenResult>) -> Vec<u32> {
    results.into_iter().map(|r| r.into_top()[0].1).collect()
}

impl<B: AsRef<[u8]>> Batch<B> {
    /// `seqs` sequences of up to `context` tokens each on the CPU engine.
    pub fn cpu(model: Arc<Model<B>>, context: usize, seqs: usize) -> Result<Self, RunError> {
        Ok(Batch::Cpu {
            engine: Box::new(CpuEngine::with_sequences(model, context, seqs)?),
            next: vec![],
        })
    }

    /// The same on the GPU (uploads the model).
    pub fn gpu(ctx: Arc<GpuContext>, model: Arc<Model<B>>, context: usize, seqs: usize) -> Result<Self, RunError> {
        Ok(Batch::Gpu(Box::new(GpuEngine::with_sequences(
            ctx,
            model,
            context,
            seqs,
            |_, _| {},
        )?)))
    }

    /// The same over the weights `engine` already holds on the GPU: new sequence state, no
    /// second upload.
    pub fn gpu_sharing(engine: &GpuEngine<B>, context: usize, seqs: usize) -> Result<Self, RunError> {
        Ok(Batch::Gpu(Box::new(engine.sharing_weights(context, seqs)?)))
    }

    pub fn sequences(&self) -> usize {
        match self {
            Batch::Cpu { engine, .. } => engine.sequences(),
            Batch::Gpu(e) => e.sequences(),
        }
    }

    /// Bytes one cached K or V value takes in this engine's cache (as [`Runner::kv_value_bytes`](crate::runner::Runner::kv_value_bytes)).
    pub fn kv_value_bytes(&self) -> u64 {
        match self {
            Batch::Cpu { .. } => tokscope_core::cpu::KV_VALUE_BYTES,
            Batch::Gpu(_) => crate::engine::KV_VALUE_BYTES,
        }
    }

    /// Empties every sequence.
    pub fn reset(&mut self) {
        match self {
            Batch::Cpu { engine, next } => {
                engine.reset();
                next.clear();
            }
            Batch::Gpu(e) => e.reset(),
        }
    }

    /// Starts sequence `seq`'s prompt; `finish` returns its first token (alone).
    pub fn begin_prefill(&mut self, seq: usize, prompt: &[u32]) -> Result<(), RunError> {
        match self {
            Batch::Cpu { engine, next } => *next = vec![argmax(engine.prefill_seq(seq, prompt)?)],
            Batch::Gpu(e) => e.submit_prefill_seq(seq, prompt, Want::Top(1))?,
        }
        Ok(())
    }

    /// Starts appending `tokens[s]` to every sequence `s`; `finish` returns each one's next.
    pub fn begin_step(&mut self, tokens: &[u32]) -> Result<(), RunError> {
        match self {
            Batch::Cpu { engine, next } => {
                let vocab = engine.model().config.vocab_size;
                let logits = engine.decode_batch(tokens)?;
                *next = logits.chunks_exact(vocab).map(argmax).collect();
            }
            Batch::Gpu(e) => e.submit_batch(tokens, Want::Top(1))?,
        }
        Ok(())
    }

    /// Waits for the started pass and returns its greedy tokens (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn finish(&mut self) -> Result<Vec<u32>, RunError> {
        match self {
            Batch::Cpu { next, .. } => Ok(std::mem::take(next)),
            Batch::Gpu(e) => Ok(greedy(e.read_all()?)),
        }
    }

    /// Awaits the started pass and returns its greedy tokens (the browser).
    pub async fn finish_async(&mut self) -> Result<Vec<u32>, RunError> {
        match self {
            Batch::Cpu { next, .. } => Ok(std::mem::take(next)),
            Batch::Gpu(e) => Ok(greedy(e.read_all_async().await?)),
        }
    }
}
