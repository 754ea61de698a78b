//! Row-times-vector dot products for every supported weight type, with a portable version that
//! the compiler vectorizes (SSE2, wasm `simd128`) and hand-written AVX2 on x86_64 chosen at run
//! time. Quantized weights are dotted against 8-bit activations in integers, float weights
//! against f32 activations.

use super::GgmlType;
use super::acts::ActRow;
use super::blocks::{QK, UnsupportedType, read_f16};
use half::{bf16, f16};

/// `out[r] = row_r · a` for the `out.len()` consecutive rows of `w` (`row_bytes` each).
pub fn dot_rows(ty: GgmlType, w: &[u8], row_bytes: usize, a: ActRow, out: &mut [f32]) -> Result<(), UnsupportedType> {
    if !ty.is_supported() {
        return Err(UnsupportedType(ty, "multiplied"));
    }
    assert!(w.len() >= out.len() * row_bytes, "weight slice too short");
    let cols = a.x.len();
    assert_eq!(Some(row_bytes as u64), ty.bytes_for(cols as u64));
    #[cfg(target_arch = "x86_64")]
    if super::avx2::available() {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked above); slice lengths were checked
        // against `cols` and `row_bytes`, which is all the kernels index by.
        unsafe { super::avx2::dot_rows(ty, w, row_bytes, a, out) };
        return Ok(());
    }
    dot_rows_portable(ty, w, row_bytes, a, out);
    Ok(())
}

pub(crate) fn dot_rows_portable(ty: GgmlType, w: &[u8], row_bytes: usize, a: ActRow, out: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let done = rows4_simd128(ty, w, row_bytes, &a, out);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    let done = 0;
    for (r, o) in out.iter_mut().enumerate().skip(done) {
        let row = &w[r * row_bytes..(r + 1) * row_bytes];
        *o = match ty {
            GgmlType::F32 => dot_f32(row, a.x),
            GgmlType::F16 => dot_half(row, a.x, false),
            GgmlType::BF16 => dot_half(row, a.x, true),
            GgmlType::Q8_0 => dot_q8_0(row, a),
            GgmlType::Q4_0 => dot_q4::<false>(row, a, false),
            GgmlType::Q4_1 => dot_q4::<false>(row, a, true),
            GgmlType::Q5_0 => dot_q4::<true>(row, a, false),
            GgmlType::Q5_1 => dot_q4::<true>(row, a, true),
            GgmlType::Q4_K => dot_q4_k(row, a),
            GgmlType::Q5_K => dot_q5_k(row, a),
            GgmlType::Q3_K => dot_q3_k(row, a),
            GgmlType::Q2_K => dot_q2_k(row, a),
            GgmlType::Q6_K => dot_q6_k(row, a),
            _ => unreachable!("checked by dot_rows"),
        };
    }
}

/// Eight independent partial sums so the compiler can keep them in one vector register.
fn dot_f32(row: &[u8], x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    for (w8, x8) in row.chunks_exact(32).zip(x.chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += f32::from_le_bytes(w8[4 * k..4 * k + 4].try_into().unwrap()) * x8[k];
        }
    }
    let tail = x.len() / 8 * 8;
    let mut sum: f32 = acc.iter().sum();
    for i in tail..x.len() {
        sum += f32::from_le_bytes(row[4 * i..4 * i + 4].try_into().unwrap()) * x[i];
    }
    sum
}

/// A row of 16-bit floats (bf16 when `bf`, else f16) dotted with `x`: eight lane sums, then
/// their total, then the tail.
fn dot_half(row: &[u8], x: &[f32], bf: bool) -> f32 {
    let to_f32 = |b: u16| {
        if bf {
            bf16::from_bits(b).to_f32()
        } else {
            f16::from_bits(b).to_f32()
        }
    };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let acc = super::simd128::half_lanes(row, x, bf);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    let acc = {
        let mut acc = [0f32; 8];
        for (w8, x8) in row.chunks_exact(16).zip(x.chunks_exact(8)) {
            for k in 0..8 {
                acc[k] += to_f32(u16::from_le_bytes([w8[2 * k], w8[2 * k + 1]])) * x8[k];
            }
        }
        acc
    };
    let tail = x.len() / 8 * 8;
    let mut sum: f32 = acc.iter().sum();
    for i in tail..x.len() {
        sum += to_f32(u16::from_le_bytes([row[2 * i], row[2 * i + 1]])) * x[i];
    }
    sum
}

