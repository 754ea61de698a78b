//! GGUF blocks → GPU words, once at load. WGSL reads 32-bit words, and Q8_0's 34-byte and Q4_0's
//! 18-byte blocks straddle them, so every quantized tensor is split into a quant region (whole
//! words per block) followed by a scale region (f16 scales packed two to a word; Q4_1's `d` and
//! `m` share one). The bytes read per token stay exactly the GGUF's: nothing is widened.

use tokscope_core::quant::{GgmlType, QK, UnsupportedType};

/// A weight in GPU layout: `words[..scales_at]` quants (or plain values), `words[scales_at..]`
/// scales.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub words: Vec<u32>,
    pub scales_at: usize,
}

impl Packed {
    pub fn n_bytes(&self) -> u64 {
        self.words.len() as u64 * 4
    }
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

/// Repacks `rows` × `cols` of `ty` from GGUF bytes. `cols` must be a multiple of 4 (of 32 for
/// quantized types, which their block size already guarantees).
pub fn repack(ty: GgmlType, rows: usize, cols: usize, bytes: &[u8]) -> Result<Packed, UnsupportedType> {
    assert_eq!(
        Some(bytes.len() as u64),
        ty.bytes_for((rows * cols) as u64),
        "byte count of {ty}"
    );
    assert!(cols.is_multiple_of(4), "GPU kernels read rows four values at a time");
    let (words, scales_at) = match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => {
            let words: Vec<u32> = bytes.chunks_exact(4).map(word).collect();
            let n = words.len();
            (words, n)
        }
        GgmlType::Q8_0 | GgmlType::Q4_0 => {
            let (block, qs_bytes) = if ty == GgmlType::Q8_0 { (34, QK) } else { (18, QK / 2) };
            let mut qs = Vec::with_capacity(bytes.len() / block * qs_bytes / 4);
            let mut scales = Vec::with_capacity(bytes.len() / block);
            for blk in bytes.chunks_exact(block) {
                scales.push(f16_bits(blk, 0));
                qs.extend(blk[2..].chunks_exact(4).map(word));
            }
            let at = qs.len();
            qs.extend(pack_halves(&scales));
            (qs, at)
        }
        GgmlType::Q4_1 => {
            let mut qs = Vec::with_capacity(bytes.len() / 20 * 4);
            let mut scales = Vec::with_capacity(bytes.len() / 20);
            for blk in bytes.chunks_exact(20) {
                scales.push(f16_bits(blk, 0) | (f16_bits(blk, 2) << 16));
                qs.extend(blk[4..].chunks_exact(4).map(word));
            }
            let at = qs.len();
            qs.extend(scales);
            (qs, at)
        }
        other => return Err(UnsupportedType(other, "uploaded to the GPU")),
    };
    Ok(Packed {
        ty,
        rows,
        cols,
        words,
        scales_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokscope_core::quant::{dequantize_row, quantize_row};

    /// Reads one element back out of the packed layout, as the WGSL kernels do.
    fn element(p: &Packed, r: usize, c: usize) -> f32 {
        let half = |bits: u32| half::f16::from_bits(bits as u16).to_f32();
        let i = r * p.cols + c;
        let (blk, j) = (i / QK, i % QK);
        match p.ty {
            GgmlType::F32 => f32::from_bits(p.words[i]),
            GgmlType::F16 => half(p.words[i / 2] >> (16 * (i % 2))),
            GgmlType::BF16 => f32::from_bits((p.words[i / 2] >> (16 * (i % 2))) << 16),
            GgmlType::Q8_0 => {
                let d = half(p.words[p.scales_at + blk / 2] >> (16 * (blk % 2)));
                d * ((p.words[blk * 8 + j / 4] >> (8 * (j % 4))) as u8 as i8) as f32
            }
            GgmlType::Q4_0 | GgmlType::Q4_1 => {
                let byte = (p.words[blk * 4 + (j % 16) / 4] >> (8 * (j % 4))) as u8;
                let q = if j < 16 { byte & 15 } else { byte >> 4 } as f32;
                if p.ty == GgmlType::Q4_0 {
                    half(p.words[p.scales_at + blk / 2] >> (16 * (blk % 2))) * (q - 8.0)
                } else {
                    let dm = p.words[p.scales_at + blk];
                    half(dm) * q + half(dm >> 16)
                }
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn packed_layout_holds_exactly_the_gguf_values_and_bytes() {
        let (rows, cols) = (3, 96); // 9 blocks: an odd count leaves half a scale word
        let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 29 % 61) as f32 - 30.0) / 7.0).collect();
        for ty in GgmlType::SUPPORTED {
            let bytes = quantize_row(ty, &x).unwrap();
            let p = repack(ty, rows, cols, &bytes).unwrap();
            let mut expect = vec![0f32; rows * cols];
            dequantize_row(ty, &bytes, &mut expect).unwrap();
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(element(&p, r, c), expect[r * cols + c], "{ty} [{r},{c}]");
                }
            }
            let padded = bytes.len().next_multiple_of(4) as u64;
            assert!(
                p.n_bytes() <= padded + 4,
                "{ty}: {} bytes packed from {}",
                p.n_bytes(),
                bytes.len()
            );
        }
    }
}
