//! Activations as the matrix kernels consume them: f32 rows, plus each row quantized to 8-bit
//! blocks of 32 so quantized weights can be dotted in integers.
//!
//! This is what ggml's CPU backend does (`vec_dot_type` Q8_0 for Q4_0/Q8_0 weights, Q8_1 for
//! Q4_1: ggml/src/ggml-cpu/ggml-cpu.c), so our logits track llama.cpp's. We keep the scale and
//! the block sum in f32 (ggml rounds them to f16), which is slightly more accurate.
//!
//! The K-quants' `vec_dot_type` is Q8_K: one scale per 256 values, set by the value of largest
//! magnitude (`iscale = −127/max`, rounding half to even: `quantize_row_q8_K_ref` in
//! ggml/src/ggml-quants.c). Rows a multiple of 256 wide are also rounded that way, kept as the
//! same blocks of 32 (each block's `d` is its super-block's), so the K-quant kernels keep their
//! shape and see exactly ggml's activations: Gemma 3's tokens track llama.cpp's only so.

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

/// One grouping's rounded rows: per block of 32 `d` and `d·Σq`, and the int8 values.
struct Rounded {
    d: Vec<f32>,
    s: Vec<f32>,
    qs: Vec<i8>,
}

impl Rounded {
    fn new(rows: usize, cols: usize) -> Self {
        let blocks = rows * cols.div_ceil(QK);
        Self {
            d: vec![0.0; blocks],
            s: vec![0.0; blocks],
            qs: vec![0; blocks * QK],
        }
    }

    /// Rounds `x` (one row) into row `t`'s blocks with one scale per `group` values (32: Q8_0,
    /// 256: Q8_K).
    fn round_row(&mut self, t: usize, x: &[f32], group: usize) {
        let blocks = x.len() / QK;
        let qs = &mut self.qs[t * x.len()..(t + 1) * x.len()];
        for (g, xg) in x.chunks_exact(group).enumerate() {
            let (d, iscale, even) = if group == QK {
                let amax = xg.iter().fold(0f32, |a, v| a.max(v.abs()));
                let d = amax / 127.0;
                (d, if d != 0.0 { 1.0 / d } else { 0.0 }, false)
            } else {
                // The signed value of largest magnitude maps to −127 (d may be negative).
                let (max, _) = super::kquants::signed_max(xg);
                let iscale = if max != 0.0 { -127.0 / max } else { 0.0 };
                (if max != 0.0 { 1.0 / iscale } else { 0.0 }, iscale, true)
            };
            for (k, xb) in xg.chunks_exact(QK).enumerate() {
                let b = g * group / QK + k;
                let mut sum = 0i32;
                for (q, v) in qs[b * QK..(b + 1) * QK].iter_mut().zip(xb) {
                    let r = if even {
                        (v * iscale).round_ties_even()
                    } else {
                        (v * iscale).round()
                    };
                    *q = r.min(127.0) as i8;
                    sum += *q as i32;
                }
                self.d[t * blocks + b] = d;
                self.s[t * blocks + b] = d * sum as f32;
            }
        }
    }

    fn row<'a>(&'a self, t: usize, x: &'a [f32]) -> ActRow<'a> {
        let blocks = x.len().div_ceil(QK);
        ActRow {
            x,
            d: &self.d[t * blocks..(t + 1) * blocks],
            s: &self.s[t * blocks..(t + 1) * blocks],
            qs: &self.qs[t * blocks * QK..(t + 1) * blocks * QK],
        }
    }
}

/// `n` rows × `cols` activations, sized once for the largest batch and reused: no allocation
/// per token.
pub struct Acts {
    n: usize,
    cols: usize,
    x: Vec<f32>,
    /// Blocks of 32, one scale each.
    q8_0: Rounded,
    /// One scale per 256 (rows a multiple of 256 wide only).
    q8_k: Option<Rounded>,
}

/// Values under one Q8_K scale.
pub const QK_K: usize = 256;

impl Acts {
    pub fn new(max_n: usize, cols: usize) -> Self {
        Self {
            n: max_n,
            cols,
            x: vec![0.0; max_n * cols],
            q8_0: Rounded::new(max_n, cols),
            q8_k: cols.is_multiple_of(QK_K).then(|| Rounded::new(max_n, cols)),
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
        for t in 0..self.n {
            let x = &self.x[t * self.cols..(t + 1) * self.cols];
            self.q8_0.round_row(t, x, QK);
            if let Some(k) = &mut self.q8_k {
                k.round_row(t, x, QK_K);
            }
        }
    }

    /// Row `t` rounded to blocks of 32 (Q8_0): what every quantized type but the K-quants
    /// multiplies.
    pub fn row(&self, t: usize) -> ActRow<'_> {
        debug_assert!(t < self.n);
        self.q8_0.row(t, &self.x[t * self.cols..(t + 1) * self.cols])
    }

    /// Row `t` as weights of type `ty` multiply it: Q8_K-rounded for the K-quants.
    pub fn row_for(&self, ty: super::GgmlType, t: usize) -> ActRow<'_> {
        match &self.q8_k {
            Some(k) if ty.block_size() as usize == QK_K => k.row(t, &self.x[t * self.cols..(t + 1) * self.cols]),
            _ => self.row(t),
        }
    }
}
