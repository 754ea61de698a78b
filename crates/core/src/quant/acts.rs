//! Activations as the matrix kernels consume them: f32 rows, plus each row quantized to 8-bit
//! blocks of 32 so quantized weights can be dotted in integers.
//!
//! This is what ggml's CPU backend does (`vec_dot_type` Q8_0 for Q4_0/Q8_0 weights, Q8_1 for
//! Q4_1: ggml/src/ggml-cpu/ggml-cpu.c), so our logits track llama.cpp's. We keep the scale and
//! the block sum in f32 (ggml rounds them to f16), which is slightly more accurate.

use super::blocks::QK;

/// One token's activations, borrowed from [`Acts`].
#[derive(Clone, Copy)]
pub struct ActRow<'a> {
    pub x: &'a [f32],
    /// Per block: scale `d` (x ≈ d · q).
    pub d: &'a [f32],
    /// Per block: `d · Σ q`, the term Q4_0's offset and Q4_1's minimum multiply.
    pub s: &'a [f32],
    pub qs: &'a [i8],
}

/// `n` rows × `cols` activations, sized once for the largest batch and reused: no allocation
/// per token.
pub struct Acts {
    n: usize,
    cols: usize,
    x: Vec<f32>,
    d: Vec<f32>,
    s: Vec<f32>,
    qs: Vec<i8>,
}

impl Acts {
    pub fn new(max_n: usize, cols: usize) -> Self {
        let blocks = cols.div_ceil(QK);
        Self {
            n: max_n,
            cols,
            x: vec![0.0; max_n * cols],
            d: vec![0.0; max_n * blocks],
            s: vec![0.0; max_n * blocks],
            qs: vec![0; max_n * blocks * QK],
        }
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Uses the first `n` rows (`n` ≤ the capacity given to [`Acts::new`]).
    pub fn set_n(&mut self, n: usize) {
        assert!(n * self.cols <= self.x.len(), "batch {n} exceeds capacity");
        self.n = n;
    }

    pub fn x(&self) -> &[f32] {
        &self.x[..self.n * self.cols]
    }

    pub fn x_mut(&mut self) -> &mut [f32] {
        let len = self.n * self.cols;
        &mut self.x[..len]
    }

    /// Quantizes every used row; call after writing `x` and before a quantized matmul.
    /// Rows whose length is not a multiple of 32 are only usable with float weights.
    pub fn quantize(&mut self) {
        if !self.cols.is_multiple_of(QK) {
            return;
        }
        let blocks = self.cols / QK;
        for t in 0..self.n {
            let x = &self.x[t * self.cols..(t + 1) * self.cols];
            let qs = &mut self.qs[t * self.cols..(t + 1) * self.cols];
            for b in 0..blocks {
                let xb = &x[b * QK..(b + 1) * QK];
                let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                let mut sum = 0i32;
                for (q, v) in qs[b * QK..(b + 1) * QK].iter_mut().zip(xb) {
                    *q = (v * id).round() as i8;
                    sum += *q as i32;
                }
                self.d[t * blocks + b] = d;
                self.s[t * blocks + b] = d * sum as f32;
            }
        }
    }

    pub fn row(&self, t: usize) -> ActRow<'_> {
        debug_assert!(t < self.n);
        let blocks = self.cols.div_ceil(QK);
        ActRow {
            x: &self.x[t * self.cols..(t + 1) * self.cols],
            d: &self.d[t * blocks..(t + 1) * blocks],
            s: &self.s[t * blocks..(t + 1) * blocks],
            qs: &self.qs[t * blocks * QK..(t + 1) * blocks * QK],
        }
    }
}
