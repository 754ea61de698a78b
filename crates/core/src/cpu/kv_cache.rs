//! The K and V of every past token, per layer, in f32: `[layer][position][kv_dim]`.
//! Grouped-query attention keeps only the KV heads (3 for SmolLM2, not 9), so the cache is
//! `n_kv_heads / n_heads` the size a multi-head model would need.
//!
//! f32, where llama.cpp's default cache and the GPU engine's are f16: rounding K and V to f16
//! here (tried) moved this engine further from llama.cpp's tokens (7 top-1 flips on the SmolLM2
//! fixtures against 4 with f32; llama.cpp also rounds Q and the softmax to f16), and converting
//! on every read would cost attention, which reads each value as often as it computes with it.

/// Bytes a cached value takes in this engine.
pub const VALUE_BYTES: u64 = 4;

pub struct KvCache {
    capacity: usize,
    kv_dim: usize,
    k: Vec<f32>,
    v: Vec<f32>,
}

impl KvCache {
    pub fn new(n_layers: usize, capacity: usize, kv_dim: usize) -> Self {
        Self {
            capacity,
            kv_dim,
            k: vec![0.0; n_layers * capacity * kv_dim],
            v: vec![0.0; n_layers * capacity * kv_dim],
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn range(&self, layer: usize, pos: usize, n: usize) -> std::ops::Range<usize> {
        let start = (layer * self.capacity + pos) * self.kv_dim;
        start..start + n * self.kv_dim
    }

    /// Stores `k` and `v` rows for `n = k.len() / kv_dim` tokens starting at `pos`.
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let r = self.range(layer, pos, k.len() / self.kv_dim);
        self.k[r.clone()].copy_from_slice(k);
        self.v[r].copy_from_slice(v);
    }

    /// Keys and values of positions `0..len` in `layer`.
    pub fn layer(&self, layer: usize, len: usize) -> (&[f32], &[f32]) {
        let r = self.range(layer, 0, len);
        (&self.k[r.clone()], &self.v[r])
    }
}
