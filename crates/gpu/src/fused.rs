//! Weights stacked into one matrix so one dispatch computes what three (Q, K, V) or two (gate,
//! up) would: fewer dispatches per token, and each fused epilogue (RoPE + KV write, SwiGLU) sees
//! the rows it pairs inside one workgroup.

use tokscope_core::model::{Model, Weight};
use tokscope_core::quant::{GgmlType, quantize_row};

/// The bytes of `parts` as one matrix (every part has the same column count). `interleave`
/// alternates their rows (row i of each part, in order) instead of stacking them.
///
/// Parts of one type are copied byte for byte, since GGUF rows are whole blocks. Parts of
/// different types are re-encoded as F16 (exact for every float type and close for quantized
/// ones). That reads more bytes per token than the GGUF's tensors, and `bench` still counts the
/// GGUF's bytes; no model we test mixes types within Q/K/V or gate/up.
pub fn fuse<B: AsRef<[u8]>>(model: &Model<B>, parts: &[&Weight], interleave: bool) -> (GgmlType, Vec<u8>) {
    let cols = parts[0].cols;
    assert!(parts.iter().all(|w| w.cols == cols), "fused weights share their width");
    let same = parts.iter().all(|w| w.ty == parts[0].ty);
    let ty = if same { parts[0].ty } else { GgmlType::F16 };
    let bytes: Vec<Vec<u8>> = parts
        .iter()
        .map(|w| {
            if same {
                model.data(w).to_vec()
            } else {
                quantize_row(GgmlType::F16, &model.dequantized(w)).expect("F16 encodes any row")
            }
        })
        .collect();
    let row_bytes = ty.bytes_for(cols as u64).expect("whole blocks") as usize;
    if !interleave {
        return (ty, bytes.concat());
    }
    let rows = parts[0].rows;
    assert!(
        parts.iter().all(|w| w.rows == rows),
        "interleaved weights have equal rows"
    );
    let mut out = Vec::with_capacity(bytes.iter().map(Vec::len).sum());
    for r in 0..rows {
        for b in &bytes {
            out.extend_from_slice(&b[r * row_bytes..(r + 1) * row_bytes]);
        }
    }
    (ty, out)
}
