//! The GPU executor of a [`ModelDesc`](tokscope_core::model::ModelDesc). It is three parts: the
//! weights, uploaded once and shared by every engine over the same model (weights.rs); the
//! graph, the dispatch list a family's steps become (graph.rs); and the state of the sequences
//! it decodes (sequences.rs). Everything is made at load; a token writes its id (looked up on
//! the GPU, embed.rs; where the embedding's type has no lookup kernel, its row), RoPE table and
//! step uniform (a few KB), records one compute pass and submits it once, with the copy of its
//! result (the top-k candidates: 8 bytes when greedy; sampling on the GPU leaves its choice
//! first, sampling.rs) in the same submit. Chained decode (chain.rs) records many such steps in
//! one submit.
//!
//! A pass computes up to [`MAX_COLUMNS`] tokens (columns) with the same dispatches: a prefill
//! chunk of one sequence (its attention causal, column by column), or one token of each of up
//! to [`MAX_SEQUENCES`] sequences (batched decode: the weights read once for all of them). Each
//! column carries its own cache row, position and rotation in the step uniform.

use crate::graph::{Columns, Dispatch, Kernels};
use crate::matvec::{MAX_COLUMNS, Step};
use crate::sequences::Sequences;
use crate::weights::Weights;
use crate::{GpuContext, GpuError};
use std::sync::Arc;
use tokscope_core::cpu::EngineError;
use tokscope_core::cpu::ops::rope_table;
use tokscope_core::model::Model;

pub use crate::engine_error::GpuEngineError;
pub use crate::graph::{KernelClass, MAX_TOP_K, OPS_SHADER, ops_source};
pub use crate::sequences::{KV_VALUE_BYTES, MAX_SEQUENCES};

/// One kernel class's share of a profiled token.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ClassTime {
    pub class: KernelClass,
    pub dispatches: usize,
    /// Seconds its kernels ran (GPU timestamps at each dispatch's ends), or with
    /// `timestamps: false`, seconds from submit to done per dispatch, launch included.
    pub seconds: f64,
}

/// Where a token's time goes, per kernel class ([`GpuEngine::profile`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Profile {
    pub classes: Vec<ClassTime>,
    /// Whether the times are GPU timestamps (kernel run time alone).
    pub timestamps: bool,
}

impl Profile {
    pub fn seconds(&self) -> f64 {
        self.classes.iter().map(|c| c.seconds).sum()
    }
}

/// What a submitted token leaves to read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The `k` (1 ≤ k ≤ [`MAX_TOP_K`]) highest logits with their tokens.
    Top(usize),
    /// Every logit.
    Logits,
}

pub struct GpuEngine<B> {
    pub(crate) model: Arc<Model<B>>,
    pub ctx: Arc<GpuContext>,
    weights: Arc<Weights>,
    pub(crate) kernels: Kernels,
    pub(crate) state: Sequences,
    pub(crate) dispatches: Vec<Dispatch>,
    /// The layers' dispatches, the embedding lookup's first (the rest: the head's slices and
    /// top-k).
    pub(crate) layer_dispatches: usize,
    /// What the last submit leaves to read back: per column, for this many columns.
    pending: Option<(Want, usize)>,
    pub(crate) read_buf: Vec<u8>,
    /// Tokens in each sequence's cache.
    pub(crate) pos: Vec<usize>,
    /// The pass's embedding rows (where the host writes them: no lookup kernel for the
    /// embedding's type) and rotations, column after column.
    embed_rows: Vec<f32>,
    cos_sin: Vec<f32>,
    /// Chunks of chained steps submitted and not yet read (chain.rs).
    pub(crate) chain: crate::sequences::InFlight,
    /// Sampling on the GPU, where the parameters allow it (sampling.rs).
    pub(crate) sampler: crate::sampling::GpuSampler,
}

