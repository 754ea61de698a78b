//! WebAssembly `simd128` integer block sums for the quantized dots (the browser's CPU
//! fallback). Integer sums are exact in any order, so these give the portable kernel's bits.
//! Products widen u8/i8 to i16 and `i32x4_dot_i16x8` adds neighbouring pairs into i32 lanes.

use core::arch::wasm32::*;

/// Each byte shifted right by `n`, as `u8x16_shr` but by one 16-bit shift and a mask (the bits
/// that come down from the byte above are masked off: the same bytes). x86 has no 8-bit shift:
/// V8 lowers `u8x16_shr` to this pair itself, JavaScriptCore to five instructions (unpack both
/// halves, shift, pack) — the hottest lines of the Q4_1 kernel in WebKit's profile.
#[inline(always)]
fn shr8(v: v128, n: u32) -> v128 {
    v128_and(u16x8_shr(v, n), u8x16_splat(0xFF >> n))
}

/// Each byte shifted left by `n`, as `u8x16_shl` but by one 16-bit shift and a mask ([`shr8`]).
#[inline(always)]
fn shl8(v: v128, n: u32) -> v128 {
    v128_and(u16x8_shl(v, n), u8x16_splat(0xFF << n))
}

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
    let hi = shr8(q, 4);
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
    for r in rows {
        assert!(r.len() >= at + 2);
    }
    let p = |r: usize| rows[r][at..].as_ptr() as *const u16;
    // SAFETY: each row holds two bytes at `at` (asserted above); the loads are unaligned-safe
    // and fill the low halves of the u32 lanes, whose high halves stay zero.
    unsafe {
        let v = v128_load16_lane::<0>(u32x4_splat(0), p(0));
        let v = v128_load16_lane::<2>(v, p(1));
        let v = v128_load16_lane::<4>(v, p(2));
        v128_load16_lane::<6>(v, p(3))
    }
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

/// Entry `i` of each of four rows' arrays.
#[inline]
fn column<T: Copy, const N: usize>(rows: &[[T; N]; 4], i: usize) -> [T; 4] {
    [rows[0][i], rows[1][i], rows[2][i], rows[3][i]]
}

/// A Q5 block's fifth bits as bytes of 16 or 0, ready to OR onto the nibbles: element k of
/// the first 16 takes bit k mod 8 of `qh`'s byte k / 8, element k of the second 16 of byte
/// 2 + k / 8. One byte shuffle spreads each byte over its eight lanes.
#[inline]
fn fifth_bits(qh: [u8; 4]) -> (v128, v128) {
    let v = u32x4_splat(u32::from_le_bytes(qh));
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let spread = |idx: v128| {
        let b = v128_and(i8x16_swizzle(v, idx), bit);
        v128_and(i8x16_eq(b, bit), u8x16_splat(16))
    };
    (
        spread(u8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)),
        spread(u8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)),
    )
}

/// Blocks handled per pass of [`dot_rows4`]: each row's bytes for a pass are read in one run
/// (sixteen Q8_0 blocks are 544 bytes), then the four rows' sums are combined block by block.
/// Stepping through the four rows a block at a time read rows that were not in cache at less
/// than half the speed of cached ones (Gemma 3's 178 MB Q8_0 head: 45 ms, now 20 ms a token in
/// Chromium); runs of 136 bytes were as slow, of 340 and more as fast as one row at a time.
const PASS: usize = 16;

/// Super-blocks per pass of the K-quant kernels, for the same reason.
const K_PASS: usize = 2;

