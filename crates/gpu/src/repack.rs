//! GGUF blocks → GPU words, once at load. WGSL reads 32-bit words, and Q8_0's 34-byte and Q4_0's
//! 18-byte blocks straddle them, so every quantized tensor is split into a quant region (whole
//! words per block) followed by a scale region (f16 scales packed two to a word; Q4_1's and
//! Q5_1's `d` and `m` share one); Q5 types put their fifth bits (`qh`, a word per block) in a
//! region of their own between the two. The bytes read per token stay the GGUF's: nothing is widened (only a last
//! partial row group is padded).
//!
//! Rows are interleaved in groups of `group` (the matvec shape's rows per invocation): unit `u`
//! (a block of 32, or 4 values of a float row) of rows `g·group .. g·group + group` lie side by
//! side, so the invocation that owns those rows reads one sequential stream of 16-byte words
//! instead of `group` streams. On CPU adapters that pattern is what streams fastest (lavapipe,
//! examples/stream_patterns.rs and the probe: per-invocation runs 11–12.8 GB/s, lanes interleaved
//! 7.5 GB/s); on GPUs the lanes that share a row group read neighbouring tiles, which coalesces.

use tokscope_core::quant::{GgmlType, QK, UnsupportedType};

/// A weight in GPU layout: `words[..scales_at]` quants (or plain values), `words[scales_at..]`
/// scales, both in tile order (see [`tile`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub group: usize,
    pub words: Vec<u32>,
    pub scales_at: usize,
    /// Q5_0/Q5_1: where the `qh` words begin (0 for other types).
    pub qh_at: usize,
}

impl Packed {
    pub fn n_bytes(&self) -> u64 {
        self.words.len() as u64 * 4
    }
}

/// The tile index of `unit` of `row`: rows interleaved in groups of `group`, `units` per row.
pub fn tile(row: usize, unit: usize, units: usize, group: usize) -> usize {
    ((row / group) * units + unit) * group + row % group
}

fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn f16_bits(b: &[u8], at: usize) -> u32 {
    u16::from_le_bytes([b[at], b[at + 1]]) as u32
}

/// Packs f16 scales two to a word, block `i` in half `i % 2` of word `i / 2`.
fn pack_halves(halves: &[u32]) -> Vec<u32> {
    halves
        .chunks(2)
        .map(|p| p[0] | (p.get(1).copied().unwrap_or(0) << 16))
        .collect()
}

