//! WebAssembly `simd128` integer block sums for the quantized dots (the browser's CPU
//! fallback). Integer sums are exact in any order, so these give the portable kernel's bits.
//! Products widen u8/i8 to i16 and `i32x4_dot_i16x8` adds neighbouring pairs into i32 lanes.

use core::arch::wasm32::*;

#[inline]
fn hsum(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v) + i32x4_extract_lane::<1>(v) + i32x4_extract_lane::<2>(v) + i32x4_extract_lane::<3>(v)
}

/// Σ a·b over 16 byte pairs, as i32x4 partial sums: `a` already widened to i16 (low, high
/// halves), `b` 16 signed bytes.
#[inline]
fn dot16(a_lo: v128, a_hi: v128, b: v128) -> v128 {
    i32x4_add(
        i32x4_dot_i16x8(a_lo, i16x8_extend_low_i8x16(b)),
        i32x4_dot_i16x8(a_hi, i16x8_extend_high_i8x16(b)),
    )
}

/// Σ (nibbles of `qs` as 0..15) × `y`: low nibbles against `y[..16]`, high against `y[16..]`.
#[inline]
pub(crate) fn q4_block_sum(qs: &[u8], y: &[i8]) -> i32 {
    assert!(qs.len() >= 16 && y.len() >= 32);
    // SAFETY: the lengths are checked above; v128_load reads 16 unaligned bytes.
    let (q, y0, y1) = unsafe {
        (
            v128_load(qs.as_ptr() as *const v128),
            v128_load(y.as_ptr() as *const v128),
            v128_load(y.as_ptr().add(16) as *const v128),
        )
    };
    let lo = v128_and(q, u8x16_splat(0x0F));
    let hi = u8x16_shr(q, 4);
    hsum(i32x4_add(
        dot16(u16x8_extend_low_u8x16(lo), u16x8_extend_high_u8x16(lo), y0),
        dot16(u16x8_extend_low_u8x16(hi), u16x8_extend_high_u8x16(hi), y1),
    ))
}

/// Σ q × y over a block of 32 signed bytes each.
#[inline]
pub(crate) fn q8_block_sum(q: &[u8], y: &[i8]) -> i32 {
    assert!(q.len() >= 32 && y.len() >= 32);
    // SAFETY: the lengths are checked above.
    let (q0, q1, y0, y1) = unsafe {
        (
            v128_load(q.as_ptr() as *const v128),
            v128_load(q.as_ptr().add(16) as *const v128),
            v128_load(y.as_ptr() as *const v128),
            v128_load(y.as_ptr().add(16) as *const v128),
        )
    };
    hsum(i32x4_add(
        dot16(i16x8_extend_low_i8x16(q0), i16x8_extend_high_i8x16(q0), y0),
        dot16(i16x8_extend_low_i8x16(q1), i16x8_extend_high_i8x16(q1), y1),
    ))
}

/// f16 → f32 in each lane (its low 16 bits), bit for bit what `half` gives for every non-NaN
/// value: exponent rebiased in integers, infinities and NaNs given f32's all-ones exponent,
/// subnormals as 2^-14 · (1 + m/1024) − 2^-14, an exact subtraction of normal numbers (a
/// multiply of denormal f32s instead, the shorter trick, is slow on x86: F16 rows decoded at
/// 0.67 GB/s with it). F. Giesen, "half_to_float", 2012.
#[inline]
fn f16x4_to_f32(h: v128) -> v128 {
    let mag = v128_and(h, u32x4_splat(0x7fff));
    let exp = v128_and(mag, u32x4_splat(0x7c00));
    let rebias = i32x4_splat(112 << 23);
    let normal = i32x4_add(i32x4_shl(mag, 13), rebias);
    let inf_nan = v128_and(i32x4_eq(exp, i32x4_splat(0x7c00)), rebias);
    let o = i32x4_add(normal, inf_nan);
    let subnormal = f32x4_sub(
        i32x4_add(o, i32x4_splat(1 << 23)),
        f32x4_splat(f32::from_bits(113 << 23)),
    );
    let o = v128_bitselect(subnormal, o, i32x4_eq(exp, i32x4_splat(0)));
    v128_or(o, i32x4_shl(v128_and(h, u32x4_splat(0x8000)), 16))
}