/// Four rows of Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 (`kind`'s block of `block_bytes`) dotted with
/// `a` at once: the activations' loads and widening serve four rows, the four block sums reduce
/// together, and the scales convert four at a time. Each lane does the scalar kernel's float
/// operations in its order (`sum += d·d_y·Σ + offset·s`; wasm has no fused multiply-add), so
/// the result is the scalar kernel's, bit for bit. Inlined into one loop per type, so the block
/// layout is known where it is used.
#[inline(always)]
pub(crate) fn dot_rows4(rows: [&[u8]; 4], a: &super::ActRow, block_bytes: usize, kind: Quad) -> [f32; 4] {
    let blocks = a.d.len();
    for r in &rows {
        assert!(r.len() >= blocks * block_bytes);
    }
    assert!(a.qs.len() >= blocks * 32 && a.s.len() >= blocks);
    let mut acc = f32x4_splat(0.0);
    let zero = i32x4_splat(0);
    for b0 in (0..blocks).step_by(PASS) {
        let n = PASS.min(blocks - b0);
        let mut ys = [[zero; 4]; PASS];
        for (i, y) in ys.iter_mut().enumerate().take(n) {
            *y = acts32(a, b0 + i);
        }
        let mut sums = [[zero; PASS]; 4];
        for (row, sums) in rows.iter().zip(&mut sums) {
            for (i, (sum, ys)) in sums.iter_mut().zip(&ys).enumerate().take(n) {
                let at = (b0 + i) * block_bytes;
                // SAFETY: every row holds `blocks` blocks (asserted above); a block's quants
                // end within it.
                let load = |off: usize| unsafe { v128_load(row.as_ptr().add(at + off) as *const v128) };
                let (w0, w1) = match kind {
                    Quad::Q8_0 => (load(2), load(18)),
                    Quad::Q4_0 | Quad::Q4_1 => {
                        let q = load(if kind == Quad::Q4_1 { 4 } else { 2 });
                        (v128_and(q, u8x16_splat(0x0F)), shr8(q, 4))
                    }
                    Quad::Q5_0 | Quad::Q5_1 => {
                        let qs_at = if kind == Quad::Q5_1 { 8 } else { 6 };
                        let q = load(qs_at);
                        let h = &row[at + qs_at - 4..at + qs_at];
                        let (f0, f1) = fifth_bits([h[0], h[1], h[2], h[3]]);
                        (v128_or(v128_and(q, u8x16_splat(0x0F)), f0), v128_or(shr8(q, 4), f1))
                    }
                };
                *sum = dot32(w0, w1, ys, kind != Quad::Q8_0);
            }
        }
        for i in 0..n {
            let b = b0 + i;
            let at = b * block_bytes;
            let sumi = f32x4_convert_i32x4(hsum4(column(&sums, i)));
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
    }
    lanes(acc)
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

/// The widened activations of super-blocks `sb0 .. sb0 + n` (n ≤ [`K_PASS`]), block by block.
#[inline]
fn pass_acts(a: &super::ActRow, sb0: usize, n: usize) -> [[v128; 4]; 8 * K_PASS] {
    let mut ys = [[i32x4_splat(0); 4]; 8 * K_PASS];
    for (b, y) in ys.iter_mut().enumerate().take(8 * n) {
        *y = acts32(a, sb0 * 8 + b);
    }
    ys
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
    let block = |row: &[u8], at: usize, j: usize, ys: &[v128; 4]| {
        let nibbles = |w: v128, h: usize| {
            let n = if j.is_multiple_of(2) {
                v128_and(w, u8x16_splat(0x0F))
            } else {
                shr8(w, 4)
            };
            if !FIVE {
                return n;
            }
            let fifth = v128_and(shr8(load16(row, at + 16 + h), j as u32), u8x16_splat(1));
            v128_or(n, shl8(fifth, 4))
        };
        let q = at + qs_at + 32 * (j / 2);
        dot32(nibbles(load16(row, q), 0), nibbles(load16(row, q + 16), 16), ys, true)
    };
    k_passes(&rows, a, bytes, i32x4_splat(0), block, |sb, at, sums| {
        let (d, dmin) = (f16x4_to_f32(u16x4(&rows, at)), f16x4_to_f32(u16x4(&rows, at + 2)));
        let sm = rows.map(|r| {
            let scales = &r[at + 4..at + 16];
            core::array::from_fn::<(u8, u8), 8, _>(|j| scale_min(j, scales))
        });
        for (j, sums) in sums.into_iter().enumerate() {
            let b = sb * 8 + j;
            let sumi = f32x4_convert_i32x4(hsum4(sums));
            let sm_j = sm.map(|r| r[j]);
            let sc = f32x4_convert_i32x4(i32x4(
                sm_j[0].0.into(),
                sm_j[1].0.into(),
                sm_j[2].0.into(),
                sm_j[3].0.into(),
            ));
            let m = f32x4_convert_i32x4(i32x4(
                sm_j[0].1.into(),
                sm_j[1].1.into(),
                sm_j[2].1.into(),
                sm_j[3].1.into(),
            ));
            let plus = f32x4_mul(f32x4_mul(f32x4_mul(d, sc), f32x4_splat(a.d[b])), sumi);
            let minus = f32x4_mul(f32x4_mul(dmin, m), f32x4_splat(a.s[b]));
            acc = f32x4_add(acc, f32x4_sub(plus, minus));
        }
    });
    lanes(acc)
}

/// The K-quant kernels' shared course: super-blocks (`bytes` each) in passes of [`K_PASS`];
/// in a pass, `block(row, at, j, ys)` gives each row's integer value for block `j` of the
/// super-block at byte `at` (ys: the block's widened activations), a row at a time (see
/// `PASS`); then `fold(sb, at, values)` takes super-block `sb`'s eight blocks, the four rows'
/// values of each, in block order (where the float part goes, in the scalar kernel's order).
#[inline(always)]
fn k_passes<T: Copy>(
    rows: &[&[u8]; 4],
    a: &super::ActRow,
    bytes: usize,
    zero: T,
    block: impl Fn(&[u8], usize, usize, &[v128; 4]) -> T,
    mut fold: impl FnMut(usize, usize, [[T; 4]; 8]),
) {
    let supers = a.d.len() / 8;
    for sb0 in (0..supers).step_by(K_PASS) {
        let n = K_PASS.min(supers - sb0);
        let ys = pass_acts(a, sb0, n);
        let mut values = [[zero; 8 * K_PASS]; 4];
        for (row, values) in rows.iter().zip(&mut values) {
            for (i, v) in values.iter_mut().enumerate().take(8 * n) {
                *v = block(row, (sb0 + i / 8) * bytes, i % 8, &ys[i]);
            }
        }
        for s in 0..n {
            let sb = sb0 + s;
            fold(sb, sb * bytes, core::array::from_fn(|j| column(&values, 8 * s + j)));
        }
    }
}

/// Σ over 16 signed bytes `w` times the widened activations `lo`, `hi` (one 16-value half),
/// as i32x4 partial sums.
#[inline]
fn half16x4(w: v128, lo: v128, hi: v128) -> v128 {
    i32x4_add(
        i32x4_dot_i16x8(i16x8_extend_low_i8x16(w), lo),
        i32x4_dot_i16x8(i16x8_extend_high_i8x16(w), hi),
    )
}

/// [`half16x4`]'s sum.
#[inline]
fn half16(w: v128, lo: v128, hi: v128) -> i32 {
    hsum(half16x4(w, lo, hi))
}

/// Four Q3_K rows against Q8_K-rounded activations, in `dot::dot_q3_k`'s order: the 3-bit
/// values less 4 as signed bytes, each half's integer sum times its scale, `sum += d·d_y·Σ`.
pub(crate) fn dot_rows4_q3_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::{Q3_K_BYTES, q3_scales};
    let mut acc = f32x4_splat(0.0);
    // Each block's two halves' sums (i32x4 partials), scaled once the super-block's scales are out.
    let block = |row: &[u8], at: usize, k: usize, ys: &[v128; 4]| {
        let (part, j) = (k / 4, k as u32 % 4);
        let three = |l: usize| {
            let q = v128_and(shr8(load16(row, at + 32 + 32 * part + l), 2 * j), u8x16_splat(3));
            let h = v128_and(shr8(load16(row, at + l), k as u32), u8x16_splat(1));
            i8x16_sub(v128_or(q, shl8(h, 2)), i8x16_splat(4))
        };
        [half16x4(three(0), ys[0], ys[1]), half16x4(three(16), ys[2], ys[3])]
    };
    k_passes(&rows, a, Q3_K_BYTES, [i32x4_splat(0); 2], block, |sb, at, halves| {
        let d = f16x4_to_f32(u16x4(&rows, at + 108));
        let scales = rows.map(|r| q3_scales(&r[at + 96..at + 108]));
        for (k, halves) in halves.into_iter().enumerate() {
            let sums = core::array::from_fn(|r| {
                let (h, sc) = (halves[r], &scales[r]);
                i32x4_add(
                    i32x4_mul(h[0], i32x4_splat(sc[2 * k])),
                    i32x4_mul(h[1], i32x4_splat(sc[2 * k + 1])),
                )
            });
            let sumi = f32x4_convert_i32x4(hsum4(sums));
            acc = f32x4_add(acc, f32x4_mul(f32x4_mul(d, f32x4_splat(a.d[sb * 8 + k])), sumi));
        }
    });
    lanes(acc)
}

/// Four Q2_K rows against Q8_K-rounded activations, in `dot::dot_q2_k`'s order: per half the
/// 2-bit values' sum times its scale and the activations' sum times its min,
/// `sum += d·d_y·Σ − dmin·d_y·Σm`.
pub(crate) fn dot_rows4_q2_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::Q2_K_BYTES;
    let mut acc = f32x4_splat(0.0);
    // Each block's scaled 2-bit sums (i32x4 partials) and its two scale bytes (the mins).
    let block = |row: &[u8], at: usize, k: usize, ys: &[v128; 4]| {
        let (part, j) = (k / 4, k as u32 % 4);
        let two = |l: usize| v128_and(shr8(load16(row, at + 16 + 32 * part + l), 2 * j), u8x16_splat(3));
        let (sc0, sc1) = (row[at + 2 * k], row[at + 2 * k + 1]);
        let qy = i32x4_add(
            i32x4_mul(half16x4(two(0), ys[0], ys[1]), i32x4_splat((sc0 & 0xF) as i32)),
            i32x4_mul(half16x4(two(16), ys[2], ys[3]), i32x4_splat((sc1 & 0xF) as i32)),
        );
        (qy, [sc0 >> 4, sc1 >> 4])
    };
    let ones = i8x16_splat(1);
    k_passes(
        &rows,
        a,
        Q2_K_BYTES,
        (i32x4_splat(0), [0; 2]),
        block,
        |sb, at, values| {
            let (d, dmin) = (f16x4_to_f32(u16x4(&rows, at + 80)), f16x4_to_f32(u16x4(&rows, at + 82)));
            for (k, v) in values.into_iter().enumerate() {
                let b = sb * 8 + k;
                let ys = acts32(a, b);
                let sy = [half16(ones, ys[0], ys[1]), half16(ones, ys[2], ys[3])];
                let my = v.map(|(_, m)| m[0] as i32 * sy[0] + m[1] as i32 * sy[1]);
                let q = f32x4_convert_i32x4(hsum4(v.map(|(qy, _)| qy)));
                let m = f32x4_convert_i32x4(i32x4(my[0], my[1], my[2], my[3]));
                let ad = f32x4_splat(a.d[b]);
                let plus = f32x4_mul(f32x4_mul(d, ad), q);
                let minus = f32x4_mul(f32x4_mul(dmin, ad), m);
                acc = f32x4_add(acc, f32x4_sub(plus, minus));
            }
        },
    );
    lanes(acc)
}

