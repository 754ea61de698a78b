//! The precision dial: the same model's weight matrices re-encoded at another precision, so the
//! reader can watch decode speed follow bytes per token on their own device. Every 2-D tensor
//! (the projections, the token embedding and output head) is dequantized row by row and
//! requantized with ggml's reference quantizers; 1-D tensors (norms) and metadata are copied.
//! A K-quant point re-encodes rows that are not whole super-blocks of 256 at llama.cpp's
//! stand-in type (Q4_K → Q5_0, Q6_K → Q8_0: `llama_tensor_get_type`'s fallback in
//! src/llama-quant.cpp), as a Q4_K_M file of the same model has them.
//! Re-encoding a 4-bit model at 16 bits adds no information — the point is the bytes.

use crate::gguf::{Gguf, GgufWriter};
use crate::quant::{GgmlType, dequantize_row, quantize_row};
use std::fmt;

/// The precisions the dial offers, fewest bits per weight first (Q4_0 and Q4_K both 4.5).
pub const DIAL: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_K,
    GgmlType::Q4_1,
    GgmlType::Q6_K,
    GgmlType::Q8_0,
    GgmlType::F16,
    GgmlType::F32,
];

/// The type a matrix with rows of `dims[0]` values gets at the dial point `target`: `target`
/// where its rows are whole blocks, else llama.cpp's stand-in for the K-quants, else none (the
/// tensor is copied as it is).
pub fn encoding(dims: &[u64], target: GgmlType) -> Option<GgmlType> {
    let fits = |t: GgmlType| dims.len() == 2 && dims[0].is_multiple_of(t.block_size());
    let stand_in = match target {
        GgmlType::Q4_K => GgmlType::Q5_0,
        GgmlType::Q6_K => GgmlType::Q8_0,
        other => other,
    };
    [target, stand_in].into_iter().find(|&t| fits(t))
}

#[derive(Debug, Clone, PartialEq)]
pub struct RequantError {
    pub tensor: String,
    pub reason: String,
}

impl fmt::Display for RequantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot re-encode {}: {}", self.tensor, self.reason)
    }
}

impl std::error::Error for RequantError {}

/// Bytes of the re-encoded file, without building it (to check a device's limits first).
pub fn encoded_len<B: AsRef<[u8]>>(g: &Gguf<B>, target: GgmlType) -> u64 {
    g.tensors()
        .iter()
        .map(|t| match encoding(t.dims.as_slice(), target) {
            Some(ty) => ty.bytes_for(t.n_elements()).unwrap_or(t.n_bytes()),
            None => t.n_bytes(),
        })
        .sum()
}