/// The little-endian u16 at `at` of each of four rows, one per lane.
#[inline]
fn u16x4(rows: &[&[u8]; 4], at: usize) -> v128 {
    let h = |r: &[u8]| u16::from_le_bytes([r[at], r[at + 1]]) as u32;
    u32x4(h(rows[0]), h(rows[1]), h(rows[2]), h(rows[3]))
}

/// The four lanes' horizontal sums of `s[0..4]`, as one vector (lane r: Σ s[r]).
#[inline]
fn hsum4(s: [v128; 4]) -> v128 {
    let u = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(s[0], s[1]),
        i32x4_shuffle::<2, 6, 3, 7>(s[0], s[1]),
    );
    let v = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(s[2], s[3]),
        i32x4_shuffle::<2, 6, 3, 7>(s[2], s[3]),
    );
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(u, v), i32x4_shuffle::<2, 3, 6, 7>(u, v))
}

/// A Q5 block's fifth bits for 16 elements (bit k of `b0` then of `b1` for element k, k+8) as
/// bytes of 16 or 0, ready to OR onto the nibbles.
#[inline]
fn fifth_bits(b0: u8, b1: u8) -> v128 {
    let v = u8x16(b0, b0, b0, b0, b0, b0, b0, b0, b1, b1, b1, b1, b1, b1, b1, b1);
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    v128_and(u8x16_ne(v128_and(v, bit), u8x16_splat(0)), u8x16_splat(16))
}