/// Four Q6_K rows against Q8_K-rounded activations, in `dot::dot_q6_k`'s order: the six-bit
/// values less 32 as signed bytes, each 16-value half's integer sum times its i8 scale, then
/// `sum += d·d_y·Σ`.
pub(crate) fn dot_rows4_q6_k(rows: [&[u8]; 4], a: &super::ActRow) -> [f32; 4] {
    use super::kquants::Q6_K_BYTES;
    let mut acc = f32x4_splat(0.0);
    // Each block's two scaled halves as i32x4 partial sums.
    let block = |row: &[u8], at: usize, b: usize, ys: &[v128; 4]| {
        let (h, k) = (b / 4, b % 4);
        let lo = at + 64 * h + 32 * (k % 2);
        let hi = at + 128 + 32 * h;
        let six = |l: usize| {
            let q = load16(row, lo + l);
            let nib = if k < 2 {
                v128_and(q, u8x16_splat(0x0F))
            } else {
                shr8(q, 4)
            };
            let top = shl8(v128_and(shr8(load16(row, hi + l), 2 * k as u32), u8x16_splat(3)), 4);
            i8x16_sub(v128_or(nib, top), i8x16_splat(32))
        };
        let sc = &row[at + 192 + 2 * b..at + 194 + 2 * b];
        i32x4_add(
            i32x4_mul(half16x4(six(0), ys[0], ys[1]), i32x4_splat((sc[0] as i8) as i32)),
            i32x4_mul(half16x4(six(16), ys[2], ys[3]), i32x4_splat((sc[1] as i8) as i32)),
        )
    };
    k_passes(&rows, a, Q6_K_BYTES, i32x4_splat(0), block, |sb, at, sums| {
        let d = f16x4_to_f32(u16x4(&rows, at + 208));
        for (b, sums) in sums.into_iter().enumerate() {
            let sumi = f32x4_convert_i32x4(hsum4(sums));
            acc = f32x4_add(acc, f32x4_mul(f32x4_mul(d, f32x4_splat(a.d[sb * 8 + b])), sumi));
        }
    });
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
