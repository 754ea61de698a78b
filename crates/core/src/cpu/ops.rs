//! The element-wise and row-wise pieces of a llama layer, in f32. Transcendentals come from the
//! `libm` crate, not the platform's math library, so native and wasm builds agree to the bit.

/// RMSNorm (Zhang & Sennrich 2019, as in llama.cpp's `ggml_rms_norm`): `x / sqrt(mean(x²) + ε) · w`.
pub fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let mean_sq = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let scale = 1.0 / (mean_sq + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

/// RoPE tables for one position: `cos`/`sin` of `pos · inv_freq[i]`.
pub fn rope_table(pos: usize, inv_freq: &[f32], cos: &mut [f32], sin: &mut [f32]) {
    for ((c, s), f) in cos.iter_mut().zip(sin.iter_mut()).zip(inv_freq) {
        let (si, co) = libm::sincos(pos as f64 * *f as f64);
        *c = co as f32;
        *s = si as f32;
    }
}

/// Inverse frequencies `base^(−2i/rope_dim)`, divided by Llama 3.1's per-frequency factors
/// when the model has them (RoFormer, Su et al. 2021; llama.cpp `ggml_rope_ext`).
pub fn rope_inv_freq(rope_dim: usize, base: f32, factors: Option<&[f32]>) -> Vec<f32> {
    (0..rope_dim / 2)
        .map(|i| {
            let f = libm::pow(base as f64, -2.0 * i as f64 / rope_dim as f64);
            (f / factors.map_or(1.0, |fs| fs[i] as f64)) as f32
        })
        .collect()
}

/// Rotates adjacent pairs `(x[2i], x[2i+1])` of each head ("normal" RoPE, which llama GGUFs
/// use: the converter permutes Q and K so this matches the HF model).
pub fn apply_rope(x: &mut [f32], head_dim: usize, cos: &[f32], sin: &[f32]) {
    for head in x.chunks_exact_mut(head_dim) {
        for (i, (c, s)) in cos.iter().zip(sin).enumerate() {
            let (a, b) = (head[2 * i], head[2 * i + 1]);
            head[2 * i] = a * c - b * s;
            head[2 * i + 1] = a * s + b * c;
        }
    }
}

/// Rotates `(x[i], x[i + n/2])` of each head, `n` = 2 × the table's length (llama.cpp's
/// `GGML_ROPE_TYPE_NEOX`: gemma, qwen and most non-llama converters keep HF's layout).
pub fn apply_rope_halves(x: &mut [f32], head_dim: usize, cos: &[f32], sin: &[f32]) {
    let half = cos.len();
    for head in x.chunks_exact_mut(head_dim) {
        for (i, (c, s)) in cos.iter().zip(sin).enumerate() {
            let (a, b) = (head[i], head[i + half]);
            head[i] = a * c - b * s;
            head[i + half] = a * s + b * c;
        }
    }
}

/// SwiGLU (Shazeer 2020): `silu(gate) · up`, written into `gate`.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + libm::expf(-*g)) * u;
    }
}

/// GELU's tanh approximation (Hendrycks & Gimpel 2016): `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + libm::tanhf(SQRT_2_OVER_PI * x * (1.0 + 0.044715 * x * x)))
}

/// GeGLU (Shazeer 2020), `gelu(gate) · up` written into `gate`, with GELU evaluated as ggml's
/// CPU backend does (`GGML_GELU_FP16` in ggml-cpu/vec.h: the input rounded to f16, the result
/// taken from a table of f16 values; 0 below −10, the identity above 10). Gemma 3's tokens
/// track llama.cpp's more closely this way than with the exact formula.
pub fn gelu_mul(gate: &mut [f32], up: &[f32]) {
    use half::f16;
    for (g, u) in gate.iter_mut().zip(up) {
        let x = *g;
        let y = if x <= -10.0 {
            0.0
        } else if x >= 10.0 {
            x
        } else {
            f16::from_f32(gelu(f16::from_f32(x).to_f32())).to_f32()
        };
        *g = y * u;
    }
}