/// Four rows of Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 (`ty`'s block of `block_bytes`) dotted with `a` at once:
/// the activations' loads and widening serve four rows, the four block sums reduce together,
/// and the scales convert four at a time. Each lane does the scalar kernel's float operations
/// in its order (`sum += d·d_y·Σ + offset·s`; wasm has no fused multiply-add), so the result
/// is the scalar kernel's, bit for bit.
pub(crate) fn dot_rows4(rows: [&[u8]; 4], a: &super::ActRow, block_bytes: usize, kind: Quad) -> [f32; 4] {
    let blocks = a.d.len();
    for r in &rows {
        assert!(r.len() >= blocks * block_bytes);
    }
    assert!(a.qs.len() >= blocks * 32 && a.s.len() >= blocks);
    let mut acc = f32x4_splat(0.0);
    for b in 0..blocks {
        let at = b * block_bytes;
        // SAFETY: every row holds `blocks` blocks and `a.qs` 32 bytes per block (asserted above).
        let (y0, y1) = unsafe {
            let y = a.qs.as_ptr().add(b * 32);
            (v128_load(y as *const v128), v128_load(y.add(16) as *const v128))
        };
        let ys = [
            i16x8_extend_low_i8x16(y0),
            i16x8_extend_high_i8x16(y0),
            i16x8_extend_low_i8x16(y1),
            i16x8_extend_high_i8x16(y1),
        ];
        let sums = rows.map(|row| {
            // SAFETY: as above; the block's quants end within it.
            let load = |off: usize| unsafe { v128_load(row.as_ptr().add(at + off) as *const v128) };
            let (w0, w1) = match kind {
                Quad::Q8_0 => (load(2), load(18)),
                Quad::Q4_0 | Quad::Q4_1 => {
                    let q = load(if kind == Quad::Q4_1 { 4 } else { 2 });
                    (v128_and(q, u8x16_splat(0x0F)), u8x16_shr(q, 4))
                }
                Quad::Q5_0 | Quad::Q5_1 => {
                    let qs_at = if kind == Quad::Q5_1 { 8 } else { 6 };
                    let q = load(qs_at);
                    let h = &row[at + qs_at - 4..at + qs_at];
                    (
                        v128_or(v128_and(q, u8x16_splat(0x0F)), fifth_bits(h[0], h[1])),
                        v128_or(u8x16_shr(q, 4), fifth_bits(h[2], h[3])),
                    )
                }
            };
            let (w0l, w0h, w1l, w1h) = match kind {
                Quad::Q8_0 => (
                    i16x8_extend_low_i8x16(w0),
                    i16x8_extend_high_i8x16(w0),
                    i16x8_extend_low_i8x16(w1),
                    i16x8_extend_high_i8x16(w1),
                ),
                _ => (
                    u16x8_extend_low_u8x16(w0),
                    u16x8_extend_high_u8x16(w0),
                    u16x8_extend_low_u8x16(w1),
                    u16x8_extend_high_u8x16(w1),
                ),
            };
            i32x4_add(
                i32x4_add(i32x4_dot_i16x8(w0l, ys[0]), i32x4_dot_i16x8(w0h, ys[1])),
                i32x4_add(i32x4_dot_i16x8(w1l, ys[2]), i32x4_dot_i16x8(w1h, ys[3])),
            )
        });
        let sumi = f32x4_convert_i32x4(hsum4(sums));
        let d = f16x4_to_f32(u16x4(&rows, at));
        let term = f32x4_mul(f32x4_mul(d, f32x4_splat(a.d[b])), sumi);
        let term = match kind {
            Quad::Q8_0 => term,
            Quad::Q4_0 => f32x4_add(term, f32x4_mul(f32x4_mul(f32x4_splat(-8.0), d), f32x4_splat(a.s[b]))),
            Quad::Q5_0 => f32x4_add(term, f32x4_mul(f32x4_mul(f32x4_splat(-16.0), d), f32x4_splat(a.s[b]))),
            Quad::Q4_1 | Quad::Q5_1 => {
                f32x4_add(term, f32x4_mul(f16x4_to_f32(u16x4(&rows, at + 2)), f32x4_splat(a.s[b])))
            }
        };
        acc = f32x4_add(acc, term);
    }
    [
        f32x4_extract_lane::<0>(acc),
        f32x4_extract_lane::<1>(acc),
        f32x4_extract_lane::<2>(acc),
        f32x4_extract_lane::<3>(acc),
    ]
}

/// Σ over one sub-block of 32 of `y` (widened, as `ys`) times the bytes `w0`, `w1` (unsigned
/// when `unsigned`, else signed), as i32x4 partial sums.
#[inline]
fn dot32(w0: v128, w1: v128, ys: &[v128; 4], unsigned: bool) -> v128 {
    let widen = |w: v128| {
        if unsigned {
            (u16x8_extend_low_u8x16(w), u16x8_extend_high_u8x16(w))
        } else {
            (i16x8_extend_low_i8x16(w), i16x8_extend_high_i8x16(w))
        }
    };
    let ((a, b), (c, e)) = (widen(w0), widen(w1));
    i32x4_add(
        i32x4_add(i32x4_dot_i16x8(a, ys[0]), i32x4_dot_i16x8(b, ys[1])),
        i32x4_add(i32x4_dot_i16x8(c, ys[2]), i32x4_dot_i16x8(e, ys[3])),
    )
}

/// Block `b`'s 32 activations, widened to i16 in four vectors.
#[inline]
fn acts32(a: &super::ActRow, b: usize) -> [v128; 4] {
    assert!(a.qs.len() >= (b + 1) * 32);
    // SAFETY: asserted above.
    let (y0, y1) = unsafe {
        let y = a.qs.as_ptr().add(b * 32);
        (v128_load(y as *const v128), v128_load(y.add(16) as *const v128))
    };
    [
        i16x8_extend_low_i8x16(y0),
        i16x8_extend_high_i8x16(y0),
        i16x8_extend_low_i8x16(y1),
        i16x8_extend_high_i8x16(y1),
    ]
}

