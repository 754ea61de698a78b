//! Causal grouped-query attention over the KV cache, one pass per (token, head) with an online
//! softmax (Milakov & Gimelshein 2018, as in FlashAttention): no score buffer, so nothing is
//! allocated however long the context grows.

use super::parallel::for_each_chunk;

/// Largest head dimension the fixed-size accumulator holds (llama models use 64 or 128).
pub const MAX_HEAD_DIM: usize = 256;

pub struct AttentionShape {
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
    /// What Q·K is multiplied by before the softmax (`1/√head_dim` but for Gemma 3 27B).
    pub scale: f32,
}

/// `out[t]` for the `n = q.len() / q_dim` queries at positions `pos0..pos0 + n`; keys and values
/// of positions `0..pos0 + n` are already in `k_cache`/`v_cache` (`[pos][kv_dim]`). The query at
/// `p` attends to positions `first(p)..=p` (0 for causal attention; later in a sliding window).
pub fn attention(
    s: &AttentionShape,
    q: &[f32],
    k_cache: &[f32],
    v_cache: &[f32],
    pos0: usize,
    first: &(dyn Fn(usize) -> usize + Sync),
    out: &mut [f32],
) {
    let hd = s.head_dim;
    assert!(hd <= MAX_HEAD_DIM);
    let kv_dim = s.n_kv_heads * hd;
    let group = s.n_heads / s.n_kv_heads;
    let scale = s.scale;
    for_each_chunk(out, hd, |ci, o| {
        let (t, h) = (ci / s.n_heads, ci % s.n_heads);
        let qh = &q[ci * hd..(ci + 1) * hd];
        let kvh = h / group;
        let mut acc = [0f32; MAX_HEAD_DIM];
        let acc = &mut acc[..hd];
        let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
        for j in first(pos0 + t)..=pos0 + t {
            let k = &k_cache[j * kv_dim + kvh * hd..][..hd];
            let score = qh.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
            if score > max {
                let c = libm::expf(max - score);
                sum *= c;
                acc.iter_mut().for_each(|a| *a *= c);
                max = score;
            }
            let p = libm::expf(score - max);
            sum += p;
            let v = &v_cache[j * kv_dim + kvh * hd..][..hd];
            acc.iter_mut().zip(v).for_each(|(a, b)| *a += p * b);
        }
        let inv = 1.0 / sum;
        o.iter_mut().zip(acc.iter()).for_each(|(o, a)| *o = a * inv);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::ops::softmax;

    /// Against the textbook two-pass softmax attention, with GQA (4 heads share 2 KV heads),
    /// causal and within a sliding window of 3 positions.
    #[test]
    fn matches_two_pass_reference() {
        for window in [usize::MAX, 3] {
            two_pass(window);
        }
    }

    fn two_pass(window: usize) {
        let s = AttentionShape {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 8,
            scale: 1.0 / 8f32.sqrt(),
        };
        let first = move |p: usize| (p + 1).saturating_sub(window);
        let (n, pos0) = (3, 5);
        let len = pos0 + n;
        let f = |i: usize, m: usize| ((i * m % 23) as f32 / 11.0) - 1.0;
        let q: Vec<f32> = (0..n * 32).map(|i| f(i, 7)).collect();
        let k: Vec<f32> = (0..len * 16).map(|i| f(i, 5)).collect();
        let v: Vec<f32> = (0..len * 16).map(|i| f(i, 3)).collect();
        let mut out = vec![0f32; n * 32];
        attention(&s, &q, &k, &v, pos0, &first, &mut out);
        for t in 0..n {
            for h in 0..4 {
                let kvh = h / 2;
                let qh = &q[(t * 4 + h) * 8..][..8];
                let mut scores: Vec<f32> = (first(pos0 + t)..=pos0 + t)
                    .map(|j| {
                        qh.iter()
                            .zip(&k[j * 16 + kvh * 8..][..8])
                            .map(|(a, b)| a * b)
                            .sum::<f32>()
                            / 8f32.sqrt()
                    })
                    .collect();
                softmax(&mut scores);
                for d in 0..8 {
                    let expect: f32 = scores
                        .iter()
                        .enumerate()
                        .map(|(j, p)| p * v[(first(pos0 + t) + j) * 16 + kvh * 8 + d])
                        .sum();
                    let got = out[(t * 4 + h) * 8 + d];
                    assert!((got - expect).abs() < 1e-5, "t{t} h{h} d{d}: {got} vs {expect}");
                }
            }
        }
    }
}