/// Repacks `rows` × `cols` of `ty` from GGUF bytes, rows interleaved in groups of `group` (a
/// power of two ≤ 8). `cols` must be a multiple of 4 (of 32 for quantized types, which their block
/// size already guarantees).
pub fn repack(ty: GgmlType, rows: usize, cols: usize, bytes: &[u8], group: usize) -> Result<Packed, UnsupportedType> {
    assert_eq!(
        Some(bytes.len() as u64),
        ty.bytes_for((rows * cols) as u64),
        "byte count of {ty}"
    );
    assert!(cols.is_multiple_of(4), "GPU kernels read rows four values at a time");
    assert!(group.is_power_of_two() && group <= 8, "row group {group}");
    let padded_rows = rows.next_multiple_of(group);
    // Places `per_unit` items of every unit (row-major in `items`) at their tile.
    let place = |items: Vec<u32>, per_unit: usize, units: usize| -> Vec<u32> {
        let mut out = vec![0u32; padded_rows * units * per_unit];
        for (i, chunk) in items.chunks_exact(per_unit).enumerate() {
            let at = tile(i / units, i % units, units, group) * per_unit;
            out[at..at + per_unit].copy_from_slice(chunk);
        }
        out
    };
    let mut qh_at = 0;
    let (words, scales_at) = match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => {
            let per_unit = if ty == GgmlType::F32 { 4 } else { 2 };
            let words = place(bytes.chunks_exact(4).map(word).collect(), per_unit, cols / 4);
            let n = words.len();
            (words, n)
        }
        GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 => {
            // Block bytes, where its quants start, where its qh word is (Q5), and whether it
            // has a min beside its scale.
            let (block, qs_at, qh, has_min) = match ty {
                GgmlType::Q8_0 => (34, 2, None, false),
                GgmlType::Q4_0 => (18, 2, None, false),
                GgmlType::Q4_1 => (20, 4, None, true),
                GgmlType::Q5_0 => (22, 6, Some(2), false),
                _ => (24, 8, Some(4), true),
            };
            let qs_words = (block - qs_at) / 4;
            let mut qs = Vec::with_capacity(bytes.len() / block * qs_words);
            let mut qhs = Vec::new();
            let mut scales = Vec::with_capacity(bytes.len() / block);
            for blk in bytes.chunks_exact(block) {
                scales.push(if has_min {
                    f16_bits(blk, 0) | (f16_bits(blk, 2) << 16)
                } else {
                    f16_bits(blk, 0)
                });
                if let Some(at) = qh {
                    qhs.push(word(&blk[at..]));
                }
                qs.extend(blk[qs_at..].chunks_exact(4).map(word));
            }
            let units = cols / QK;
            let mut words = place(qs, qs_words, units);
            if qh.is_some() {
                qh_at = words.len();
                words.extend(place(qhs, 1, units));
            }
            let at = words.len();
            let scales = place(scales, 1, units);
            if has_min {
                words.extend(scales);
            } else {
                words.extend(pack_halves(&scales));
            }
            (words, at)
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            // Per super-block: 8 vec4 of nibbles (Q5_K: then 2 of fifth bits), then (region 2)
            // d|dmin and the 12 scale bytes.
            let five = ty == GgmlType::Q5_K;
            let (block, per) = if five { (176, 40) } else { (144, 32) };
            let mut qs = Vec::with_capacity(bytes.len() / block * per);
            let mut sc = Vec::with_capacity(bytes.len() / block * 4);
            for blk in bytes.chunks_exact(block) {
                sc.push(f16_bits(blk, 0) | (f16_bits(blk, 2) << 16));
                sc.extend(blk[4..16].chunks_exact(4).map(word));
                let (qh, q) = if five {
                    blk[16..].split_at(32)
                } else {
                    blk[16..].split_at(0)
                };
                qs.extend(q.chunks_exact(4).map(word));
                qs.extend(qh.chunks_exact(4).map(word));
            }
            let units = cols / 256;
            let mut words = place(qs, per, units);
            let at = words.len();
            words.extend(place(sc, 4, units));
            (words, at)
        }
        GgmlType::Q6_K => {
            // Per super-block: ql, qh and the 16 scale bytes (13 vec4), then (region 2) d, two
            // halves a word.
            let mut qs = Vec::with_capacity(bytes.len() / 210 * 52);
            let mut ds = Vec::with_capacity(bytes.len() / 210);
            for blk in bytes.chunks_exact(210) {
                qs.extend(blk[..208].chunks_exact(4).map(word));
                ds.push(f16_bits(blk, 208));
            }
            let units = cols / 256;
            let mut words = place(qs, 52, units);
            let at = words.len();
            words.extend(pack_halves(&place(ds, 1, units)));
            (words, at)
        }
        GgmlType::Q2_K => {
            // Per super-block: the 2-bit quants and the 16 scale|min bytes (5 vec4), then
            // (region 2) d|dmin, one word a unit.
            let mut qs = Vec::with_capacity(bytes.len() / 84 * 20);
            let mut dm = Vec::with_capacity(bytes.len() / 84);
            for blk in bytes.chunks_exact(84) {
                qs.extend(blk[16..80].chunks_exact(4).map(word));
                qs.extend(blk[..16].chunks_exact(4).map(word));
                dm.push(f16_bits(blk, 80) | (f16_bits(blk, 82) << 16));
            }
            let units = cols / 256;
            let mut words = place(qs, 20, units);
            let at = words.len();
            words.extend(place(dm, 1, units));
            (words, at)
        }
        GgmlType::Q3_K => {
            // Per super-block: hmask and qs (6 vec4); then (region 2) the 12 scale bytes, 3
            // words a unit; then every unit's d, two halves a word (matvec.wgsl finds that
            // region from the tile count).
            let mut qs = Vec::with_capacity(bytes.len() / 110 * 24);
            let mut sc = Vec::with_capacity(bytes.len() / 110 * 3);
            let mut ds = Vec::with_capacity(bytes.len() / 110);
            for blk in bytes.chunks_exact(110) {
                qs.extend(blk[..96].chunks_exact(4).map(word));
                sc.extend(blk[96..108].chunks_exact(4).map(word));
                ds.push(f16_bits(blk, 108));
            }
            let units = cols / 256;
            let mut words = place(qs, 24, units);
            let at = words.len();
            words.extend(place(sc, 3, units));
            words.extend(pack_halves(&place(ds, 1, units)));
            (words, at)
        }
        other => return Err(UnsupportedType(other, "uploaded to the GPU")),
    };
    Ok(Packed {
        ty,
        rows,
        cols,
        group,
        words,
        scales_at,
        qh_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokscope_core::quant::{dequantize_row, quantize_row};

    /// Reads one element back out of the packed layout, as the WGSL kernels do.
    fn element(p: &Packed, r: usize, c: usize) -> f32 {
        let half = |bits: u32| half::f16::from_bits(bits as u16).to_f32();
        let (blk, j) = (tile(r, c / QK, p.cols / QK, p.group), c % QK);
        let quad = tile(r, c / 4, p.cols / 4, p.group);
        match p.ty {
            GgmlType::F32 => f32::from_bits(p.words[quad * 4 + c % 4]),
            GgmlType::F16 => half(p.words[quad * 2 + (c % 4) / 2] >> (16 * (c % 2))),
            GgmlType::BF16 => f32::from_bits((p.words[quad * 2 + (c % 4) / 2] >> (16 * (c % 2))) << 16),
            GgmlType::Q8_0 => {
                let d = half(p.words[p.scales_at + blk / 2] >> (16 * (blk % 2)));
                d * ((p.words[blk * 8 + j / 4] >> (8 * (j % 4))) as u8 as i8) as f32
            }
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 => {
                let byte = (p.words[blk * 4 + (j % 16) / 4] >> (8 * (j % 4))) as u8;
                let mut q = if j < 16 { byte & 15 } else { byte >> 4 } as f32;
                if matches!(p.ty, GgmlType::Q5_0 | GgmlType::Q5_1) {
                    q += 16.0 * ((p.words[p.qh_at + blk] >> j) & 1) as f32;
                }
                match p.ty {
                    GgmlType::Q4_0 => half(p.words[p.scales_at + blk / 2] >> (16 * (blk % 2))) * (q - 8.0),
                    GgmlType::Q5_0 => half(p.words[p.scales_at + blk / 2] >> (16 * (blk % 2))) * (q - 16.0),
                    _ => {
                        let dm = p.words[p.scales_at + blk];
                        half(dm) * q + half(dm >> 16)
                    }
                }
            }
            GgmlType::Q2_K | GgmlType::Q3_K | GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => {
                // Rebuild the GGUF block from the packed words, then dequantize it.
                let (t, j) = (tile(r, c / 256, p.cols / 256, p.group), c % 256);
                let bytes_of = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
                let mut blk = Vec::new();
                let mut out = [0f32; 256];
                if p.ty == GgmlType::Q4_K {
                    blk.extend(bytes_of(&p.words[p.scales_at + 4 * t..p.scales_at + 4 * t + 4]));
                    blk.extend(bytes_of(&p.words[32 * t..32 * t + 32]));
                } else if p.ty == GgmlType::Q2_K {
                    blk.extend(bytes_of(&p.words[20 * t + 16..20 * t + 20]));
                    blk.extend(bytes_of(&p.words[20 * t..20 * t + 16]));
                    blk.extend(bytes_of(&p.words[p.scales_at + t..p.scales_at + t + 1]));
                } else if p.ty == GgmlType::Q3_K {
                    let tiles = (p.words.len() - p.scales_at) * 2 / 7;
                    let d_at = p.scales_at + 3 * tiles;
                    blk.extend(bytes_of(&p.words[24 * t..24 * t + 24]));
                    blk.extend(bytes_of(&p.words[p.scales_at + 3 * t..p.scales_at + 3 * t + 3]));
                    let d = p.words[d_at + t / 2] >> (16 * (t % 2));
                    blk.extend_from_slice(&(d as u16).to_le_bytes());
                } else if p.ty == GgmlType::Q5_K {
                    blk.extend(bytes_of(&p.words[p.scales_at + 4 * t..p.scales_at + 4 * t + 4]));
                    blk.extend(bytes_of(&p.words[40 * t + 32..40 * t + 40]));
                    blk.extend(bytes_of(&p.words[40 * t..40 * t + 32]));
                } else {
                    blk.extend(bytes_of(&p.words[52 * t..52 * t + 52]));
                    let d = p.words[p.scales_at + t / 2] >> (16 * (t % 2));
                    blk.extend_from_slice(&(d as u16).to_le_bytes());
                }
                dequantize_row(p.ty, &blk, &mut out).unwrap();
                out[j]
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn packed_layout_holds_exactly_the_gguf_values_and_bytes() {
        // 9 blocks: an odd count leaves half a scale word; K-quants: 3 super-blocks.
        for (ty, group) in crate::matvec::gpu_types()
            .into_iter()
            .flat_map(|t| [1, 2, 8].map(|g| (t, g)))
        {
            let (rows, cols) = (3, if ty.block_size() == 256 { 768 } else { 96 });
            let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 29 % 61) as f32 - 30.0) / 7.0).collect();
            let bytes = quantize_row(ty, &x).unwrap();
            let p = repack(ty, rows, cols, &bytes, group).unwrap();
            let mut expect = vec![0f32; rows * cols];
            dequantize_row(ty, &bytes, &mut expect).unwrap();
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(element(&p, r, c), expect[r * cols + c], "{ty} group {group} [{r},{c}]");
                }
            }
            // Padding: the last row group's missing rows, and half a scale word.
            let pad_rows = (rows.next_multiple_of(group) - rows) as u64;
            let padded = bytes.len().next_multiple_of(4) as u64 + pad_rows * bytes.len() as u64 / rows as u64;
            assert!(
                p.n_bytes() <= padded + 4,
                "{ty}: {} bytes packed from {}",
                p.n_bytes(),
                bytes.len()
            );
        }
    }
}