/// 16 bytes of `row` from `at`.
#[inline]
fn load16(row: &[u8], at: usize) -> v128 {
    assert!(row.len() >= at + 16);
    // SAFETY: asserted above; v128_load reads 16 unaligned bytes.
    unsafe { v128_load(row.as_ptr().add(at) as *const v128) }
}

fn lanes(v: v128) -> [f32; 4] {
    [
        f32x4_extract_lane::<0>(v),
        f32x4_extract_lane::<1>(v),
        f32x4_extract_lane::<2>(v),
        f32x4_extract_lane::<3>(v),
    ]
}

/// Four Q4_K rows against Q8_K-rounded activations, each lane in `dot::dot_q4_k`'s float order
/// (`sum += d·sc·d_y·Σ − dmin·m·s` per sub-block), so the scalar kernel's bits.
pub(crate) fn dot_rows4_q4_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    dot_rows4_k4::<false>(rows, a)
}

/// Q5_K: as Q4_K with each nibble's fifth bit (bit j of the `qh` byte) added as 16.
pub(crate) fn dot_rows4_q5_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    dot_rows4_k4::<true>(rows, a)
}

fn dot_rows4_k4<const FIVE: bool>(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::{Q4_K_BYTES, Q5_K_BYTES, scale_min};
    let (bytes, qs_at) = if FIVE { (Q5_K_BYTES, 48) } else { (Q4_K_BYTES, 16) };
    let mut acc = f32x4_splat(0.0);
    for sb in 0..a.d.len() / 8 {
        let at = sb * bytes;
        let (d, dmin) = (f16x4_to_f32(u16x4(&rows, at)), f16x4_to_f32(u16x4(&rows, at + 2)));
        let sm = rows.map(|r| {
            let scales = &r[at + 4..at + 16];
            core::array::from_fn::<(u8, u8), 8, _>(|j| scale_min(j, scales))
        });
        for (j, sm_j) in (0..8).map(|j| (j, sm.map(|r| r[j]))) {
            let b = sb * 8 + j;
            let ys = acts32(a, b);
            let shift = 4 * (j as u32 % 2);
            let sums = rows.map(|row| {
                let q = at + qs_at + 32 * (j / 2);
                let nib = |w: v128, h: usize| {
                    let n = v128_and(u8x16_shr(w, shift), u8x16_splat(0x0F));
                    if !FIVE {
                        return n;
                    }
                    let fifth = v128_and(u8x16_shr(load16(row, at + 16 + h), j as u32), u8x16_splat(1));
                    v128_or(n, u8x16_shl(fifth, 4))
                };
                dot32(nib(load16(row, q), 0), nib(load16(row, q + 16), 16), &ys, true)
            });
            let sumi = f32x4_convert_i32x4(hsum4(sums));
            let sc = f32x4(sm_j[0].0 as f32, sm_j[1].0 as f32, sm_j[2].0 as f32, sm_j[3].0 as f32);
            let m = f32x4(sm_j[0].1 as f32, sm_j[1].1 as f32, sm_j[2].1 as f32, sm_j[3].1 as f32);
            let plus = f32x4_mul(f32x4_mul(f32x4_mul(d, sc), f32x4_splat(a.d[b])), sumi);
            let minus = f32x4_mul(f32x4_mul(dmin, m), f32x4_splat(a.s[b]));
            acc = f32x4_add(acc, f32x4_sub(plus, minus));
        }
    }
    lanes(acc)
}

/// Σ over 16 signed bytes `w` times the widened activations `lo`, `hi` (one 16-value half).
#[inline]
fn half16(w: v128, lo: v128, hi: v128) -> i32 {
    hsum(i32x4_add(
        i32x4_dot_i16x8(i16x8_extend_low_i8x16(w), lo),
        i32x4_dot_i16x8(i16x8_extend_high_i8x16(w), hi),
    ))
}

