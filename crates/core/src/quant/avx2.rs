//! AVX2 + FMA + F16C kernels (every x86_64 CPU since 2013), chosen at run time so one binary runs
//! everywhere. Integer products use `maddubs` (u8 × i8 → i16 pairs) as ggml's AVX2 path does.

use super::GgmlType;
use super::acts::ActRow;
use super::blocks::QK;
use super::kquants as kq;
use std::arch::x86_64::*;

pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C; `w` must hold `out.len()` rows of `row_bytes`, and
/// `a` must be a row of `row_bytes`' worth of columns for `ty` (checked by the caller).
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn dot_rows(ty: GgmlType, w: &[u8], row_bytes: usize, a: ActRow, out: &mut [f32]) {
    let cols = a.x.len();
    let nb = cols / QK;
    // Q8_0 and the Q4/Q5 types four rows at a time (see `rows4`), the rest one by one.
    let rows4: Option<Rows4> = match ty {
        GgmlType::Q8_0 => Some(rows4::<Q8>),
        GgmlType::Q4_0 => Some(rows4::<Q4_0>),
        GgmlType::Q4_1 => Some(rows4::<Q4_1>),
        GgmlType::Q5_0 => Some(rows4::<Q5_0>),
        GgmlType::Q5_1 => Some(rows4::<Q5_1>),
        _ => None,
    };
    let fours = if rows4.is_some() { out.len() / 4 * 4 } else { 0 };
    if let Some(dot4) = rows4 {
        for (g, o) in out[..fours].chunks_exact_mut(4).enumerate() {
            // SAFETY: rows 4g..4g+4 lie inside w (checked by the caller).
            let rows = std::array::from_fn(|k| unsafe { w.as_ptr().add((4 * g + k) * row_bytes) });
            o.copy_from_slice(&unsafe { dot4(rows, nb, &a) });
        }
    }
    for (r, o) in out.iter_mut().enumerate().skip(fours) {
        // SAFETY: row r lies inside w (caller checked w.len() >= out.len() * row_bytes).
        let row = unsafe { w.as_ptr().add(r * row_bytes) };
        // Row r as a slice of super-blocks of `bytes` each (nb / 8 of them).
        let k_row = |bytes: usize| &w[r * row_bytes..r * row_bytes + nb / 8 * bytes];
        *o = unsafe {
            match ty {
                GgmlType::F32 => dot_f32(row, a.x),
                GgmlType::F16 => dot_f16(row, a.x),
                GgmlType::BF16 => dot_bf16(row, a.x),
                GgmlType::Q8_0 => dot_q8_0(row, nb, a),
                GgmlType::Q4_0 => dot_q4::<false, false>(row, nb, a),
                GgmlType::Q4_1 => dot_q4::<true, false>(row, nb, a),
                // The portable kernel (auto-vectorized under this function's target features).
                GgmlType::Q5_0 => dot_q4::<false, true>(row, nb, a),
                GgmlType::Q5_1 => dot_q4::<true, true>(row, nb, a),
                GgmlType::Q4_K => dot_q4_k(row, nb, a),
                // The portable kernels (auto-vectorized under this function's target features).
                GgmlType::Q5_K => super::dot::dot_q5_k(k_row(kq::Q5_K_BYTES), a),
                GgmlType::Q3_K => super::dot::dot_q3_k(k_row(kq::Q3_K_BYTES), a),
                GgmlType::Q2_K => super::dot::dot_q2_k(k_row(kq::Q2_K_BYTES), a),
                GgmlType::Q6_K => dot_q6_k(row, nb, a),
                _ => unreachable!("checked by quant::dot_rows"),
            }
        };
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn f16_at(p: *const u8) -> f32 {
    let bits = unsafe { (p as *const u16).read_unaligned() };
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
}

/// Σ of eight i32 lanes (exact).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn hsum_i32(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
    _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01)))
}

/// A block's 16 nibble bytes as 32 unsigned values (low nibbles = elements 0..16).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn nibbles(qs: *const u8) -> __m256i {
    let raw = unsafe { _mm_loadu_si128(qs as *const __m128i) };
    let mask = _mm_set1_epi8(0x0F);
    let lo = _mm_and_si128(raw, mask);
    let hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);
    _mm256_set_m128i(hi, lo)
}

