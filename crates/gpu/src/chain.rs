//! Chained steps (greedy, or sampled on the GPU: sampling.rs): one submit records K decode steps
//! of sequence 0, each step's embedding lookup (embed.rs) reading the token the step before it
//! chose, so the GPU runs K tokens with no host round trip between them. The host knows every position in advance, so it writes the
//! K step uniforms and RoPE rows at once; in the command buffer each step copies its own into
//! place, then its pass, then its top candidate into the chunk's results (8 bytes a token),
//! which one copy sends to one of two staging buffers: a chunk is read back while the next one
//! runs ([`crate::chained`] keeps two in flight). How long a chunk is: core's `roofline::chain`.

use crate::GpuError;
use crate::engine::{GpuEngine, GpuEngineError};
use crate::graph::Columns;
use crate::matvec::{MAX_COLUMNS, Step};
use crate::sequences::{CHAIN_RESULT_BYTES, Chunk};
use tokscope_core::cpu::EngineError;
use tokscope_core::cpu::ops::rope_table;

pub use tokscope_core::roofline::chain::MAX_CHAIN;

/// A chunk as read back: where it started, and the token each step chose.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkTokens {
    pub start: usize,
    pub tokens: Vec<u32>,
}

impl<B: AsRef<[u8]>> GpuEngine<B> {
    /// Submits `steps` greedy decode steps of sequence 0 without waiting: the first appends
    /// `from` (or, with `None`, the token the last chunk's last step chose, still on the GPU),
    /// each later one the token the step before chose. Two chunks may be in flight; read them
    /// in order with [`GpuEngine::read_chain`] or [`GpuEngine::read_chain_async`].
    ///
    /// Where the engine samples on the GPU ([`GpuEngine::set_sampling`]), `draws` holds each
    /// step's uniform draw (the host's, in order); greedy chains take none.
    pub fn submit_chain(&mut self, from: Option<u32>, steps: usize, draws: &[f64]) -> Result<(), GpuEngineError> {
        let c = &self.model.config;
        if !self.looks_up_embedding() {
            return Err(GpuEngineError::Unsupported(format!(
                "chained steps: the embedding's type ({}) is looked up on the host",
                self.model.desc.token_embd.ty
            )));
        }
        assert!((1..=MAX_CHAIN).contains(&steps), "{steps} steps in one chunk");
        assert!(self.chain.len() < 2, "two chunks are already in flight");
        let sampled = self.sampler.candidates();
        assert_eq!(
            draws.len(),
            if sampled.is_some() { steps } else { 0 },
            "a draw per sampled step"
        );
        if let Some(t) = from
            && t as usize >= c.vocab_size
        {
            return Err(EngineError::TokenOutOfRange {
                token: t,
                vocab: c.vocab_size,
            }
            .into());
        }
        let start = self.pos[0];
        if start + steps > self.state.capacity {
            return Err(EngineError::ContextFull {
                needed: start + steps,
                capacity: self.state.capacity,
            }
            .into());
        }
        let hd = c.head_dim;
        let tables = self.state.inv_freqs.len();
        let mut uniforms: Vec<Step> = Vec::with_capacity(steps);
        let mut rope = vec![0f32; steps * tables * hd];
        for i in 0..steps {
            let p = start + i;
            let mut step: Step = bytemuck::Zeroable::zeroed();
            step.k = sampled.unwrap_or(1) as u32;
            step.n = 1;
            step.splits = self.splits(p + 1);
            step.cols[0] = [p as u32, p as u32, 0, 0];
            uniforms.push(step);
            for (t, inv_freq) in self.state.inv_freqs.iter().enumerate() {
                let at = (i * tables + t) * hd;
                let (cos, sin) = rope[at..at + hd].split_at_mut(hd / 2);
                rope_table(p, inv_freq, cos, sin);
            }
        }
        let (q, s) = (&self.ctx.queue, &self.state);
        q.write_buffer(&s.chain_steps, 0, bytemuck::cast_slice(&uniforms));
        q.write_buffer(&s.chain_rope, 0, bytemuck::cast_slice(&rope));
        if let Some(t) = from {
            q.write_buffer(&s.tokens, 0, bytemuck::bytes_of(&t));
        }
        if !draws.is_empty() {
            let d: Vec<f32> = draws.iter().map(|&u| u as f32).collect();
            q.write_buffer(&self.sampler.chain_draws, 0, bytemuck::cast_slice(&d));
        }
        let step_bytes = std::mem::size_of::<Step>() as u64;
        let row_bytes = (hd * 4) as u64;
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        for (i, u) in uniforms.iter().enumerate() {
            enc.copy_buffer_to_buffer(&s.chain_steps, i as u64 * step_bytes, &s.step, 0, step_bytes);
            for t in 0..tables {
                let src = ((i * tables + t) * hd * 4) as u64;
                let dst = (t * MAX_COLUMNS * hd * 4) as u64;
                enc.copy_buffer_to_buffer(&s.chain_rope, src, &s.rope, dst, row_bytes);
            }
            if i > 0 || from.is_none() {
                // The token the step before chose: the second word of its top candidate.
                enc.copy_buffer_to_buffer(&s.candidates, 4, &s.tokens, 0, 4);
            }
            if !draws.is_empty() {
                enc.copy_buffer_to_buffer(&self.sampler.chain_draws, 4 * i as u64, &self.sampler.draw, 0, 4);
            }
            let columns = Columns {
                n: 1,
                head: 1,
                splits: u.splits,
            };
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for (j, d) in self.dispatches.iter().enumerate() {
                    self.kernels.record(&mut pass, d, columns, j >= self.layer_dispatches);
                }
                self.sampler.record(&mut pass);
            }
            let out = (i * CHAIN_RESULT_BYTES) as u64;
            enc.copy_buffer_to_buffer(&s.candidates, 0, &s.chain_out, out, CHAIN_RESULT_BYTES as u64);
        }
        let staging = self.chain.next_staging;
        s.chain_staging[staging].copy_from(&mut enc, &s.chain_out, (steps * CHAIN_RESULT_BYTES) as u64);
        q.submit([enc.finish()]);
        self.chain.next_staging = 1 - staging;
        self.chain.chunks.push_back(Chunk { start, steps, staging });
        self.pos[0] = start + steps;
        Ok(())
    }

    /// Awaits the oldest chunk in flight and returns the token each of its steps chose.
    pub async fn read_chain_async(&mut self) -> Result<ChunkTokens, GpuEngineError> {
        let chunk = *self
            .chain
            .chunks
            .front()
            .ok_or_else(|| GpuError::Readback("no chained chunk was submitted".into()))?;
        let bytes = (chunk.steps * CHAIN_RESULT_BYTES) as u64;
        self.state.chain_staging[chunk.staging]
            .read_async(&self.ctx, bytes, &mut self.read_buf)
            .await?;
        self.chain.chunks.pop_front();
        let words: &[u32] = bytemuck::cast_slice(&self.read_buf);
        Ok(ChunkTokens {
            start: chunk.start,
            tokens: words.chunks_exact(2).map(|p| p[1]).collect(),
        })
    }

    /// [`GpuEngine::read_chain_async`], blocking (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_chain(&mut self) -> Result<ChunkTokens, GpuEngineError> {
        pollster::block_on(self.read_chain_async())
    }

    /// Keeps sequence 0's first `len` cached tokens and forgets chunks in flight: where a
    /// chain ends (end of text, max tokens, Stop) the steps past it did not happen. Their cache
    /// rows are written again before anything reads them.
    pub fn truncate(&mut self, len: usize) {
        self.pos[0] = self.pos[0].min(len);
        self.chain.clear();
    }
}