/// Four Q3_K rows against Q8_K-rounded activations, in `dot::dot_q3_k`'s order: the 3-bit
/// values less 4 as signed bytes, each half's integer sum times its scale, `sum += d·d_y·Σ`.
pub(crate) fn dot_rows4_q3_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::{Q3_K_BYTES, q3_scales};
    let mut acc = f32x4_splat(0.0);
    for sb in 0..a.d.len() / 8 {
        let at = sb * Q3_K_BYTES;
        let d = f16x4_to_f32(u16x4(&rows, at + 108));
        let scales = rows.map(|r| q3_scales(&r[at + 96..at + 108]));
        for k in 0..8 {
            let b = sb * 8 + k;
            let ys = acts32(a, b);
            let (n, j) = (k / 4, k as u32 % 4);
            let sumi = core::array::from_fn::<i32, 4, _>(|r| {
                let row = rows[r];
                let three = |l: usize| {
                    let q = v128_and(u8x16_shr(load16(row, at + 32 + 32 * n + l), 2 * j), u8x16_splat(3));
                    let h = v128_and(u8x16_shr(load16(row, at + l), k as u32), u8x16_splat(1));
                    i8x16_sub(v128_or(q, u8x16_shl(h, 2)), i8x16_splat(4))
                };
                half16(three(0), ys[0], ys[1]) * scales[r][2 * k]
                    + half16(three(16), ys[2], ys[3]) * scales[r][2 * k + 1]
            });
            let sumi = f32x4_convert_i32x4(i32x4(sumi[0], sumi[1], sumi[2], sumi[3]));
            acc = f32x4_add(acc, f32x4_mul(f32x4_mul(d, f32x4_splat(a.d[b])), sumi));
        }
    }
    lanes(acc)
}

/// Four Q2_K rows against Q8_K-rounded activations, in `dot::dot_q2_k`'s order: per half the
/// 2-bit values' sum times its scale and the activations' sum times its min,
/// `sum += d·d_y·Σ − dmin·d_y·Σm`.
pub(crate) fn dot_rows4_q2_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::Q2_K_BYTES;
    let mut acc = f32x4_splat(0.0);
    let ones = i8x16_splat(1);
    for sb in 0..a.d.len() / 8 {
        let at = sb * Q2_K_BYTES;
        let (d, dmin) = (f16x4_to_f32(u16x4(&rows, at + 80)), f16x4_to_f32(u16x4(&rows, at + 82)));
        for k in 0..8 {
            let b = sb * 8 + k;
            let ys = acts32(a, b);
            let sy = [half16(ones, ys[0], ys[1]), half16(ones, ys[2], ys[3])];
            let (n, j) = (k / 4, k as u32 % 4);
            let sums = core::array::from_fn::<(i32, i32), 4, _>(|r| {
                let row = rows[r];
                let two = |l: usize| v128_and(u8x16_shr(load16(row, at + 16 + 32 * n + l), 2 * j), u8x16_splat(3));
                let (sc0, sc1) = (row[at + 2 * k], row[at + 2 * k + 1]);
                let qy = (sc0 & 0xF) as i32 * half16(two(0), ys[0], ys[1])
                    + (sc1 & 0xF) as i32 * half16(two(16), ys[2], ys[3]);
                let my = (sc0 >> 4) as i32 * sy[0] + (sc1 >> 4) as i32 * sy[1];
                (qy, my)
            });
            let qy = f32x4_convert_i32x4(i32x4(sums[0].0, sums[1].0, sums[2].0, sums[3].0));
            let my = f32x4_convert_i32x4(i32x4(sums[0].1, sums[1].1, sums[2].1, sums[3].1));
            let ad = f32x4_splat(a.d[b]);
            let plus = f32x4_mul(f32x4_mul(d, ad), qy);
            let minus = f32x4_mul(f32x4_mul(dmin, ad), my);
            acc = f32x4_add(acc, f32x4_sub(plus, minus));
        }
    }
    lanes(acc)
}