/// Bit `i` of a Q5 block's `qh` as 16 in byte `i` (ggml's `bytes_from_bits_32`: broadcast,
/// shuffle each byte of `qh` to its eight lanes, and test one bit per lane).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn fifth_bits(qh: u32) -> __m256i {
    let shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    let spread = _mm256_shuffle_epi8(_mm256_set1_epi32(qh as i32), shuf);
    let bits = _mm256_cmpeq_epi8(
        _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),
        _mm256_set1_epi64x(-1),
    );
    _mm256_and_si256(bits, _mm256_set1_epi8(0x10))
}

// The quantized dots compute each block's integer sum with AVX2 and then do the float part in
// exactly the portable kernel's order and operations (no FMA), so the CLI on x86_64 and the
// browser's wasm fallback produce bit-identical logits, hence the same greedy text.

/// Q4_0, Q4_1 and (`FIVE`) Q5_0, Q5_1: see `quant::dot::dot_q4` for the algebra.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_q4<const HAS_MIN: bool, const FIVE: bool>(row: *const u8, nb: usize, a: ActRow) -> f32 {
    let qs_at = 2 + 2 * HAS_MIN as usize + 4 * FIVE as usize;
    let zero = if FIVE { 16.0 } else { 8.0 };
    let mut sum = 0f32;
    let y = a.qs.as_ptr();
    for b in 0..nb {
        unsafe {
            let blk = row.add(b * (qs_at + 16));
            let d = f16_at(blk);
            let yv = _mm256_loadu_si256(y.add(b * QK) as *const __m256i);
            let sumi = hsum_i32(bytes_dot(q4_values::<FIVE>(blk, qs_at), yv));
            let offset = if HAS_MIN { f16_at(blk.add(2)) } else { -zero * d };
            sum += d * *a.d.get_unchecked(b) * sumi as f32 + offset * *a.s.get_unchecked(b);
        }
    }
    sum
}

/// A Q8_0 block (at `blk`) times the activations `yv`, summed four products to each 32-bit
/// lane. maddubs wants unsigned × signed: |x| × (y with x's sign).
///
/// # Safety
/// `blk` points at a whole Q8_0 block.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q8_lanes(blk: *const u8, yv: __m256i) -> __m256i {
    let x = unsafe { _mm256_loadu_si256(blk.add(2) as *const __m256i) };
    let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(yv, x));
    _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
}

/// A Q4 block's 32 values as bytes 0..15 (with `FIVE`, a Q5 block's as 0..31: the `qh` word
/// just before the nibbles adds 16).
///
/// # Safety
/// `blk` points at a whole block whose nibbles start at `qs_at`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q4_values<const FIVE: bool>(blk: *const u8, qs_at: usize) -> __m256i {
    let q = unsafe { nibbles(blk.add(qs_at)) };
    if !FIVE {
        return q;
    }
    let qh = unsafe { u32::from_le((blk.add(qs_at - 4) as *const u32).read_unaligned()) };
    _mm256_or_si256(q, fifth_bits(qh))
}

/// A four-row kernel: the rows' starts, their blocks, the activations.
type Rows4 = unsafe fn([*const u8; 4], usize, &ActRow) -> [f32; 4];

/// [`rows4`]'s block layouts.
const Q8: u8 = 0;
const Q4_0: u8 = 1;
const Q4_1: u8 = 2;
const Q5_0: u8 = 3;
const Q5_1: u8 = 4;

/// Blocks per pass of [`rows4`]: each row's bytes for a pass are read in one run (stepping
/// through four rows a block at a time reads rows that are not in cache slowly; see simd128.rs).
const PASS: usize = 16;