fn dot_q8_0(row: &[u8], a: ActRow) -> f32 {
    let mut sum = 0f32;
    for (b, blk) in row.chunks_exact(34).enumerate() {
        let y = &a.qs[b * QK..(b + 1) * QK];
        let sumi = q8_block_sum(&blk[2..], y);
        sum += read_f16(blk, 0) * a.d[b] * sumi as f32;
    }
    sum
}

/// Σ q·y over one Q8_0 block (exact in integers, so any summation order gives the same bits).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn q8_block_sum(q: &[u8], y: &[i8]) -> i32 {
    q.iter().zip(y).map(|(&q, &v)| (q as i8) as i32 * v as i32).sum()
}

/// Σ of the nibble products of one Q4 block: low nibbles × `y[..16]`, high × `y[16..]`.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn q4_block_sum(qs: &[u8], y: &[i8]) -> i32 {
    (0..16)
        .map(|j| (qs[j] & 0x0F) as i32 * y[j] as i32 + (qs[j] >> 4) as i32 * y[j + 16] as i32)
        .sum()
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use super::simd128::{q4_block_sum, q8_block_sum};

/// The quantized types' rows four at a time (SmolLM2's layers took 20 ms a token in Node
/// against 39 one row at a time; the page's CPU engine went from 21 to 43 tok/s); returns how
/// many leading rows of `out` it filled.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn rows4_simd128(ty: GgmlType, w: &[u8], row_bytes: usize, a: &ActRow, out: &mut [f32]) -> usize {
    use super::simd128::{
        Quad, dot_rows4, dot_rows4_q2_k, dot_rows4_q3_k, dot_rows4_q4_k, dot_rows4_q5_k, dot_rows4_q6_k,
    };
    // `dot_rows4` inlines into each closure: one loop per block layout.
    let dot4: fn([&[u8]; 4], &ActRow) -> [f32; 4] = match ty {
        GgmlType::Q8_0 => |r, a| dot_rows4(r, a, 34, Quad::Q8_0),
        GgmlType::Q4_0 => |r, a| dot_rows4(r, a, 18, Quad::Q4_0),
        GgmlType::Q4_1 => |r, a| dot_rows4(r, a, 20, Quad::Q4_1),
        GgmlType::Q5_0 => |r, a| dot_rows4(r, a, 22, Quad::Q5_0),
        GgmlType::Q5_1 => |r, a| dot_rows4(r, a, 24, Quad::Q5_1),
        GgmlType::Q4_K => dot_rows4_q4_k,
        GgmlType::Q5_K => dot_rows4_q5_k,
        GgmlType::Q3_K => dot_rows4_q3_k,
        GgmlType::Q2_K => dot_rows4_q2_k,
        GgmlType::Q6_K => dot_rows4_q6_k,
        _ => return 0,
    };
    let fours = out.len() / 4 * 4;
    let row = |g: usize, k: usize| &w[(4 * g + k) * row_bytes..(4 * g + k + 1) * row_bytes];
    for (g, o) in out[..fours].chunks_exact_mut(4).enumerate() {
        o.copy_from_slice(&dot4([row(g, 0), row(g, 1), row(g, 2), row(g, 3)], a));
    }
    fours
}

/// Q4_0 (`x = d(q − 8)`) and Q4_1 (`x = dq + m`) share the nibble product `Σ q·y`; they differ
/// only in the block-sum term: `−8 d s` for Q4_0, `m s` for Q4_1, where `s = d_y Σ y`. With
/// `FIVE`, Q5_0 and Q5_1: the same with a fifth bit per value (its `qh` word before the
/// nibbles) and `−16 d s`. avx2.rs does the float part in this order.
fn dot_q4<const FIVE: bool>(row: &[u8], a: ActRow, has_min: bool) -> f32 {
    let qs_at = 2 + 2 * has_min as usize + 4 * FIVE as usize;
    let zero = if FIVE { 16.0 } else { 8.0 };
    let mut sum = 0f32;
    for (b, blk) in row.chunks_exact(qs_at + 16).enumerate() {
        let y = &a.qs[b * QK..(b + 1) * QK];
        let qs = &blk[qs_at..qs_at + 16];
        let sumi = if FIVE {
            q5_block_sum(u32::from_le_bytes(blk[qs_at - 4..qs_at].try_into().unwrap()), qs, y)
        } else {
            q4_block_sum(qs, y)
        };
        let d = read_f16(blk, 0);
        let offset = if has_min { read_f16(blk, 2) } else { -zero * d };
        sum += d * a.d[b] * sumi as f32 + offset * a.s[b];
    }
    sum
}