/// The model as GGUF bytes with its matrices at `target`; `progress(done, total)` counts
/// tensors.
pub fn requantize<B: AsRef<[u8]>>(
    g: &Gguf<B>,
    target: GgmlType,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<u8>, RequantError> {
    if !DIAL.contains(&target) {
        return Err(RequantError {
            tensor: "the model".into(),
            reason: format!(
                "{target} is not on the precision dial ({})",
                DIAL.map(|t| t.name()).join(", ")
            ),
        });
    }
    let mut w = GgufWriter::new();
    w.version = g.version;
    w.alignment = g.alignment;
    // The file type would describe the old encoding: drop it rather than mislabel the file.
    w.metadata = g
        .metadata()
        .iter()
        .filter(|(k, _)| k != "general.file_type")
        .cloned()
        .collect();
    let total = g.tensors().len();
    for (i, t) in g.tensors().iter().enumerate() {
        let data = g.tensor_data(t);
        let to = encoding(&t.dims, target).filter(|&ty| ty != t.ty);
        let bytes = if let Some(target) = to {
            let fail = |reason: String| RequantError {
                tensor: t.name.clone(),
                reason,
            };
            let cols = t.dims[0] as usize;
            let row_bytes =
                t.ty.bytes_for(cols as u64)
                    .ok_or_else(|| fail(format!("{} rows of {cols} are not whole blocks", t.ty)))?
                    as usize;
            let mut row = vec![0f32; cols];
            let mut out = Vec::with_capacity(target.bytes_for(t.n_elements()).unwrap_or(0) as usize);
            for src in data.chunks_exact(row_bytes) {
                dequantize_row(t.ty, src, &mut row).map_err(|e| fail(e.to_string()))?;
                out.extend(quantize_row(target, &row).map_err(|e| fail(e.to_string()))?);
            }
            (out, target)
        } else {
            (data.to_vec(), t.ty)
        };
        w.tensor(&t.name, &t.dims, bytes.1, bytes.0);
        progress(i + 1, total);
    }
    Ok(w.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::synthetic::TinyLlama;

    fn tiny() -> Gguf<Vec<u8>> {
        Gguf::parse(TinyLlama::default().build()).unwrap()
    }

    /// 256 wide: the K-quant points apply to every matrix.
    fn tiny_256() -> Gguf<Vec<u8>> {
        let spec = TinyLlama {
            d_model: 256,
            ffn_dim: 512,
            ..Default::default()
        };
        Gguf::parse(spec.build()).unwrap()
    }

    /// Rows not whole super-blocks take llama.cpp's stand-in (64-wide tiny model: Q5_0, Q8_0).
    #[test]
    fn k_points_fall_back_where_rows_are_not_super_blocks() {
        assert_eq!(encoding(&[64, 10], GgmlType::Q4_K), Some(GgmlType::Q5_0));
        assert_eq!(encoding(&[512, 10], GgmlType::Q4_K), Some(GgmlType::Q4_K));
        assert_eq!(encoding(&[64, 10], GgmlType::Q6_K), Some(GgmlType::Q8_0));
        assert_eq!(encoding(&[64], GgmlType::Q6_K), None);
        assert_eq!(encoding(&[48, 2], GgmlType::Q4_0), None);
        let g = tiny();
        let back = Gguf::parse(requantize(&g, GgmlType::Q4_K, |_, _| {}).unwrap()).unwrap();
        for t in back.tensors().iter().filter(|t| t.dims.len() == 2) {
            let want = if t.dims[0] % 256 == 0 {
                GgmlType::Q4_K
            } else {
                GgmlType::Q5_0
            };
            assert_eq!(t.ty, want, "{}", t.name);
        }
        assert!(Model::from_gguf(back).is_ok());
    }

    #[test]
    fn bytes_follow_the_dial_and_the_model_still_loads() {
        let g = tiny_256();
        let mut last = (0, 0.0);
        for ty in DIAL {
            let mut calls = 0;
            let bytes = requantize(&g, ty, |_, _| calls += 1).unwrap();
            assert_eq!(calls, g.tensors().len());
            let back = Gguf::parse(bytes).unwrap();
            let data: u64 = back.tensors().iter().map(|t| t.n_bytes()).sum();
            assert_eq!(data, encoded_len(&g, ty), "{ty}");
            for (t, before) in back.tensors().iter().zip(g.tensors()) {
                let expected = if t.dims.len() == 2 { ty } else { before.ty };
                assert_eq!(t.ty, expected, "{}", t.name);
            }
            assert!(back.get("general.file_type").is_none());
            let m = Model::from_gguf(back).unwrap();
            let per_token = m.desc.weight_bytes_per_token();
            // More bits per weight read more bytes; equal bits (Q4_0, Q4_K) the same.
            let more = ty.bits_per_weight() > last.1;
            assert!(
                per_token > last.0 || (!more && per_token == last.0),
                "{ty}: {per_token} bytes per token after {}",
                last.0
            );
            last = (per_token, ty.bits_per_weight());
        }
    }

    #[test]
    fn the_weights_survive_within_the_precision() {
        let g = tiny();
        let q8 = Gguf::parse(requantize(&g, GgmlType::Q8_0, |_, _| {}).unwrap()).unwrap();
        let f32s = Gguf::parse(requantize(&q8, GgmlType::F32, |_, _| {}).unwrap()).unwrap();
        for (a, b) in q8
            .tensors()
            .iter()
            .zip(f32s.tensors())
            .filter(|(a, _)| a.dims.len() == 2)
        {
            let n = a.n_elements() as usize;
            let (mut x, mut y) = (vec![0f32; n], vec![0f32; n]);
            dequantize_row(a.ty, q8.tensor_data(a), &mut x).unwrap();
            dequantize_row(b.ty, f32s.tensor_data(b), &mut y).unwrap();
            assert_eq!(x, y, "Q8_0 → F32 is exact for {}", a.name);
        }
        assert!(
            requantize(&g, GgmlType::BF16, |_, _| {})
                .unwrap_err()
                .reason
                .contains("not on the precision dial")
        );
    }
}
