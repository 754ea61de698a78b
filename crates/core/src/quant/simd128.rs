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

/// The block types [`dot_rows4`] handles.
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
