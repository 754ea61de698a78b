//! ggml's K-quants Q2_K … Q6_K (super-blocks of 256): layouts, dequantization and the reference
//! quantizers, bit for bit. Sources: ggml/src/ggml-common.h (`block_q{2,3,4,5,6}_K`) and
//! ggml/src/ggml-quants.c (`quantize_row_q{2,3,4,5,6}_K_ref`, `make_qkx2_quants`,
//! `make_q3_quants`, `make_qx_quants`, `dequantize_row_q{2,3,4,5,6}_K`); every float operation here
//! is the C code's, in its order, so the bytes match (tests/fixtures/ggml/, made by ggml's own
//! functions).
//!
//! - Q4_K (144 bytes / 256 weights): f16 `d`, f16 `dmin`, 12 bytes of 6-bit scales and mins for
//!   eight sub-blocks of 32 (`scale_min`), 128 bytes of nibbles: bytes 32k..32k+32 hold sub-block
//!   2k in their low nibbles and 2k+1 in their high ones; `x = d·sc·q − dmin·m`.
//! - Q5_K (176 bytes): Q4_K's header and nibbles with a fifth bit per weight, `qh` (32 bytes)
//!   before the nibbles: bit j of `qh[l]` belongs to element l of sub-block j; `x = d·sc·q −
//!   dmin·m`, q five bits.
//! - Q2_K (84 bytes): 16 bytes of 4-bit scale | 4-bit min per sub-block of 16, 64 bytes of 2-bit
//!   quants (as Q3_K's `qs`), f16 `d`, f16 `dmin`; `x = d·sc·q − dmin·m`.
//! - Q3_K (110 bytes): `hmask` (32 bytes: bit g of byte l is the third bit of element l of
//!   32-value group g), 64 bytes of 2-bit pairs `qs`, 12 bytes of 6-bit scales for
//!   sixteen sub-blocks of 16 (`q3_scales`), f16 `d`; `x = d·(sc − 32)·(q − 4·(1 − h))`.
//! - Q6_K (210 bytes): 128 bytes of low nibbles `ql`, 64 of high bit pairs `qh`, 16 i8 scales (one
//!   per 16 weights), f16 `d`; `x = d·sc·(q − 32)`, q six bits.
//!
//! Their dot products are in quant/dot.rs (portable; Q2_K, Q3_K and Q5_K also run it under
//! AVX2's target features), quant/avx2.rs, quant/simd128.rs (four rows at a time) and the GPU's
//! matvec.wgsl.

use super::blocks::read_f16;
use half::f16;

pub const QK_K: usize = 256;
pub const Q4_K_BYTES: usize = 144;
pub const Q5_K_BYTES: usize = 176;
pub const Q6_K_BYTES: usize = 210;
pub const Q3_K_BYTES: usize = 110;
pub const Q2_K_BYTES: usize = 84;
/// ggml's `GROUP_MAX_EPS`: a group whose largest magnitude is below it quantizes to zeros.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: round half to even through the float adder (|x| ≤ 4,194,303).
fn nearest_int(x: f32) -> i32 {
    ((x + 12_582_912.0).to_bits() as i32 & 0x007f_ffff) - 0x0040_0000
}

/// The value of largest magnitude, signed (the first where several tie), and that magnitude:
/// what ggml's symmetric quantizers and Q8_K scale by.
pub(crate) fn signed_max(x: &[f32]) -> (f32, f32) {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    (max, amax)
}

/// A Q4_K (or, with `five`, Q5_K) block's parts: f16 `d` and `dmin`, the 12 scale bytes, the
/// fifth bits `qh` (empty for Q4_K) and the nibbles.
pub(crate) fn k4_parts(blk: &[u8], five: bool) -> (f32, f32, &[u8], &[u8], &[u8]) {
    let (qh, qs) = if five {
        blk[16..].split_at(32)
    } else {
        blk[16..].split_at(0)
    };
    (read_f16(blk, 0), read_f16(blk, 2), &blk[4..16], qh, qs)
}