/// Four rows of Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 (`KIND`) dotted with `a`: each row's integer
/// block sums for a pass of blocks, then the float part with the four rows in the four lanes,
/// each lane in the one-row kernels' order and operations (`sum += d·d_y·Σ + offset·s`, no
/// FMA), so the same bits as they give; four independent sums instead of one serial chain.
///
/// # Safety
/// As [`dot_rows`]: each row holds `nb` blocks of the type; `a` has `nb` blocks.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn rows4<const KIND: u8>(rows: [*const u8; 4], nb: usize, a: &ActRow) -> [f32; 4] {
    let (block, qs_at) = match KIND {
        Q8 => (34, 2),
        Q4_0 => (18, 2),
        Q4_1 => (20, 4),
        Q5_0 => (22, 6),
        _ => (24, 8),
    };
    let y = a.qs.as_ptr();
    let mut acc = _mm_setzero_ps();
    let mut sums = [[_mm256_setzero_si256(); PASS]; 4];
    for b0 in (0..nb).step_by(PASS) {
        let n = PASS.min(nb - b0);
        for (row, sums) in rows.iter().zip(&mut sums) {
            for (i, sum) in sums.iter_mut().enumerate().take(n) {
                let b = b0 + i;
                unsafe {
                    let blk = row.add(b * block);
                    let yv = _mm256_loadu_si256(y.add(b * QK) as *const __m256i);
                    *sum = match KIND {
                        Q8 => q8_lanes(blk, yv),
                        Q5_0 | Q5_1 => bytes_dot(q4_values::<true>(blk, qs_at), yv),
                        _ => bytes_dot(q4_values::<false>(blk, qs_at), yv),
                    };
                }
            }
        }
        for i in 0..n {
            let b = b0 + i;
            let sumi = row_sums(&sums, i);
            let half = |at: usize| unsafe {
                let h = |r: usize| (rows[r].add(b * block + at) as *const u16).read_unaligned() as i16;
                _mm_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), 0, 0, 0, 0))
            };
            let d = half(0);
            let (ad, s) = unsafe { (_mm_set1_ps(*a.d.get_unchecked(b)), _mm_set1_ps(*a.s.get_unchecked(b))) };
            let term = _mm_mul_ps(_mm_mul_ps(d, ad), _mm_cvtepi32_ps(sumi));
            let term = match KIND {
                Q8 => term,
                Q4_0 => _mm_add_ps(term, _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(-8.0), d), s)),
                Q5_0 => _mm_add_ps(term, _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(-16.0), d), s)),
                _ => _mm_add_ps(term, _mm_mul_ps(half(2), s)),
            };
            acc = _mm_add_ps(acc, term);
        }
    }
    let mut out = [0f32; 4];
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), acc) };
    out
}

/// Block `i`'s eight-lane sums of the four rows reduced to one lane each (exact in integers).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn row_sums(sums: &[[__m256i; PASS]; 4], i: usize) -> __m128i {
    let h = _mm256_hadd_epi32(
        _mm256_hadd_epi32(sums[0][i], sums[1][i]),
        _mm256_hadd_epi32(sums[2][i], sums[3][i]),
    );
    _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1))
}

/// `q` (32 unsigned bytes < 128) times `y`, summed four bytes to each 32-bit lane (exact:
/// maddubs pairs stay within i16).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bytes_dot(q: __m256i, y: __m256i) -> __m256i {
    _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), _mm256_set1_epi16(1))
}

/// Q4_K: see `quant::dot::dot_q4_k` (the float part in its order). Each 32 quant bytes hold two
/// sub-blocks: their low nibbles, then their high ones.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_q4_k(row: *const u8, nb: usize, a: ActRow) -> f32 {
    use super::kquants::{Q4_K_BYTES, scale_min};
    let mut sum = 0f32;
    let y = a.qs.as_ptr();
    let mask = _mm256_set1_epi8(0x0F);
    for sb in 0..nb / 8 {
        unsafe {
            let blk = row.add(sb * Q4_K_BYTES);
            let (d, dmin) = (f16_at(blk), f16_at(blk.add(2)));
            let scales = std::slice::from_raw_parts(blk.add(4), 12);
            for k in 0..4 {
                let raw = _mm256_loadu_si256(blk.add(16 + 32 * k) as *const __m256i);
                let halves = [
                    _mm256_and_si256(raw, mask),
                    _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask),
                ];
                for (h, q) in halves.into_iter().enumerate() {
                    let (j, b) = (2 * k + h, sb * 8 + 2 * k + h);
                    let yv = _mm256_loadu_si256(y.add(b * QK) as *const __m256i);
                    let sumi = hsum_i32(bytes_dot(q, yv));
                    let (sc, m) = scale_min(j, scales);
                    sum +=
                        d * sc as f32 * *a.d.get_unchecked(b) * sumi as f32 - dmin * m as f32 * *a.s.get_unchecked(b);
                }
            }
        }
    }
    sum
}