/// Byte `k` of `SPREAD[b]` is 1 where bit `k` of `b` is set: a Q5 block's fifth bits as bytes,
/// so their products vectorize like the nibbles' (a shift by the element's index does not).
const SPREAD: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b][k] = ((b >> k) & 1) as u8;
            k += 1;
        }
        b += 1;
    }
    t
};

/// `Σ q·y` over a Q5 block: the nibbles' sum plus 16 × the `y` under set fifth bits (exact in
/// integers, so it equals the element-by-element sum to the bit).
fn q5_block_sum(qh: u32, qs: &[u8], y: &[i8]) -> i32 {
    let mut bits = [0u8; QK];
    for (i, b) in qh.to_le_bytes().into_iter().enumerate() {
        bits[8 * i..8 * i + 8].copy_from_slice(&SPREAD[b as usize]);
    }
    let high: i32 = bits.iter().zip(y).map(|(&h, &v)| h as i32 * v as i32).sum();
    q4_block_sum(qs, y) + 16 * high
}

/// Q4_K against 8-bit activation blocks of 32 (one per sub-block): `Σ x·y = d·sc·d_y·Σq·y −
/// dmin·m·s`, the integer sum exact (avx2.rs does the float part in this order).
pub(crate) fn dot_q4_k(row: &[u8], a: ActRow) -> f32 {
    dot_k4::<false>(row, a)
}

/// Q5_K: Q4_K's with each nibble's fifth bit (bit j of `qh[l]` for element l of sub-block j).
pub(crate) fn dot_q5_k(row: &[u8], a: ActRow) -> f32 {
    dot_k4::<true>(row, a)
}

fn dot_k4<const FIVE: bool>(row: &[u8], a: ActRow) -> f32 {
    use super::kquants::{Q4_K_BYTES, Q5_K_BYTES, k4_parts, scale_min};
    let bytes = if FIVE { Q5_K_BYTES } else { Q4_K_BYTES };
    let mut sum = 0f32;
    for (sb, blk) in row.chunks_exact(bytes).enumerate() {
        let (d, dmin, scales, qh, qs) = k4_parts(blk, FIVE);
        for j in 0..8 {
            let b = sb * 8 + j;
            let y = &a.qs[b * QK..(b + 1) * QK];
            let q = &qs[32 * (j / 2)..32 * (j / 2) + 32];
            let shift = 4 * (j % 2);
            let mut sumi: i32 = q
                .iter()
                .zip(y)
                .map(|(&q, &v)| ((q >> shift) & 0xF) as i32 * v as i32)
                .sum();
            if FIVE {
                let high: i32 = qh.iter().zip(y).map(|(&h, &v)| ((h >> j) & 1) as i32 * v as i32).sum();
                sumi += 16 * high;
            }
            let (sc, m) = scale_min(j, scales);
            sum += d * sc as f32 * a.d[b] * sumi as f32 - dmin * m as f32 * a.s[b];
        }
    }
    sum
}

/// Q3_K against 8-bit activation blocks of 32: each block's two 16-value halves have their own
/// scale, so `Σ x·y = d·d_y·(sc₀·Σ₀ q·y + sc₁·Σ₁ q·y)` with q = (2 bits) − 4·(1 − high bit),
/// exact in integers before the float part (as Q6_K's).
pub(crate) fn dot_q3_k(row: &[u8], a: ActRow) -> f32 {
    use super::kquants::{Q3_K_BYTES, q3_scales};
    let mut sum = 0f32;
    for (sb, blk) in row.chunks_exact(Q3_K_BYTES).enumerate() {
        let d = read_f16(blk, 108);
        let scales = q3_scales(&blk[96..108]);
        for (k, sc) in scales.chunks_exact(2).enumerate() {
            let b = sb * 8 + k;
            let y = &a.qs[b * QK..(b + 1) * QK];
            let (n, j) = (k / 4, k % 4);
            let mut half = [0i32; 2];
            for l in 0..32 {
                let q = ((blk[32 + 32 * n + l] >> (2 * j)) & 3) as i32 - 4 * (1 - ((blk[l] >> k) & 1) as i32);
                half[l / 16] += q * y[l] as i32;
            }
            sum += d * a.d[b] * (half[0] * sc[0] + half[1] * sc[1]) as f32;
        }
    }
    sum
}