/// Sub-block `j`'s 6-bit scale and min from a Q4_K block's 12 scale bytes (`get_scale_min_k4`).
pub fn scale_min(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

pub fn dequantize_q4_k(src: &[u8], dst: &mut [f32]) {
    dequantize_k4::<false>(src, dst)
}

pub fn dequantize_q5_k(src: &[u8], dst: &mut [f32]) {
    dequantize_k4::<true>(src, dst)
}

/// Q4_K, or with `FIVE` Q5_K (each nibble plus 16 where its `qh` bit is set).
fn dequantize_k4<const FIVE: bool>(src: &[u8], dst: &mut [f32]) {
    let bytes = if FIVE { Q5_K_BYTES } else { Q4_K_BYTES };
    for (out, blk) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(bytes)) {
        let (d, min, scales, qh, qs) = k4_parts(blk, FIVE);
        for (k, (q, y)) in qs.chunks_exact(32).zip(out.chunks_exact_mut(64)).enumerate() {
            let (sc1, m1) = scale_min(2 * k, scales);
            let (sc2, m2) = scale_min(2 * k + 1, scales);
            let (d1, m1) = (d * sc1 as f32, min * m1 as f32);
            let (d2, m2) = (d * sc2 as f32, min * m2 as f32);
            for l in 0..32 {
                let (h1, h2) = match FIVE {
                    true => (((qh[l] >> (2 * k)) & 1) << 4, ((qh[l] >> (2 * k + 1)) & 1) << 4),
                    false => (0, 0),
                };
                y[l] = d1 * ((q[l] & 0xF) + h1) as f32 - m1;
                y[l + 32] = d2 * ((q[l] >> 4) + h2) as f32 - m2;
            }
        }
    }
}

pub fn dequantize_q6_k(src: &[u8], dst: &mut [f32]) {
    for (out, blk) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(Q6_K_BYTES)) {
        let d = read_f16(blk, 208);
        for h in 0..2 {
            let ql = &blk[64 * h..64 * h + 64];
            let qh = &blk[128 + 32 * h..128 + 32 * h + 32];
            let sc = &blk[192 + 8 * h..192 + 8 * h + 8];
            let y = &mut out[128 * h..128 * h + 128];
            for l in 0..32 {
                let is = l / 16;
                let q = [
                    (ql[l] & 0xF) | ((qh[l] & 3) << 4),
                    (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4),
                    (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                    (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                ];
                for (k, q) in q.into_iter().enumerate() {
                    y[l + 32 * k] = d * (sc[is + 2 * k] as i8) as f32 * (q as i8 - 32) as f32;
                }
            }
        }
    }
}

/// Q3_K's sixteen 6-bit scales less 32 (low nibbles in bytes 0–7, high two bits in 8–11).
pub fn q3_scales(sc: &[u8]) -> [i32; 16] {
    std::array::from_fn(|j| {
        let low = if j < 8 { sc[j] & 0xF } else { sc[j - 8] >> 4 };
        let high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
        (low | (high << 4)) as i32 - 32
    })
}

/// Element `e` (0..256) of a Q3_K block as a signed 3-bit value (−4..3).
fn q3_value(blk: &[u8], e: usize) -> i32 {
    let q = two_bits(&blk[32..96], e) as i32;
    let h = (blk[e % 32] >> (e / 32)) & 1;
    q - if h == 1 { 0 } else { 4 }
}

pub fn dequantize_q3_k(src: &[u8], dst: &mut [f32]) {
    for (out, blk) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(Q3_K_BYTES)) {
        let d = read_f16(blk, 108);
        let scales = q3_scales(&blk[96..108]);
        for (e, y) in out.iter_mut().enumerate() {
            let dl = d * scales[e / 16] as f32;
            *y = dl * q3_value(blk, e) as f32;
        }
    }
}