/// Q6_K: see `quant::dot::dot_q6_k`. The six-bit values (nibble | two high bits << 4) are
/// unsigned, so `Σ (q − 32)·y = Σ q·y − 32 Σ y`, each half (16 values, its own scale) summed from
/// its own 128 bits.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_q6_k(row: *const u8, nb: usize, a: ActRow) -> f32 {
    use super::kquants::Q6_K_BYTES;
    let mut sum = 0f32;
    let y = a.qs.as_ptr();
    let (mask, three, k32) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(3), _mm256_set1_epi8(32));
    let half_sums = |v: __m256i| -> [i32; 2] {
        let lo = _mm256_castsi256_si128(v);
        let hi = _mm256_extracti128_si256(v, 1);
        let h = |x: __m128i| {
            let x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0b01_00_11_10));
            _mm_cvtsi128_si32(_mm_add_epi32(x, _mm_shuffle_epi32(x, 0b10_11_00_01)))
        };
        [h(lo), h(hi)]
    };
    for sb in 0..nb / 8 {
        unsafe {
            let blk = row.add(sb * Q6_K_BYTES);
            let d = f16_at(blk.add(208));
            for h in 0..2 {
                let ql = blk.add(64 * h);
                let qh = _mm256_loadu_si256(blk.add(128 + 32 * h) as *const __m256i);
                let sc = blk.add(192 + 8 * h) as *const i8;
                let ql_lo = _mm256_loadu_si256(ql as *const __m256i);
                let ql_hi = _mm256_loadu_si256(ql.add(32) as *const __m256i);
                for k in 0..4 {
                    let b = sb * 8 + 4 * h + k;
                    let src = if k % 2 == 0 { ql_lo } else { ql_hi };
                    let nib = if k < 2 {
                        _mm256_and_si256(src, mask)
                    } else {
                        _mm256_and_si256(_mm256_srli_epi16(src, 4), mask)
                    };
                    let high = match k {
                        0 => _mm256_and_si256(qh, three),
                        1 => _mm256_and_si256(_mm256_srli_epi16(qh, 2), three),
                        2 => _mm256_and_si256(_mm256_srli_epi16(qh, 4), three),
                        _ => _mm256_and_si256(_mm256_srli_epi16(qh, 6), three),
                    };
                    let q = _mm256_or_si256(nib, _mm256_slli_epi16(high, 4));
                    let yv = _mm256_loadu_si256(y.add(b * QK) as *const __m256i);
                    let s = _mm256_sub_epi32(bytes_dot(q, yv), bytes_dot(k32, yv));
                    let [s0, s1] = half_sums(s);
                    let sumi = s0 * *sc.add(2 * k) as i32 + s1 * *sc.add(2 * k + 1) as i32;
                    sum += d * *a.d.get_unchecked(b) * sumi as f32;
                }
            }
        }
    }
    sum
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_q8_0(row: *const u8, nb: usize, a: ActRow) -> f32 {
    let mut sum = 0f32;
    let y = a.qs.as_ptr();
    for b in 0..nb {
        unsafe {
            let blk = row.add(b * 34);
            let yv = _mm256_loadu_si256(y.add(b * QK) as *const __m256i);
            let sumi = hsum_i32(q8_lanes(blk, yv));
            sum += f16_at(blk) * *a.d.get_unchecked(b) * sumi as f32;
        }
    }
    sum
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_float(row: *const u8, x: &[f32], bytes_per: usize, load8: impl Fn(*const u8) -> __m256) -> f32 {
    let n8 = x.len() / 8 * 8;
    let mut acc = [_mm256_setzero_ps(); 2];
    let mut i = 0;
    while i < n8 {
        unsafe {
            let wv = load8(row.add(i * bytes_per));
            let xv = _mm256_loadu_ps(x.as_ptr().add(i));
            acc[(i / 8) & 1] = _mm256_fmadd_ps(wv, xv, acc[(i / 8) & 1]);
        }
        i += 8;
    }
    let mut sum = hsum(_mm256_add_ps(acc[0], acc[1]));
    for (j, xv) in x.iter().enumerate().skip(n8) {
        let mut tail = [0f32; 8];
        // Tail elements go through the same loader on a zero-padded copy.
        let mut bytes = [0u8; 32];
        unsafe { std::ptr::copy_nonoverlapping(row.add(j * bytes_per), bytes.as_mut_ptr(), bytes_per) };
        unsafe { _mm256_storeu_ps(tail.as_mut_ptr(), load8(bytes.as_ptr())) };
        sum += tail[0] * xv;
    }
    sum
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f32(row: *const u8, x: &[f32]) -> f32 {
    unsafe { dot_float(row, x, 4, |p| _mm256_loadu_ps(p as *const f32)) }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_f16(row: *const u8, x: &[f32]) -> f32 {
    unsafe { dot_float(row, x, 2, |p| _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))) }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot_bf16(row: *const u8, x: &[f32]) -> f32 {
    unsafe {
        dot_float(row, x, 2, |p| {
            let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
            _mm256_castsi256_ps(_mm256_slli_epi32(h, 16))
        })
    }
}