/// Four Q6_K rows against Q8_K-rounded activations, in `dot::dot_q6_k`'s order: the six-bit
/// values less 32 as signed bytes, each 16-value half's integer sum times its i8 scale, then
/// `sum += d·d_y·Σ`.
pub(crate) fn dot_rows4_q6_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::Q6_K_BYTES;
    let mut acc = f32x4_splat(0.0);
    for sb in 0..a.d.len() / 8 {
        let at = sb * Q6_K_BYTES;
        let d = f16x4_to_f32(u16x4(&rows, at + 208));
        for h in 0..2 {
            for k in 0..4 {
                let b = sb * 8 + 4 * h + k;
                let ys = acts32(a, b);
                let sumi = rows.map(|row| {
                    let lo = at + 64 * h + 32 * (k % 2);
                    let hi = at + 128 + 32 * h;
                    let six = |l: usize| {
                        let nib = v128_and(u8x16_shr(load16(row, lo + l), 4 * (k as u32 / 2)), u8x16_splat(0x0F));
                        let top = u8x16_shl(
                            v128_and(u8x16_shr(load16(row, hi + l), 2 * k as u32), u8x16_splat(3)),
                            4,
                        );
                        i8x16_sub(v128_or(nib, top), i8x16_splat(32))
                    };
                    let (w0, w1) = (six(0), six(16));
                    let half0 = half16(w0, ys[0], ys[1]);
                    let half1 = half16(w1, ys[2], ys[3]);
                    let sc = &row[at + 192 + 8 * h + 2 * k..];
                    half0 * (sc[0] as i8) as i32 + half1 * (sc[1] as i8) as i32
                });
                let sumi = f32x4_convert_i32x4(i32x4(sumi[0], sumi[1], sumi[2], sumi[3]));
                acc = f32x4_add(acc, f32x4_mul(f32x4_mul(d, f32x4_splat(a.d[b])), sumi));
            }
        }
    }
    lanes(acc)
}

/// The block types [`dot_rows`] handles.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quad {
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
}

/// The eight lane sums of the scalar `dot_half` over a row of 16-bit floats (bf16 when `bf`,
/// else f16), as it computes them: `acc[k] += w·x` for k = i mod 8, no fused multiply-add, so
/// the same bits for every non-NaN weight; the tail past a multiple of 8 is left to the caller.
/// `half`'s f16 conversion is scalar code in wasm, which made F16 weights compute-bound.
pub(crate) fn half_lanes(row: &[u8], x: &[f32], bf: bool) -> [f32; 8] {
    let n = x.len() / 8;
    assert!(row.len() >= n * 16);
    let widen = |h: v128| if bf { i32x4_shl(h, 16) } else { f16x4_to_f32(h) };
    let (mut lo, mut hi) = (f32x4_splat(0.0), f32x4_splat(0.0));
    for i in 0..n {
        // SAFETY: `row` holds 16 bytes and `x` 8 floats for each i < n (asserted above).
        let (w, x0, x1) = unsafe {
            let xp = x.as_ptr().add(8 * i);
            (
                v128_load(row.as_ptr().add(16 * i) as *const v128),
                v128_load(xp as *const v128),
                v128_load(xp.add(4) as *const v128),
            )
        };
        lo = f32x4_add(lo, f32x4_mul(widen(u32x4_extend_low_u16x8(w)), x0));
        hi = f32x4_add(hi, f32x4_mul(widen(u32x4_extend_high_u16x8(w)), x1));
    }
    let mut out = [0f32; 8];
    // SAFETY: `out` holds 8 floats, two vectors' worth.
    unsafe {
        v128_store(out.as_mut_ptr() as *mut v128, lo);
        v128_store(out.as_mut_ptr().add(4) as *mut v128, hi);
    }
    out
}