/// ggml's `make_q3_quants` with `do_rmse`: a symmetric `nmax`-level quantization of `x` (into
/// `l` as 0..2·nmax) refined by a few passes of weighted least squares; returns the scale.
fn make_q3_quants(x: &[f32], nmax: i32, l: &mut [i8]) -> f32 {
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        l.iter_mut().for_each(|q| *q = 0);
        return 0.0;
    }
    let iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (q, &v) in l.iter_mut().zip(x) {
        let li = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
        *q = li as i8;
        let w = v * v;
        sumlx += w * v * li as f32;
        suml2 += w * li as f32 * li as f32;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for (q, &v) in l.iter_mut().zip(x) {
            let w = v * v;
            let mut slx = sumlx - w * v * *q as f32;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * *q as f32 * *q as f32;
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != *q as i32 {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *q = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    l.iter_mut().for_each(|q| *q += nmax as i8);
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// ggml's `quantize_row_q3_K_ref`.
pub fn quantize_q3_k(src: &[f32], out: &mut Vec<u8>) {
    for x in src.chunks_exact(QK_K) {
        let mut l = [0i8; QK_K];
        let scales: [f32; 16] =
            std::array::from_fn(|j| make_q3_quants(&x[16 * j..16 * j + 16], 4, &mut l[16 * j..16 * j + 16]));
        let (max_scale, _) = signed_max(&scales);
        let mut sc = [0u8; 12];
        let d = if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for (j, &s) in scales.iter().enumerate() {
                let q = (nearest_int(iscale * s).clamp(-32, 31) + 32) as u8;
                if j < 8 {
                    sc[j] = q & 0xF;
                } else {
                    sc[j - 8] |= (q & 0xF) << 4;
                }
                sc[j % 4 + 8] |= (q >> 4) << (2 * (j / 4));
            }
            f16_bytes(1.0 / iscale)
        } else {
            f16_bytes(0.0)
        };
        let df = read_f16(&d, 0);
        for (j, s) in q3_scales(&sc).into_iter().enumerate() {
            let dj = df * s as f32;
            if dj == 0.0 {
                continue;
            }
            for i in 0..16 {
                l[16 * j + i] = (nearest_int(x[16 * j + i] / dj).clamp(-4, 3) + 4) as i8;
            }
        }
        let mut hmask = [0u8; 32];
        for (j, q) in l.iter_mut().enumerate() {
            if *q > 3 {
                hmask[j % 32] |= 1 << (j / 32);
                *q -= 4;
            }
        }
        out.extend_from_slice(&hmask);
        for j in (0..QK_K).step_by(128) {
            out.extend(
                (0..32).map(|i| (l[j + i] | (l[j + i + 32] << 2) | (l[j + i + 64] << 4) | (l[j + i + 96] << 6)) as u8),
            );
        }
        out.extend_from_slice(&sc);
        out.extend_from_slice(&d);
    }
}

/// Element `e` (0..256) of a 2-bit `qs` array laid out as Q2_K's and Q3_K's: 128-value halves,
/// each 32 bytes holding four 32-value groups at shifts 0, 2, 4, 6.
fn two_bits(qs: &[u8], e: usize) -> u8 {
    let (n, r) = (e / 128, e % 128);
    (qs[32 * n + r % 32] >> (2 * (r / 32))) & 3
}

pub fn dequantize_q2_k(src: &[u8], dst: &mut [f32]) {
    for (out, blk) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(Q2_K_BYTES)) {
        let (d, min) = (read_f16(blk, 80), read_f16(blk, 82));
        for (e, y) in out.iter_mut().enumerate() {
            let sc = blk[e / 16];
            let (dl, ml) = (d * (sc & 0xF) as f32, min * (sc >> 4) as f32);
            *y = dl * two_bits(&blk[16..80], e) as f32 - ml;
        }
    }
}

/// ggml's `quantize_row_q2_K_ref`.
pub fn quantize_q2_k(src: &[f32], out: &mut Vec<u8>) {
    const Q4SCALE: f32 = 15.0;
    for x in src.chunks_exact(QK_K) {
        let mut l = [0u8; QK_K];
        let (mut scales, mut mins) = ([0f32; 16], [0f32; 16]);
        let (mut max_scale, mut max_min) = (0f32, 0f32);
        for j in 0..16 {
            let xs = &x[16 * j..16 * j + 16];
            let weights: [f32; 16] = std::array::from_fn(|i| xs[i].abs());
            (scales[j], mins[j]) = make_qkx2_quants(xs, &weights, 3, &mut l[16 * j..16 * j + 16], -0.5, 0.1, 15, true);
            if scales[j] > max_scale {
                max_scale = scales[j];
            }
            if mins[j] > max_min {
                max_min = mins[j];
            }
        }
        let mut sc = [0u8; 16];
        let d = if max_scale > 0.0 {
            let iscale = Q4SCALE / max_scale;
            for (q, &s) in sc.iter_mut().zip(&scales) {
                *q = nearest_int(iscale * s) as u8;
            }
            f16_bytes(max_scale / Q4SCALE)
        } else {
            f16_bytes(0.0)
        };
        let dmin = if max_min > 0.0 {
            let iscale = Q4SCALE / max_min;
            for (q, &m) in sc.iter_mut().zip(&mins) {
                *q |= (nearest_int(iscale * m) << 4) as u8;
            }
            f16_bytes(max_min / Q4SCALE)
        } else {
            f16_bytes(0.0)
        };
        let (df, dminf) = (read_f16(&d, 0), read_f16(&dmin, 0));
        for j in 0..16 {
            let dj = df * (sc[j] & 0xF) as f32;
            if dj == 0.0 {
                continue;
            }
            let dm = dminf * (sc[j] >> 4) as f32;
            for i in 0..16 {
                l[16 * j + i] = nearest_int((x[16 * j + i] + dm) / dj).clamp(0, 3) as u8;
            }
        }
        out.extend_from_slice(&sc);
        for j in (0..QK_K).step_by(128) {
            out.extend((0..32).map(|i| l[j + i] | (l[j + i + 32] << 2) | (l[j + i + 64] << 4) | (l[j + i + 96] << 6)));
        }
        out.extend_from_slice(&d);
        out.extend_from_slice(&dmin);
    }
}

/// ggml's `make_qkx2_quants`: the scale and (negated) min of an asymmetric `nmax`-level
/// quantization of `x` minimising the weighted squared error over a small search; fills `l`.
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants(
    x: &[f32],
    weights: &[f32],
    nmax: i32,
    l: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let n = x.len();
    let (mut min, mut max) = (x[0], x[0]);
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l.fill(0);
        return (0.0, -min);
    }
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..n {
        l[i] = nearest_int(iscale * (x[i] - min)).clamp(0, nmax) as u8;
        let diff = scale * l[i] as f32 + min - x[i];
        best_error += weights[i] * if use_mad { diff.abs() } else { diff * diff };
    }
    let mut laux = [0u8; 32];
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..n {
            let li = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            laux[i] = li as u8;
            let (w, lf) = (weights[i], li as f32);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for i in 0..n {
                let diff = this_scale * laux[i] as f32 + this_min - x[i];
                cur_error += weights[i] * if use_mad { diff.abs() } else { diff * diff };
            }
            if cur_error < best_error {
                l[..n].copy_from_slice(&laux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// ggml's `make_qx_quants` with `rmse_type` 1 and no importance weights (Q6_K's use): a
/// symmetric scale for `nmax`·2 levels, searched around `nmax / max` for the least x²-weighted
/// error; fills `l` with levels offset by `nmax`.
fn make_qx_quants(x: &[f32], nmax: i32, l: &mut [i8]) -> f32 {
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        l.fill(0);
        return 0.0;
    }
    let level = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    let sums = |iscale: f32| {
        let (mut sumlx, mut suml2) = (0f32, 0f32);
        for &v in x {
            let lf = level(iscale, v) as f32;
            let w = v * v;
            sumlx += w * v * lf;
            suml2 += w * lf * lf;
        }
        (sumlx, suml2)
    };
    let mut iscale = -(nmax as f32) / max;
    for (li, &v) in l.iter_mut().zip(x) {
        *li = (level(iscale, v) + nmax) as i8;
    }
    let (sumlx, suml2) = sums(iscale);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        let (sumlx, suml2) = sums(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (li, &v) in l.iter_mut().zip(x) {
                *li = (level(iscale, v) + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

fn f16_bytes(x: f32) -> [u8; 2] {
    f16::from_f32(x).to_le_bytes()
}

/// ggml's `quantize_row_q4_K_ref`.
pub fn quantize_q4_k(src: &[f32], out: &mut Vec<u8>) {
    quantize_k4::<false>(src, out)
}

/// ggml's `quantize_row_q5_K_ref`: Q4_K's with 32 levels (and its own search parameters).
pub fn quantize_q5_k(src: &[f32], out: &mut Vec<u8>) {
    quantize_k4::<true>(src, out)
}

fn quantize_k4<const FIVE: bool>(src: &[f32], out: &mut Vec<u8>) {
    let (nmax, rmin, nstep) = if FIVE { (31, -0.5, 15) } else { (15, -1.0, 20) };
    for x in src.chunks_exact(QK_K) {
        let mut l = [0u8; QK_K];
        let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
        let (mut max_scale, mut max_min) = (0f32, 0f32);
        for j in 0..8 {
            let xs = &x[32 * j..32 * j + 32];
            let mut sum_x2 = 0f32;
            for &v in xs {
                sum_x2 += v * v;
            }
            let av_x = (sum_x2 / 32.0).sqrt();
            let weights: [f32; 32] = std::array::from_fn(|i| av_x + xs[i].abs());
            (scales[j], mins[j]) =
                make_qkx2_quants(xs, &weights, nmax, &mut l[32 * j..32 * j + 32], rmin, 0.1, nstep, false);
            if scales[j] > max_scale {
                max_scale = scales[j];
            }
            if mins[j] > max_min {
                max_min = mins[j];
            }
        }
        let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
        let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
        let mut sc = [0u8; 12];
        for j in 0..8 {
            let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
            let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
            if j < 4 {
                sc[j] = ls;
                sc[j + 4] = lm;
            } else {
                sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
                sc[j - 4] |= (ls >> 4) << 6;
                sc[j] |= (lm >> 4) << 6;
            }
        }
        let (d, dmin) = (f16_bytes(max_scale / 63.0), f16_bytes(max_min / 63.0));
        let (df, dminf) = (read_f16(&d, 0), read_f16(&dmin, 0));
        for j in 0..8 {
            let (s, m) = scale_min(j, &sc);
            let dj = df * s as f32;
            if dj == 0.0 {
                continue;
            }
            let dm = dminf * m as f32;
            for i in 0..32 {
                l[32 * j + i] = nearest_int((x[32 * j + i] + dm) / dj).clamp(0, nmax) as u8;
            }
        }
        out.extend_from_slice(&d);
        out.extend_from_slice(&dmin);
        out.extend_from_slice(&sc);
        if FIVE {
            // Bit j of qh[i]: the fifth bit of element i of sub-block j.
            let mut qh = [0u8; 32];
            for (j, sub) in l.chunks_exact(32).enumerate() {
                for (h, &v) in qh.iter_mut().zip(sub) {
                    *h |= (v >> 4) << j;
                }
            }
            out.extend_from_slice(&qh);
        }
        for j in (0..QK_K).step_by(64) {
            out.extend((0..32).map(|i| (l[j + i] & 0xF) | ((l[j + i + 32] & 0xF) << 4)));
        }
    }
}

/// ggml's `quantize_row_q6_K_ref`.
pub fn quantize_q6_k(src: &[f32], out: &mut Vec<u8>) {
    for x in src.chunks_exact(QK_K) {
        let mut l = [0i8; QK_K];
        let mut scales = [0f32; 16];
        let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
        for ib in 0..16 {
            let scale = make_qx_quants(&x[16 * ib..16 * ib + 16], 32, &mut l[16 * ib..16 * ib + 16]);
            scales[ib] = scale;
            if scale.abs() > max_abs_scale {
                max_abs_scale = scale.abs();
                max_scale = scale;
            }
        }
        if max_abs_scale < GROUP_MAX_EPS {
            out.extend([0u8; Q6_K_BYTES]);
            continue;
        }
        let iscale = -128.0 / max_scale;
        let d = f16_bytes(1.0 / iscale);
        let df = read_f16(&d, 0);
        let sc: [i8; 16] = std::array::from_fn(|ib| nearest_int(iscale * scales[ib]).min(127) as i8);
        for j in 0..16 {
            let dj = df * sc[j] as f32;
            if dj == 0.0 {
                continue;
            }
            for i in 0..16 {
                l[16 * j + i] = (nearest_int(x[16 * j + i] / dj).clamp(-32, 31) + 32) as i8;
            }
        }
        let (mut ql, mut qh) = ([0u8; 128], [0u8; 64]);
        for (h, j) in (0..QK_K).step_by(128).enumerate() {
            for i in 0..32 {
                let q = |k: usize| l[j + i + 32 * k] as u8;
                ql[64 * h + i] = (q(0) & 0xF) | ((q(2) & 0xF) << 4);
                ql[64 * h + i + 32] = (q(1) & 0xF) | ((q(3) & 0xF) << 4);
                qh[32 * h + i] = (q(0) >> 4) | ((q(1) >> 4) << 2) | ((q(2) >> 4) << 4) | ((q(3) >> 4) << 6);
            }
        }
        out.extend_from_slice(&ql);
        out.extend_from_slice(&qh);
        out.extend(sc.map(|s| s as u8));
        out.extend_from_slice(&d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        assert_eq!(
            [0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 3.7].map(nearest_int),
            [0, 2, 2, 0, -2, 2, 4]
        );
    }

    /// A hand-built Q4_K block: d = 1, dmin = 0.5, sub-block j's scale j + 1 and min j, nibbles
    /// 0..15 repeating; scales and mins above 15 exercise the split 6-bit packing.
    #[test]
    fn q4_k_hand_built_block() {
        let (sc, mn): ([u8; 8], [u8; 8]) = ([1, 2, 3, 40, 5, 6, 7, 63], [0, 1, 2, 3, 17, 5, 6, 33]);
        let mut packed = [0u8; 12];
        for j in 0..8 {
            if j < 4 {
                packed[j] = sc[j];
                packed[j + 4] = mn[j];
            } else {
                packed[j + 4] = (sc[j] & 0xF) | ((mn[j] & 0xF) << 4);
                packed[j - 4] |= (sc[j] >> 4) << 6;
                packed[j] |= (mn[j] >> 4) << 6;
            }
        }
        for j in 0..8 {
            assert_eq!(scale_min(j, &packed), (sc[j], mn[j]), "sub-block {j}");
        }
        let mut blk = f16_bytes(1.0).to_vec();
        blk.extend_from_slice(&f16_bytes(0.5));
        blk.extend_from_slice(&packed);
        blk.extend((0..128).map(|i| (i % 16) as u8 | (((15 - i % 16) as u8) << 4)));
        let mut out = [0f32; QK_K];
        dequantize_q4_k(&blk, &mut out);
        for (i, &v) in out.iter().enumerate() {
            let (j, e) = (i / 32, i % 32);
            let byte = 32 * (j / 2) + e;
            let q = if j % 2 == 0 { byte % 16 } else { 15 - byte % 16 };
            assert_eq!(v, sc[j] as f32 * q as f32 - 0.5 * mn[j] as f32, "element {i}");
        }
    }

    /// ggml's own functions (ggml-org/ggml d99724f2, `src/ggml-quants.c` built with gcc, no
    /// fast-math) on 1,024 values, written to `tests/fixtures/ggml/quants.bin`: the values, then
    /// `quantize_row_q5_0_ref`, `_q5_1_ref`, `_q4_K_ref`, `_q6_K_ref` of them, then
    /// `dequantize_row_q4_K` and `_q6_K` of those. Ours must give the same bytes and floats.
    #[test]
    fn bit_for_bit_with_ggml() {
        use crate::quant::{GgmlType, dequantize_row, quantize_row};
        let bin: &[u8] = include_bytes!("../../tests/fixtures/ggml/quants.bin");
        let n = 1024;
        let floats = |b: &[u8]| -> Vec<f32> {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let x = floats(&bin[..4 * n]);
        let mut at = 4 * n;
        let mut take = |len: usize| {
            let s = &bin[at..at + len];
            at += len;
            s
        };
        let q5_0 = take(n / 32 * 22);
        let q5_1 = take(n / 32 * 24);
        let q4_k = take(n / QK_K * Q4_K_BYTES);
        let q6_k = take(n / QK_K * Q6_K_BYTES);
        let deq4 = floats(take(4 * n));
        let deq6 = floats(take(4 * n));
        for (ty, want) in [
            (GgmlType::Q5_0, q5_0),
            (GgmlType::Q5_1, q5_1),
            (GgmlType::Q4_K, q4_k),
            (GgmlType::Q6_K, q6_k),
        ] {
            let got = quantize_row(ty, &x).unwrap();
            let first = got.iter().zip(want).position(|(a, b)| a != b);
            assert_eq!(first, None, "{ty}: first differing byte");
            assert_eq!(got.len(), want.len());
        }
        for (ty, q, want) in [(GgmlType::Q4_K, q4_k, &deq4), (GgmlType::Q6_K, q6_k, &deq6)] {
            let mut got = vec![0f32; n];
            dequantize_row(ty, q, &mut got).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(want), "{ty}");
        }
    }

    /// `quantize_row_q{5,3,2}_K_ref` and `dequantize_row_q{5,3,2}_K` (ggml-org/ggml d99724f2,
    /// gcc -O2) on quants.bin's 1,024 values: `tests/fixtures/ggml/q5_k.bin`, `q3_k.bin` and
    /// `q2_k.bin` hold the 4 blocks, then the 1,024 floats back.
    #[test]
    fn q5_k_q3_k_and_q2_k_bit_for_bit_with_ggml() {
        use crate::quant::{GgmlType, dequantize_row, quantize_row};
        let values: &[u8] = include_bytes!("../../tests/fixtures/ggml/quants.bin");
        let floats = |b: &[u8]| -> Vec<f32> {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let x = floats(&values[..4096]);
        let cases: [(GgmlType, &[u8], usize); 2] = [
            (
                GgmlType::Q5_K,
                include_bytes!("../../tests/fixtures/ggml/q5_k.bin"),
                Q5_K_BYTES,
            ),
            (
                GgmlType::Q3_K,
                include_bytes!("../../tests/fixtures/ggml/q3_k.bin"),
                Q3_K_BYTES,
            ),
        ];
        for (ty, bin, block) in cases {
            let (want, back) = bin.split_at(4 * block);
            let got = quantize_row(ty, &x).unwrap();
            let first = got.iter().zip(want).position(|(a, b)| a != b);
            assert_eq!(first, None, "{ty}: first differing byte");
            let mut deq = vec![0f32; 1024];
            dequantize_row(ty, want, &mut deq).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&deq), bits(&floats(back)), "{ty}");
        }
    }
}