/// RMSNorm of each `w.len()`-wide slice of `x` in place (per-head Q/K norms, post-norms).
pub fn rms_norm_each(x: &mut [f32], w: &[f32], eps: f32, tmp: &mut Vec<f32>) {
    tmp.resize(w.len(), 0.0);
    for part in x.chunks_exact_mut(w.len()) {
        rms_norm(part, w, eps, tmp);
        part.copy_from_slice(tmp);
    }
}

pub fn add_in_place(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Softmax in place, max-subtracted for stability.
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = libm::expf(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    x.iter_mut().for_each(|v| *v *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rms_norm_hand_computed() {
        let mut out = [0f32; 2];
        rms_norm(&[3.0, 4.0], &[1.0, 2.0], 0.0, &mut out);
        let r = (12.5f32).sqrt();
        assert!((out[0] - 3.0 / r).abs() < 1e-6 && (out[1] - 8.0 / r).abs() < 1e-6);
    }

    #[test]
    fn rope_rotates_pairs_by_position_angle() {
        let inv = rope_inv_freq(4, 10000.0, None);
        assert_eq!(inv[0], 1.0);
        assert!((inv[1] - 0.01).abs() < 1e-7);
        let (mut c, mut s) = ([0f32; 2], [0f32; 2]);
        rope_table(2, &inv, &mut c, &mut s);
        let mut x = [1.0, 0.0, 0.0, 1.0];
        apply_rope(&mut x, 4, &c, &s);
        assert!((x[0] - 2f32.cos()).abs() < 1e-6 && (x[1] - 2f32.sin()).abs() < 1e-6);
        assert!((x[2] + 0.02f32.sin()).abs() < 1e-6 && (x[3] - 0.02f32.cos()).abs() < 1e-6);
        let scaled = rope_inv_freq(4, 10000.0, Some(&[1.0, 4.0]));
        assert!((scaled[1] - 0.0025).abs() < 1e-7);
    }

    #[test]
    fn rope_on_halves_rotates_i_with_i_plus_half() {
        let inv = rope_inv_freq(4, 10000.0, None);
        let (mut c, mut s) = ([0f32; 2], [0f32; 2]);
        rope_table(2, &inv, &mut c, &mut s);
        let mut x = [1.0, 0.0, 0.0, 1.0];
        apply_rope_halves(&mut x, 4, &c, &s);
        // Pairs (x0, x2) by angle 2 and (x1, x3) by 0.02.
        assert!((x[0] - 2f32.cos()).abs() < 1e-6 && (x[2] - 2f32.sin()).abs() < 1e-6);
        assert!((x[1] + 0.02f32.sin()).abs() < 1e-6 && (x[3] - 0.02f32.cos()).abs() < 1e-6);
    }

    /// GELU-tanh at hand-computed points (0.5·x·(1 + tanh(0.79788·(x + 0.044715x³)))); the
    /// gated form within f16 rounding of them, and exact at the cut-offs.
    #[test]
    fn gelu_tanh_values() {
        let xs: [f32; 6] = [0.0, 1.0, -1.0, 3.0, -12.0, 11.0];
        let want = [0.0, 0.841_192, -0.158_808, 2.996_363, 0.0, 11.0];
        for (&x, w) in xs.iter().zip(want) {
            assert!(x.abs() > 10.0 || (gelu(x) - w).abs() < 1e-5, "{x}: {} vs {w}", gelu(x));
        }
        let mut g = xs;
        gelu_mul(&mut g, &[2.0; 6]);
        for (a, w) in g.iter().zip(want) {
            assert!((a - 2.0 * w).abs() <= 2.0 * w.abs() * 1e-3, "{a} vs {}", 2.0 * w);
        }
    }

    #[test]
    fn softmax_and_silu() {
        let mut x = [1.0, 2.0, 3.0];
        softmax(&mut x);
        let e: Vec<f32> = [1f32, 2.0, 3.0].iter().map(|v| v.exp()).collect();
        let s: f32 = e.iter().sum();
        for (a, b) in x.iter().zip(&e) {
            assert!((a - b / s).abs() < 1e-6);
        }
        let mut g = [0.0, 1.0];
        silu_mul(&mut g, &[5.0, 2.0]);
        assert_eq!(g[0], 0.0);
        assert!((g[1] - 2.0 / (1.0 + (-1f32).exp())).abs() < 1e-6);
    }
}
