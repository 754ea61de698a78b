//! ggml's block layouts, bit for bit: dequantize and the reference quantizers.
//!
//! Sources: ggml/src/ggml-common.h (`block_q4_0`, `block_q4_1`, `block_q8_0`) and
//! ggml/src/ggml-quants.c (`quantize_row_*_ref`, `dequantize_row_*`).
//!
//! - Q4_0 (18 bytes / 32 weights): f16 `d`, 16 bytes of nibbles. Element `j` is the low nibble of
//!   byte `j`, element `j + 16` the high nibble; `x = d · (q − 8)`.
//! - Q4_1 (20 bytes): f16 `d`, f16 `m`, 16 bytes of nibbles in the same order; `x = d · q + m`.
//! - Q8_0 (34 bytes): f16 `d`, 32 × i8; `x = d · q`.
//! - Q5_0 (22 bytes): f16 `d`, a u32 `qh` of fifth bits, 16 bytes of nibbles. Element `j` is the
//!   low nibble of byte `j` with bit `j` of `qh` above it, element `j + 16` the high nibble with
//!   bit `j + 16`; `x = d · (q − 16)`.
//! - Q5_1 (24 bytes): f16 `d`, f16 `m`, `qh`, nibbles as Q5_0; `x = d · q + m`.

use super::GgmlType;
use half::{bf16, f16};

pub const QK: usize = 32;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "tensor type {0} cannot be {1} by tokscope (supported: F32, F16, BF16, Q8_0, Q6_K, Q5_0, Q5_1, Q5_K, Q4_K, Q4_0, Q4_1, Q3_K, Q2_K)"
)]
pub struct UnsupportedType(pub GgmlType, pub &'static str);

#[inline]
pub(crate) fn read_f16(bytes: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([bytes[at], bytes[at + 1]])).to_f32()
}

/// Dequantizes `dst.len()` elements from `src` (which must hold exactly that many).
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), UnsupportedType> {
    debug_assert_eq!(Some(src.len() as u64), ty.bytes_for(dst.len() as u64));
    match ty {
        GgmlType::F32 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *d = f32::from_le_bytes(s.try_into().unwrap());
            }
        }
        GgmlType::F16 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *d = f16::from_bits(u16::from_le_bytes([s[0], s[1]])).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *d = bf16::from_bits(u16::from_le_bytes([s[0], s[1]])).to_f32();
            }
        }
        GgmlType::Q8_0 => {
            for (out, blk) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(34)) {
                let d = read_f16(blk, 0);
                for (o, &q) in out.iter_mut().zip(&blk[2..]) {
                    *o = d * (q as i8) as f32;
                }
            }
        }
        GgmlType::Q4_0 => {
            for (out, blk) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(18)) {
                let d = read_f16(blk, 0);
                for (j, &q) in blk[2..].iter().enumerate() {
                    out[j] = d * ((q & 0x0F) as i32 - 8) as f32;
                    out[j + 16] = d * ((q >> 4) as i32 - 8) as f32;
                }
            }
        }
        GgmlType::Q4_1 => {
            for (out, blk) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(20)) {
                let d = read_f16(blk, 0);
                let m = read_f16(blk, 2);
                for (j, &q) in blk[4..].iter().enumerate() {
                    out[j] = d * (q & 0x0F) as f32 + m;
                    out[j + 16] = d * (q >> 4) as f32 + m;
                }
            }
        }
        GgmlType::Q5_0 | GgmlType::Q5_1 => {
            let (block, has_min) = if ty == GgmlType::Q5_1 { (24, true) } else { (22, false) };
            for (out, blk) in dst.chunks_exact_mut(QK).zip(src.chunks_exact(block)) {
                let d = read_f16(blk, 0);
                let (m, at) = if has_min { (read_f16(blk, 2), 4) } else { (-16.0 * d, 2) };
                let qh = u32::from_le_bytes(blk[at..at + 4].try_into().unwrap());
                for (j, &q) in blk[at + 4..].iter().enumerate() {
                    let (lo, hi) = q5_pair(q, qh, j);
                    out[j] = d * lo as f32 + m;
                    out[j + 16] = d * hi as f32 + m;
                }
            }
        }
        GgmlType::Q4_K => super::kquants::dequantize_q4_k(src, dst),
        GgmlType::Q5_K => super::kquants::dequantize_q5_k(src, dst),
        GgmlType::Q3_K => super::kquants::dequantize_q3_k(src, dst),
        GgmlType::Q2_K => super::kquants::dequantize_q2_k(src, dst),
        GgmlType::Q6_K => super::kquants::dequantize_q6_k(src, dst),
        other => return Err(UnsupportedType(other, "dequantized")),
    }
    Ok(())
}

