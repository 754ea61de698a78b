//! Weight × activations for one token (matrix-vector) or a batch of prompt tokens
//! (matrix-matrix): rows are split across threads, and within a thread each group of rows is
//! applied to every token while it is still in L1, so prefill reads the weights once per batch.

use super::parallel::{for_each_chunk, threads};
use crate::model::Weight;
use crate::quant::{Acts, dot_rows};

/// Rows per cache tile: 16 Q4_1 rows of 576 columns are ≈6 KB, comfortably inside L1.
const TILE_ROWS: usize = 16;

/// `out[t * w.rows + r] = w_r · acts_t` for every token `t` of `acts` (already quantized).
/// `file` is the whole GGUF buffer `w.data` points into; `tmp` is scratch for batches (`n > 1`),
/// grown once and reused.
pub fn matmul(w: &Weight, file: &[u8], acts: &Acts, out: &mut [f32], tmp: &mut Vec<f32>) {
    let n = acts.n();
    let rows = w.rows;
    let row_bytes = w.row_bytes();
    let bytes = &file[w.data.clone()];
    assert_eq!(acts.cols(), w.cols, "{}: activation width", w.name);
    assert!(out.len() >= n * rows);
    // Enough chunks to balance threads, big enough to amortize the scheduling.
    let chunk = (rows / (threads() * 4)).next_multiple_of(TILE_ROWS).max(TILE_ROWS * 2);
    let run = |target: &mut [f32]| {
        for_each_chunk(target, chunk * n, |ci, buf| {
            let r0 = ci * chunk;
            let nr = buf.len() / n;
            for tile in (0..nr).step_by(TILE_ROWS) {
                let tr = TILE_ROWS.min(nr - tile);
                let wt = &bytes[(r0 + tile) * row_bytes..(r0 + tile + tr) * row_bytes];
                for t in 0..n {
                    let o = &mut buf[t * nr + tile..t * nr + tile + tr];
                    dot_rows(w.ty, wt, row_bytes, acts.row_for(w.ty, t), o)
                        .expect("weight types are validated at load");
                }
            }
        });
    };
    if n == 1 {
        run(&mut out[..rows]);
        return;
    }
    tmp.resize(n * rows, 0.0);
    run(&mut tmp[..n * rows]);
    // Chunks are laid out [chunk][token][row]; put them back as [token][row].
    for (ci, buf) in tmp[..n * rows].chunks(chunk * n).enumerate() {
        let nr = buf.len() / n;
        for t in 0..n {
            out[t * rows + ci * chunk..t * rows + ci * chunk + nr].copy_from_slice(&buf[t * nr..(t + 1) * nr]);
        }
    }
}
