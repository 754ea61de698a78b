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