/// Elements `j` and `j + 16` (0..32) of a Q5 block: byte `j`'s nibbles under bits `j` and `j + 16`
/// of `qh`.
#[inline]
pub(crate) fn q5_pair(q: u8, qh: u32, j: usize) -> (u8, u8) {
    let lo = (q & 0x0F) | ((((qh >> j) & 1) as u8) << 4);
    let hi = (q >> 4) | ((((qh >> (j + 16)) & 1) as u8) << 4);
    (lo, hi)
}

/// ggml's Q4_0/Q5_0 block header: `d = max ÷ −zero`, where `max` is the value of largest
/// magnitude with its sign (the first of equals), so it maps exactly to level 0; writes `d` as
/// f16 and returns `1 ÷ d` (0 for a zero block).
fn symmetric_header(x: &[f32], zero: f32, out: &mut Vec<u8>) -> f32 {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    let d = max / -zero;
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    if d != 0.0 { 1.0 / d } else { 0.0 }
}

/// ggml's Q4_1/Q5_1 block header: `d = (max − min) ÷ levels` and `min`, both written as f16;
/// returns `min` and `1 ÷ d` (0 for a constant block).
fn min_header(x: &[f32], levels: f32, out: &mut Vec<u8>) -> (f32, f32) {
    let min = x.iter().copied().fold(f32::MAX, f32::min);
    let max = x.iter().copied().fold(-f32::MAX, f32::max);
    let d = (max - min) / levels;
    out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
    out.extend_from_slice(&f16::from_f32(min).to_le_bytes());
    (min, if d != 0.0 { 1.0 / d } else { 0.0 })
}

/// Packs a Q5 block's 32 five-bit values (element order) into `qh` and the 16 nibble bytes.
fn q5_pack(q: &[u8; 32], out: &mut Vec<u8>) {
    let mut qh = 0u32;
    for j in 0..16 {
        qh |= (((q[j] & 0x10) >> 4) as u32) << j;
        qh |= (((q[j + 16] & 0x10) >> 4) as u32) << (j + 16);
    }
    out.extend_from_slice(&qh.to_le_bytes());
    out.extend((0..16).map(|j| (q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4)));
}