/// Q2_K against 8-bit activation blocks of 32: two 16-value halves per block, each with a 4-bit
/// scale and min, so `Σ x·y = d·d_y·Σ sc·Σ q·y − dmin·d_y·Σ m·Σ y`, both sums exact in integers.
pub(crate) fn dot_q2_k(row: &[u8], a: ActRow) -> f32 {
    use super::kquants::Q2_K_BYTES;
    let mut sum = 0f32;
    for (sb, blk) in row.chunks_exact(Q2_K_BYTES).enumerate() {
        let (d, dmin) = (read_f16(blk, 80), read_f16(blk, 82));
        for k in 0..8 {
            let b = sb * 8 + k;
            let y = &a.qs[b * QK..(b + 1) * QK];
            let (n, j) = (k / 4, k % 4);
            let (mut sumi, mut summ) = (0i32, 0i32);
            for (h, ys) in y.chunks_exact(16).enumerate() {
                let sc = blk[2 * k + h];
                let q = &blk[16 + 32 * n + 16 * h..16 + 32 * n + 16 * h + 16];
                let qy: i32 = q
                    .iter()
                    .zip(ys)
                    .map(|(&q, &v)| ((q >> (2 * j)) & 3) as i32 * v as i32)
                    .sum();
                let sy: i32 = ys.iter().map(|&v| v as i32).sum();
                sumi += (sc & 0xF) as i32 * qy;
                summ += (sc >> 4) as i32 * sy;
            }
            sum += d * a.d[b] * sumi as f32 - dmin * a.d[b] * summ as f32;
        }
    }
    sum
}