impl<B: AsRef<[u8]>> GpuEngine<B> {
    /// Uploads the model (repacking every matrix once) with room for `context` tokens.
    /// `progress(done, total)` is called with weight bytes uploaded.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        context: usize,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuEngineError> {
        Self::with_sequences(ctx, model, context, 1, progress)
    }

    /// [`GpuEngine::new`] for `seqs` (1 ≤ seqs ≤ [`MAX_SEQUENCES`]) independent sequences of up
    /// to `context` tokens each, decoded together by [`GpuEngine::submit_batch`]: one read of
    /// the weights per step for all of them.
    #[cfg_attr(
        target_arch = "wasm32",
        expect(
            clippy::arc_with_non_send_sync,
            reason = "wgpu's wasm types are not Send: one thread"
        )
    )]
    pub fn with_sequences(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        context: usize,
        seqs: usize,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuEngineError> {
        let kernels = Kernels::new(&ctx, &model)?;
        let group = kernels.matvec.shape().rows as usize;
        let weights = Weights::upload(&ctx, &model, group, kernels.qkv_post.is_some(), progress)?;
        Self::over(ctx, model, Arc::new(weights), kernels, context, seqs)
    }

    /// Another engine over this one's weights (no upload): `seqs` sequences of `context` tokens
    /// — the batch dial's engines beside the page's.
    pub fn sharing_weights(&self, context: usize, seqs: usize) -> Result<Self, GpuEngineError> {
        let kernels = Kernels::new(&self.ctx, &self.model)?;
        Self::over(
            self.ctx.clone(),
            self.model.clone(),
            self.weights.clone(),
            kernels,
            context,
            seqs,
        )
    }

    /// The sequences' state and the graph over `weights`.
    fn over(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        weights: Arc<Weights>,
        mut kernels: Kernels,
        context: usize,
        seqs: usize,
    ) -> Result<Self, GpuEngineError> {
        if !(1..=MAX_SEQUENCES).contains(&seqs) {
            return Err(GpuEngineError::Batch(format!(
                "{seqs} sequences: the GPU engine decodes 1 to {MAX_SEQUENCES} together"
            )));
        }
        let c = &model.config;
        let capacity = context.clamp(1, c.context_length);
        let state = Sequences::new(&ctx, &model, kernels.needs(), capacity, seqs)?;
        let (dispatches, layer_dispatches) = crate::graph::build(&ctx, &model, &mut kernels, &weights, &state);
        let sampler = crate::sampling::GpuSampler::new(&ctx, &state.candidates);
        Ok(Self {
            cos_sin: vec![0.0; state.inv_freqs.len() * MAX_COLUMNS * c.head_dim],
            embed_rows: vec![
                0.0;
                if kernels.embed.is_some() {
                    0
                } else {
                    MAX_COLUMNS * c.d_model
                }
            ],
            pos: vec![0; seqs],
            model,
            ctx,
            weights,
            kernels,
            state,
            dispatches,
            layer_dispatches,
            pending: None,
            read_buf: Vec::new(),
            chain: Default::default(),
            sampler,
        })
    }

    /// Whether two engines share one upload of the weights.
    pub fn shares_weights_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.weights, &other.weights)
    }

    /// Tokens in sequence 0's cache (the one `submit` and `submit_prefill` use).
    pub fn position(&self) -> usize {
        self.pos[0]
    }

    /// Sequences this engine holds.
    pub fn sequences(&self) -> usize {
        self.pos.len()
    }

    /// Empties every sequence's cache (and forgets chained chunks not yet read).
    pub fn reset(&mut self) {
        self.pos.fill(0);
        self.chain.clear();
    }

    /// Samples on the GPU with `p` from the next submit on, where `sampling::on_gpu` holds
    /// (each token then needs its draw: [`GpuEngine::set_draw`]); greedy or uncut sampling
    /// records nothing.
    pub fn set_sampling(&mut self, p: &tokscope_core::sampling::SamplingParams) {
        self.sampler.set(&self.ctx.queue, p);
    }

    /// The next submit's uniform draw in [0, 1) (the host's `Sampler::draw`).
    pub fn set_draw(&mut self, u: f64) {
        self.ctx
            .queue
            .write_buffer(&self.sampler.draw, 0, bytemuck::bytes_of(&(u as f32)));
    }

    /// Whether the token embedding is looked up on the GPU (embed.rs), as chained steps need.
    pub fn looks_up_embedding(&self) -> bool {
        self.kernels.embed.is_some()
    }

    pub fn context_capacity(&self) -> usize {
        self.state.capacity
    }

    /// Dispatches recorded per decoded token.
    pub fn dispatches_per_token(&self) -> usize {
        self.dispatches.len()
    }

    /// Bytes one column's result takes.
    fn result_bytes(&self, want: Want) -> u64 {
        match want {
            Want::Top(k) => (k * 8) as u64,
            Want::Logits => (self.model.config.vocab_size * 4) as u64,
        }
    }

    /// Checks the pass (`(sequence, token)` per column; a sequence's columns are its next
    /// tokens, in order) and writes its embedding rows, rotations and step uniform. `head`: the
    /// first column whose next-token result is wanted, and what of it.
    fn prepare(&mut self, cols: &[(usize, u32)], head: Option<(usize, Want)>) -> Result<Columns, GpuEngineError> {
        let c = &self.model.config;
        let n = cols.len();
        assert!((1..=MAX_COLUMNS).contains(&n), "{n} columns in one pass");
        if let Some((from, Want::Top(k))) = head {
            assert!((1..=MAX_TOP_K).contains(&k), "top-k of {k} candidates");
            assert!(
                n - from <= self.sequences(),
                "{} results for {} sequences",
                n - from,
                self.sequences()
            );
        }
        let (d, hd, half) = (c.d_model, c.head_dim, c.head_dim / 2);
        let mut pos = self.pos.clone();
        let mut step: Step = bytemuck::Zeroable::zeroed();
        for (j, &(seq, token)) in cols.iter().enumerate() {
            if token as usize >= c.vocab_size {
                return Err(EngineError::TokenOutOfRange {
                    token,
                    vocab: c.vocab_size,
                }
                .into());
            }
            if pos[seq] >= self.state.capacity {
                let needed = self.pos[seq] + cols.iter().filter(|(s, _)| *s == seq).count();
                return Err(EngineError::ContextFull {
                    needed,
                    capacity: self.state.capacity,
                }
                .into());
            }
            if !self.looks_up_embedding() {
                self.model.embed(token, &mut self.embed_rows[j * d..(j + 1) * d]);
            }
            for (t, inv_freq) in self.state.inv_freqs.iter().enumerate() {
                let at = (t * MAX_COLUMNS + j) * hd;
                let (cos, sin) = self.cos_sin[at..at + hd].split_at_mut(half);
                rope_table(pos[seq], inv_freq, cos, sin);
            }
            let start = seq * self.state.capacity;
            step.cols[j] = [(start + pos[seq]) as u32, pos[seq] as u32, start as u32, 0];
            pos[seq] += 1;
        }
        step.n = n as u32;
        let longest = cols.iter().map(|&(seq, _)| pos[seq]).max().unwrap_or(1);
        let splits = self.splits(longest);
        step.splits = splits;
        let (from, want) = head.unwrap_or((n, Want::Top(1)));
        step.head_from = from as u32;
        step.k = match want {
            Want::Top(k) => k as u32,
            Want::Logits => 0,
        };
        let q = &self.ctx.queue;
        if self.looks_up_embedding() {
            let tokens: Vec<u32> = cols.iter().map(|&(_, t)| t).collect();
            q.write_buffer(&self.state.tokens, 0, bytemuck::cast_slice(&tokens));
        } else {
            q.write_buffer(&self.state.x, 0, bytemuck::cast_slice(&self.embed_rows[..n * d]));
        }
        q.write_buffer(&self.state.rope, 0, bytemuck::cast_slice(&self.cos_sin));
        q.write_buffer(&self.state.step, 0, bytemuck::bytes_of(&step));
        self.pos = pos;
        Ok(Columns {
            n,
            head: n - from,
            splits,
        })
    }

    /// Attention's shares per (column, head) for a pass whose longest column attends to
    /// `longest` positions: one share per workgroup's worth of them.
    pub(crate) fn splits(&self, longest: usize) -> u32 {
        longest.div_ceil(self.kernels.ops_wg).clamp(1, self.state.max_splits) as u32
    }

    fn copy_result(&self, enc: &mut wgpu::CommandEncoder, want: Want, columns: usize) {
        let src = match want {
            Want::Top(_) => &self.state.candidates,
            Want::Logits => &self.state.logits,
        };
        self.state
            .staging
            .copy_from(enc, src, columns as u64 * self.result_bytes(want));
    }

    /// Records and submits one token's pass (and the copy of its result) without waiting:
    /// one encoder, one compute pass, one submit. Read the result with [`GpuEngine::read`]
    /// (native) or [`GpuEngine::read_async`] (browser) before the next submit.
    pub fn submit(&mut self, token: u32, want: Want) -> Result<(), GpuEngineError> {
        self.submit_columns(&[(0, token)], Some((0, want)))
    }

    /// Appends `tokens[s]` to sequence `s` for every sequence in one pass (the weights read
    /// once for all of them); read each one's result with [`GpuEngine::read_all`] or
    /// [`GpuEngine::read_all_async`].
    pub fn submit_batch(&mut self, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        if tokens.len() != self.sequences() {
            return Err(GpuEngineError::Batch(format!(
                "{} tokens for {} sequences: one token per sequence",
                tokens.len(),
                self.sequences()
            )));
        }
        let cols: Vec<(usize, u32)> = tokens.iter().copied().enumerate().collect();
        self.submit_columns(&cols, Some((0, want)))
    }

    /// One pass over `cols`, its result (from column `head.0` on) copied for read-back.
    fn submit_columns(&mut self, cols: &[(usize, u32)], head: Option<(usize, Want)>) -> Result<(), GpuEngineError> {
        self.chain.clear();
        let columns = self.prepare(cols, head)?;
        let upto = match head {
            Some(_) => self.dispatches.len(),
            None => self.layer_dispatches,
        };
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for (i, d) in self.dispatches[..upto].iter().enumerate() {
                self.kernels.record(&mut pass, d, columns, i >= self.layer_dispatches);
            }
            if head.is_some() {
                self.sampler.record(&mut pass);
            }
        }
        if let Some((_, want)) = head {
            self.copy_result(&mut enc, want, columns.head);
        }
        self.ctx.queue.submit([enc.finish()]);
        self.pending = head.map(|(_, want)| (want, columns.head));
        Ok(())
    }

    fn decode_results(&self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let Some((want, columns)) = self.pending else {
            return Err(GpuError::Readback("nothing was submitted".into()).into());
        };
        let per = self.result_bytes(want) as usize;
        Ok(self.read_buf[..columns * per]
            .chunks_exact(per)
            .map(|bytes| {
                let words: &[u32] = bytemuck::cast_slice(bytes);
                match want {
                    Want::Top(_) => {
                        TokenResult::Top(words.chunks_exact(2).map(|p| (f32::from_bits(p[0]), p[1])).collect())
                    }
                    Want::Logits => TokenResult::Logits(bytemuck::cast_slice(words).to_vec()),
                }
            })
            .collect())
    }

    fn pending_bytes(&self) -> Result<u64, GpuEngineError> {
        let (want, columns) = self
            .pending
            .ok_or_else(|| GpuError::Readback("nothing was submitted".into()))?;
        Ok(columns as u64 * self.result_bytes(want))
    }

    /// Waits for the last submit and returns its result (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read(&mut self) -> Result<TokenResult, GpuEngineError> {
        Ok(self.read_all()?.swap_remove(0))
    }

    /// Waits for the last submit and returns each column's result (a batch: one per sequence).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_all(&mut self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let bytes = self.pending_bytes()?;
        self.state.staging.read(&self.ctx, bytes, &mut self.read_buf)?;
        let r = self.decode_results();
        self.pending = None;
        r
    }

    /// Awaits the last submit's result (the browser; the event loop drives the map).
    pub async fn read_async(&mut self) -> Result<TokenResult, GpuEngineError> {
        Ok(self.read_all_async().await?.swap_remove(0))
    }

    /// Awaits each column's result of the last submit (a batch: one per sequence).
    pub async fn read_all_async(&mut self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let bytes = self.pending_bytes()?;
        self.state
            .staging
            .read_async(&self.ctx, bytes, &mut self.read_buf)
            .await?;
        let r = self.decode_results();
        self.pending = None;
        r
    }

    /// Appends one token and returns every logit for the next (native; for tests and samplers
    /// that need the whole distribution).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode(&mut self, token: u32) -> Result<Vec<f32>, GpuEngineError> {
        self.submit(token, Want::Logits)?;
        Ok(self.read()?.into_logits())
    }

    /// Appends one token and returns the `k` highest logits for the next, highest first.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode_top(&mut self, token: u32, k: usize) -> Result<Vec<(f32, u32)>, GpuEngineError> {
        self.submit(token, Want::Top(k))?;
        Ok(self.read()?.into_top())
    }

    /// Appends one token to every sequence and returns each one's logits for its next token.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode_batch(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>, GpuEngineError> {
        self.submit_batch(tokens, Want::Logits)?;
        Ok(self.read_all()?.into_iter().map(TokenResult::into_logits).collect())
    }

    /// The prompt in passes of up to [`MAX_COLUMNS`] tokens (the result is read only for the
    /// last token).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefill(&mut self, tokens: &[u32], want: Want) -> Result<TokenResult, GpuEngineError> {
        self.submit_prefill(tokens, want)?;
        self.read()
    }

    /// Submits the prompt into sequence 0, leaving the last token's result to read back
    /// ([`GpuEngine::read`] or [`GpuEngine::read_async`]).
    pub fn submit_prefill(&mut self, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        self.submit_prefill_seq(0, tokens, want)
    }

    /// Submits the prompt into sequence `seq`: passes of up to [`MAX_COLUMNS`] tokens, each a
    /// matrix-matrix product per weight (every weight word serves several tokens) and causal
    /// attention per column, one submit each and no read-back between them; the output head
    /// runs for the last token only.
    pub fn submit_prefill_seq(&mut self, seq: usize, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt.into());
        }
        if seq >= self.sequences() {
            return Err(GpuEngineError::Batch(format!(
                "sequence {seq} of an engine holding {}",
                self.sequences()
            )));
        }
        if self.pos[seq] + tokens.len() > self.state.capacity {
            return Err(EngineError::ContextFull {
                needed: self.pos[seq] + tokens.len(),
                capacity: self.state.capacity,
            }
            .into());
        }
        let chunks: Vec<&[u32]> = tokens.chunks(MAX_COLUMNS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let cols: Vec<(usize, u32)> = chunk.iter().map(|&t| (seq, t)).collect();
            let head = (i + 1 == chunks.len()).then_some((chunk.len() - 1, want));
            self.submit_columns(&cols, head)?;
        }
        Ok(())
    }

    /// Decodes `token` like [`GpuEngine::submit`], but times each kernel class: with GPU
    /// timestamps (one pass per dispatch, timestamps at its ends) where the adapter has
    /// `timestamp-query`, else one submit per dispatch timed on the CPU (submit → done).
    /// Returns dispatches and seconds per class; the token's result is then read as usual.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn profile(&mut self, token: u32, want: Want) -> Result<Profile, GpuEngineError> {
        let columns = self.prepare(&[(0, token)], Some((0, want)))?;
        let n = self.dispatches.len();
        let mut secs = vec![0f64; n];
        let timestamps = self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        if timestamps {
            let dev = &self.ctx.device;
            let set = dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile"),
                ty: wgpu::QueryType::Timestamp,
                count: (2 * n) as u32,
            });
            let resolve = self.ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profile resolve"),
                size: (16 * n) as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let mut enc = dev.create_command_encoder(&Default::default());
            for (i, d) in self.dispatches.iter().enumerate() {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &set,
                        beginning_of_pass_write_index: Some((2 * i) as u32),
                        end_of_pass_write_index: Some((2 * i + 1) as u32),
                    }),
                });
                self.kernels.record(&mut pass, d, columns, i >= self.layer_dispatches);
            }
            enc.resolve_query_set(&set, 0..(2 * n) as u32, &resolve, 0);
            self.ctx.queue.submit([enc.finish()]);
            let raw = crate::readback::read_f32(&self.ctx, &resolve, 4 * n)?;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
            let period = self.ctx.queue.get_timestamp_period() as f64 * 1e-9;
            for (i, s) in secs.iter_mut().enumerate() {
                *s = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
            }
        } else {
            for (i, d) in self.dispatches.iter().enumerate() {
                let mut enc = self.ctx.device.create_command_encoder(&Default::default());
                {
                    let mut pass = enc.begin_compute_pass(&Default::default());
                    self.kernels.record(&mut pass, d, columns, i >= self.layer_dispatches);
                }
                let start = std::time::Instant::now();
                self.ctx.queue.submit([enc.finish()]);
                self.ctx
                    .device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .map_err(|e| GpuError::Readback(e.to_string()))?;
                secs[i] = start.elapsed().as_secs_f64();
            }
        }
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        self.copy_result(&mut enc, want, 1);
        self.ctx.queue.submit([enc.finish()]);
        self.pending = Some((want, 1));
        let mut classes: Vec<ClassTime> = Vec::new();
        for (d, s) in self.dispatches.iter().zip(secs) {
            let class = d.class();
            match classes.iter_mut().find(|c| c.class == class) {
                Some(c) => {
                    c.dispatches += 1;
                    c.seconds += s;
                }
                None => classes.push(ClassTime {
                    class,
                    dispatches: 1,
                    seconds: s,
                }),
            }
        }
        Ok(Profile { classes, timestamps })
    }
}

/// A token's result as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenResult {
    /// `(logit, token)`, highest first, ties by lower token.
    Top(Vec<(f32, u32)>),
    Logits(Vec<f32>),
}

impl TokenResult {
    pub fn into_logits(self) -> Vec<f32> {
        match self {
            TokenResult::Logits(l) => l,
            TokenResult::Top(_) => panic!("the token was submitted for its top-k, not its logits"),
        }
    }

    pub fn into_top(self) -> Vec<(f32, u32)> {
        match self {
            TokenResult::Top(t) => t,
            TokenResult::Logits(_) => panic!("the token was submitted for its logits, not its top-k"),
        }
    }
}