/// Quantizes `src` (a whole number of blocks) with ggml's reference quantizer for `ty`.
pub fn quantize_row(ty: GgmlType, src: &[f32]) -> Result<Vec<u8>, UnsupportedType> {
    let mut out = Vec::with_capacity(ty.bytes_for(src.len() as u64).unwrap_or(0) as usize);
    match ty {
        GgmlType::F32 => src.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        GgmlType::F16 => src
            .iter()
            .for_each(|x| out.extend_from_slice(&f16::from_f32(*x).to_le_bytes())),
        GgmlType::BF16 => src
            .iter()
            .for_each(|x| out.extend_from_slice(&bf16::from_f32(*x).to_le_bytes())),
        GgmlType::Q8_0 => {
            for x in src.chunks_exact(QK) {
                let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
                out.extend(x.iter().map(|v| (v * id).round() as i8 as u8));
            }
        }
        GgmlType::Q4_0 => {
            for x in src.chunks_exact(QK) {
                let id = symmetric_header(x, 8.0, &mut out);
                for j in 0..16 {
                    let lo = ((x[j] * id + 8.5) as i8).min(15) as u8;
                    let hi = ((x[j + 16] * id + 8.5) as i8).min(15) as u8;
                    out.push(lo | (hi << 4));
                }
            }
        }
        GgmlType::Q4_1 => {
            for x in src.chunks_exact(QK) {
                let (min, id) = min_header(x, 15.0, &mut out);
                for j in 0..16 {
                    let lo = (((x[j] - min) * id + 0.5) as i8).min(15) as u8;
                    let hi = (((x[j + 16] - min) * id + 0.5) as i8).min(15) as u8;
                    out.push(lo | (hi << 4));
                }
            }
        }
        GgmlType::Q5_0 => {
            for x in src.chunks_exact(QK) {
                let id = symmetric_header(x, 16.0, &mut out);
                let q: [u8; 32] = std::array::from_fn(|j| ((x[j] * id + 16.5) as i8).min(31) as u8);
                q5_pack(&q, &mut out);
            }
        }
        GgmlType::Q5_1 => {
            for x in src.chunks_exact(QK) {
                let (min, id) = min_header(x, 31.0, &mut out);
                let q: [u8; 32] = std::array::from_fn(|j| ((x[j] - min) * id + 0.5) as u8);
                q5_pack(&q, &mut out);
            }
        }
        GgmlType::Q4_K => super::kquants::quantize_q4_k(src, &mut out),
        GgmlType::Q5_K => super::kquants::quantize_q5_k(src, &mut out),
        GgmlType::Q3_K => super::kquants::quantize_q3_k(src, &mut out),
        GgmlType::Q2_K => super::kquants::quantize_q2_k(src, &mut out),
        GgmlType::Q6_K => super::kquants::quantize_q6_k(src, &mut out),
        other => return Err(UnsupportedType(other, "quantized")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(x: f32) -> [u8; 2] {
        f16::from_f32(x).to_le_bytes()
    }

    #[test]
    fn q4_0_hand_built_block() {
        // d = 0.5; byte j holds low nibble j%16 and high nibble 15 - j%16.
        let mut blk = h(0.5).to_vec();
        for j in 0..16u8 {
            blk.push(j | ((15 - j) << 4));
        }
        let mut out = [0f32; 32];
        dequantize_row(GgmlType::Q4_0, &blk, &mut out).unwrap();
        for j in 0..16 {
            assert_eq!(out[j], 0.5 * (j as f32 - 8.0));
            assert_eq!(out[j + 16], 0.5 * (7.0 - j as f32));
        }
    }

    /// A hand-built Q5_0 block: nibbles 0..15 and 15..0, fifth bits set on the odd elements of
    /// the first half and every element of the second.
    #[test]
    fn q5_0_hand_built_block() {
        let mut blk = h(0.25).to_vec();
        let qh: u32 = 0xFFFF_0000 | 0xAAAA;
        blk.extend_from_slice(&qh.to_le_bytes());
        for j in 0..16u8 {
            blk.push(j | ((15 - j) << 4));
        }
        let mut out = [0f32; 32];
        dequantize_row(GgmlType::Q5_0, &blk, &mut out).unwrap();
        for j in 0..16 {
            let lo = j as f32 + if j % 2 == 1 { 16.0 } else { 0.0 };
            assert_eq!(out[j], 0.25 * (lo - 16.0), "element {j}");
            assert_eq!(
                out[j + 16],
                0.25 * (15.0 - j as f32 + 16.0 - 16.0),
                "element {}",
                j + 16
            );
        }
    }

    #[test]
    fn q5_1_hand_built_block() {
        let mut blk = h(0.5).to_vec();
        blk.extend_from_slice(&h(-3.0));
        blk.extend_from_slice(&0x8000_0001u32.to_le_bytes());
        blk.extend([0x21u8; 16]);
        let mut out = [0f32; 32];
        dequantize_row(GgmlType::Q5_1, &blk, &mut out).unwrap();
        // Element 0: 1 | 16 = 17; 1..15: 1; 16..30: 2; 31: 2 | 16 = 18.
        assert_eq!(out[0], 0.5 * 17.0 - 3.0);
        assert_eq!(out[1], 0.5 - 3.0);
        assert_eq!(out[16], 1.0 - 3.0);
        assert_eq!(out[31], 0.5 * 18.0 - 3.0);
    }

    #[test]
    fn q4_1_hand_built_block() {
        let mut blk = h(0.25).to_vec();
        blk.extend_from_slice(&h(-1.0));
        blk.extend(std::iter::repeat_n(0xF3u8, 16));
        let mut out = [0f32; 32];
        dequantize_row(GgmlType::Q4_1, &blk, &mut out).unwrap();
        assert!(out[..16].iter().all(|&v| v == 0.25 * 3.0 - 1.0));
        assert!(out[16..].iter().all(|&v| v == 0.25 * 15.0 - 1.0));
    }

    #[test]
    fn q8_0_hand_built_block() {
        let mut blk = h(2.0).to_vec();
        blk.extend((0..32).map(|j| (j as i8 - 16) as u8));
        let mut out = [0f32; 32];
        dequantize_row(GgmlType::Q8_0, &blk, &mut out).unwrap();
        for (j, v) in out.iter().enumerate() {
            assert_eq!(*v, 2.0 * (j as f32 - 16.0));
        }
        // -128 is a legal byte even if ggml's quantizer never writes it.
        blk[2] = 0x80;
        dequantize_row(GgmlType::Q8_0, &blk, &mut out).unwrap();
        assert_eq!(out[0], -256.0);
    }

    #[test]
    fn float_types_hand_built() {
        let mut out = [0f32; 2];
        dequantize_row(GgmlType::F16, &[0x00, 0x3C, 0x00, 0xC0], &mut out).unwrap();
        assert_eq!(out, [1.0, -2.0]);
        // bf16 is the top half of an f32: 0x3F80 = 1.0, 0x4049 ≈ 3.140625.
        dequantize_row(GgmlType::BF16, &[0x80, 0x3F, 0x49, 0x40], &mut out).unwrap();
        assert_eq!(out, [1.0, 3.140625]);
        dequantize_row(GgmlType::F32, &[0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0], &mut out).unwrap();
        assert_eq!(out, [1.0, -2.0]);
    }

    #[test]
    fn reference_quantizers_match_ggml_on_known_input() {
        // Q4_0: max-magnitude value -4 maps to q = 0 with d = 0.5; 3.5 maps to 15.
        let mut x = [0f32; 32];
        x[0] = -4.0;
        x[1] = 3.5;
        x[17] = 1.0;
        let q = quantize_row(GgmlType::Q4_0, &x).unwrap();
        assert_eq!(&q[..2], &h(0.5));
        assert_eq!(q[2], 0x80); // x[0] -> 0, x[16] = 0 -> 8
        assert_eq!(q[3], 15 | (10 << 4)); // x[1] -> 15, x[17] = 1 -> 10
        // Q4_1: min -1, max 2 → d = 0.2, m = -1.
        let mut x = [0f32; 32];
        x[0] = -1.0;
        x[1] = 2.0;
        let q = quantize_row(GgmlType::Q4_1, &x).unwrap();
        assert_eq!(&q[..2], &h(0.2));
        assert_eq!(&q[2..4], &h(-1.0));
        assert_eq!(q[4] & 0x0F, 0);
        assert_eq!(q[5] & 0x0F, 15);
        assert_eq!(q[4] >> 4, 5); // x[16] = 0 → (0 + 1) / 0.2 = 5
    }

    /// ggml's tests/test-quantize-fns.cpp: the vector `0.1 + 2 cos(i)`, and its metric
    /// `sqrt(Σ diff²) / n` against MAX_QUANTIZATION_TOTAL_ERROR = 0.002.
    #[test]
    fn round_trip_error_within_ggml_thresholds() {
        let n = 32 * 128;
        let x: Vec<f32> = (0..n).map(|i| 0.1 + 2.0 * (i as f32).cos()).collect();
        for ty in [
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q5_0,
            GgmlType::Q5_1,
            GgmlType::Q4_K,
            GgmlType::Q5_K,
            GgmlType::Q6_K,
            GgmlType::Q3_K,
            GgmlType::Q2_K,
            GgmlType::Q8_0,
            GgmlType::F16,
            GgmlType::BF16,
        ] {
            let q = quantize_row(ty, &x).unwrap();
            assert_eq!(q.len() as u64, ty.bytes_for(n as u64).unwrap());
            let mut y = vec![0f32; n];
            dequantize_row(ty, &q, &mut y).unwrap();
            let sq: f64 = x.iter().zip(&y).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
            let total_error = sq.sqrt() / n as f64;
            // ggml's tests/test-quantize-fns.cpp: 0.002, 0.004 for its 3-bit and 0.0075 for its
            // 2-bit types.
            let limit = match ty {
                GgmlType::Q3_K => 0.004,
                GgmlType::Q2_K => 0.0075,
                _ => 0.002,
            };
            assert!(total_error < limit, "{ty}: total error {total_error}");
        }
    }

    #[test]
    fn unsupported_types_are_named() {
        let e = dequantize_row(GgmlType::IQ4_NL, &[0; 18], &mut [0f32; 32]).unwrap_err();
        assert!(e.to_string().contains("IQ4_NL"));
    }
}