/// Q6_K against 8-bit activation blocks of 32: each block's two 16-value halves have their own
/// i8 scale, so `Σ x·y = d·d_y·(sc₀·Σ₀(q − 32)y + sc₁·Σ₁(q − 32)y)`, exact in integers before the
/// float part (avx2.rs keeps this order).
pub(crate) fn dot_q6_k(row: &[u8], a: ActRow) -> f32 {
    use super::kquants::Q6_K_BYTES;
    let mut sum = 0f32;
    for (sb, blk) in row.chunks_exact(Q6_K_BYTES).enumerate() {
        let d = read_f16(blk, 208);
        for h in 0..2 {
            let ql = &blk[64 * h..64 * h + 64];
            let qh = &blk[128 + 32 * h..128 + 32 * h + 32];
            let sc = &blk[192 + 8 * h..192 + 8 * h + 8];
            for k in 0..4 {
                let b = sb * 8 + 4 * h + k;
                let y = &a.qs[b * QK..(b + 1) * QK];
                let (lo, shift) = (32 * (k % 2), 4 * (k / 2));
                let mut half = [0i32; 2];
                for l in 0..32 {
                    let q = ((ql[lo + l] >> shift) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4);
                    half[l / 16] += (q as i32 - 32) * y[l] as i32;
                }
                let sumi = half[0] * (sc[2 * k] as i8) as i32 + half[1] * (sc[2 * k + 1] as i8) as i32;
                sum += d * a.d[b] * sumi as f32;
            }
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::super::{Acts, dequantize_row, quantize_row};
    use super::*;

    fn ggml_vector(n: usize, offset: f32) -> Vec<f32> {
        (0..n).map(|i| 0.1 + 2.0 * (i as f32 + offset).cos()).collect()
    }

    /// The Q5 block sum (nibbles + 16 × the activations under set fifth bits) equals the sum
    /// of the five-bit values' products element by element, for awkward bit patterns.
    #[test]
    fn q5_block_sum_is_the_elementwise_sum() {
        let y: Vec<i8> = (0..32).map(|j| (j * 37 % 255) as i8).collect();
        let qs: Vec<u8> = (0..16).map(|j| (j * 29 + 7) as u8).collect();
        for qh in [0, u32::MAX, 0x8000_0001, 0x5555_AAAA, 0x1234_5678] {
            let want: i32 = (0..16)
                .map(|j| {
                    let (lo, hi) = super::super::blocks::q5_pair(qs[j], qh, j);
                    lo as i32 * y[j] as i32 + hi as i32 * y[j + 16] as i32
                })
                .sum();
            assert_eq!(q5_block_sum(qh, &qs, &y), want, "qh {qh:#x}");
        }
    }

    /// ggml's test-quantize-fns dot-product check: |quantized dot − f32 dot| / n < 0.02 (0.04
    /// for its low-bit types, Q3_K and Q2_K here).
    #[test]
    fn quantized_dots_match_float_dot_within_ggml_threshold() {
        let n = 32 * 128;
        let w = ggml_vector(n, 0.0);
        let x = ggml_vector(n, 1.0);
        let exact: f32 = w.iter().zip(&x).map(|(a, b)| a * b).sum();
        let mut acts = Acts::new(1, n);
        acts.x_mut().copy_from_slice(&x);
        acts.quantize();
        for ty in GgmlType::SUPPORTED {
            let q = quantize_row(ty, &w).unwrap();
            let mut out = [0f32];
            dot_rows(ty, &q, q.len(), acts.row_for(ty, 0), &mut out).unwrap();
            let limit = if matches!(ty, GgmlType::Q3_K | GgmlType::Q2_K) {
                0.04
            } else {
                0.02
            };
            assert!(
                (out[0] - exact).abs() / (n as f32) < limit,
                "{ty}: {} vs {exact}",
                out[0]
            );
        }
    }

    /// The SIMD and portable kernels agree with a dequantize-then-dot reference to f32 rounding
    /// (the only difference allowed is the 8-bit activations and summation order).
    #[test]
    fn every_kernel_matches_dequantized_reference() {
        // 40 blocks of 32 (five K-quant super-blocks): two whole passes of the four-row kernels
        // and part of a third; five rows, so four at a time and one alone.
        let cols = 1280;
        let rows = 5;
        let x: Vec<f32> = (0..cols).map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0).collect();
        let mut acts = Acts::new(1, cols);
        acts.x_mut().copy_from_slice(&x);
        acts.quantize();
        for ty in GgmlType::SUPPORTED {
            // The activations as this type's kernel sees them (Q8_K for the K-quants).
            let a = acts.row_for(ty, 0);
            let xq: Vec<f32> = (0..cols).map(|i| a.d[i / QK] * a.qs[i] as f32).collect();
            let w: Vec<f32> = (0..rows * cols).map(|i| ((i * 53 % 97) as f32 / 40.0) - 1.2).collect();
            let q: Vec<u8> = w.chunks(cols).flat_map(|r| quantize_row(ty, r).unwrap()).collect();
            let row_bytes = q.len() / rows;
            let mut fast = vec![0f32; rows];
            let mut portable = vec![0f32; rows];
            dot_rows(ty, &q, row_bytes, acts.row_for(ty, 0), &mut fast).unwrap();
            dot_rows_portable(ty, &q, row_bytes, acts.row_for(ty, 0), &mut portable);
            let float_acts = matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16);
            for r in 0..rows {
                let mut wr = vec![0f32; cols];
                dequantize_row(ty, &q[r * row_bytes..(r + 1) * row_bytes], &mut wr).unwrap();
                let xs = if float_acts { &x } else { &xq };
                let reference: f32 = wr.iter().zip(xs).map(|(a, b)| a * b).sum();
                let tol = 1e-4 * (1.0 + reference.abs()) * 10.0;
                assert!(
                    (fast[r] - reference).abs() < tol,
                    "{ty} fast row {r}: {} vs {reference}",
                    fast[r]
                );
                assert!(
                    (portable[r] - reference).abs() < tol,
                    "{ty} portable row {r}: {} vs {reference}",
                    portable[r]
                );
                // Quantized dots must agree to the bit (native CLI = browser fallback).
                if !float_acts {
                    assert_eq!(
                        fast[r].to_bits(),
                        portable[r].to_bits(),
                        "{ty} row {r}: fast and portable differ"
                    );
                }
            }
        }
    }
}
