//! The same engine, tokenizer and sampler natively and in WebAssembly (the browser's CPU
//! fallback): this file runs under `cargo test` and, compiled to wasm32, under
//! wasm-bindgen-test-runner in Node (`scripts/test.sh`). Both must produce the pinned ids.

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::sampling::{Sampler, SamplingParams, argmax};
use tokscope_core::synthetic::TinyLlama;
use tokscope_core::tokenizer::Tokenizer;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Greedy tokens of the default tiny model after the prompt "the cat".
const GREEDY: [u32; 12] = [119; 12];
/// Tokens sampled at temperature 20 with seed 7 (top-k off, top-p 0.9).
const SAMPLED: [u32; 12] = [208, 12, 25, 135, 235, 147, 65, 144, 165, 21, 77, 147];

fn generate(params: SamplingParams) -> Vec<u32> {
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let tok = Tokenizer::from_gguf(&model.gguf).unwrap();
    let prompt = tok.encode("the cat").unwrap();
    let mut engine = CpuEngine::new(model, 64).unwrap();
    let mut sampler = Sampler::new(params).unwrap();
    let mut next = sampler.sample(engine.prefill(&prompt).unwrap());
    let mut out = vec![next];
    while out.len() < 12 {
        next = sampler.sample(engine.decode(next).unwrap());
        out.push(next);
    }
    out
}

#[test]
fn greedy_tokens_are_pinned() {
    let params = SamplingParams {
        temperature: 0.0,
        ..Default::default()
    };
    assert_eq!(generate(params), GREEDY);
}

#[test]
fn seeded_sampling_is_pinned() {
    let params = SamplingParams {
        temperature: 20.0,
        top_k: 0,
        top_p: 0.9,
        seed: 7,
    };
    assert_eq!(generate(params), SAMPLED);
}

#[test]
fn sampler_sequence_is_platform_independent() {
    // Same logits and seed as sampling.rs's unit test; same pinned ids.
    let logits: Vec<f32> = (0..100).map(|i| ((i * 7919) % 97) as f32 / 20.0).collect();
    let mut s = Sampler::new(SamplingParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        seed: 42,
    })
    .unwrap();
    let ids: Vec<u32> = (0..8).map(|_| s.sample(&logits)).collect();
    assert_eq!(ids, [31, 86, 64, 75, 86, 64, 14, 51]);
    assert_eq!(argmax(&logits), 61);
}

#[test]
fn tokenizer_round_trips_in_both() {
    let model = Model::load(TinyLlama::default().build()).unwrap();
    let tok = Tokenizer::from_gguf(&model.gguf).unwrap();
    let text = "<|im_start|>user\nthe thinner 12 😀<|im_end|>";
    let ids = tok.encode(text).unwrap();
    assert_eq!(ids[0], 1);
    assert_eq!(tok.decode(&ids).unwrap(), text);
}

/// The dot tests' activations: `cols` values in [−2, 2), quantized to 8-bit blocks when `cols`
/// is a multiple of 32.
fn dot_inputs(cols: usize) -> tokscope_core::quant::Acts {
    let mut acts = tokscope_core::quant::Acts::new(1, cols);
    for (i, x) in acts.x_mut().iter_mut().enumerate() {
        *x = ((i * 37 % 101) as f32 / 25.0) - 2.0;
    }
    acts.quantize();
    acts
}

/// The quantized dots give the same bits natively (AVX2 or portable) and in WebAssembly (four
/// rows at a time, the scales converted in SIMD): 7 rows (a group of four and three alone) of
/// each type, with block scales that include f16 subnormals, zero, negatives and the largest;
/// the K-quants over two super-blocks, as quantized.
#[test]
fn quantized_dots_are_bit_identical_in_both() {
    use tokscope_core::quant::{GgmlType, dot_rows, quantize_row};
    let rows = 7;
    let scales: [u16; 7] = [0x0001, 0x03ff, 0x0000, 0x8400, 0x3c00, 0x7bff, 0xb555];
    let mut bits = vec![];
    for ty in GgmlType::SUPPORTED.into_iter().filter(|t| t.is_quantized()) {
        let k = ty.block_size() == 256;
        let cols = if k { 768 } else { 608 };
        let acts = dot_inputs(cols);
        let block = ty.bytes_for(ty.block_size()).unwrap() as usize;
        let mut w = vec![];
        for r in 0..rows {
            let vals: Vec<f32> = (0..cols)
                .map(|i| (((r * cols + i) * 7919 % 1009) as f32 / 504.5) - 1.0)
                .collect();
            let mut row = quantize_row(ty, &vals).unwrap();
            for (b, blk) in row.chunks_exact_mut(block).enumerate().filter(|_| !k) {
                blk[..2].copy_from_slice(&scales[(r + b) % 7].to_le_bytes());
                if matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1) {
                    blk[2..4].copy_from_slice(&scales[(r + 2 * b + 3) % 7].to_le_bytes());
                }
            }
            w.extend(row);
        }
        let mut out = vec![0f32; rows];
        dot_rows(ty, &w, w.len() / rows, acts.row_for(ty, 0), &mut out).unwrap();
        bits.extend(out.iter().map(|v| v.to_bits()));
    }
    assert_eq!(bits, DOT_BITS, "{bits:?}");
}

/// `quantized_dots_are_bit_identical_in_both`'s results, computed natively (types in
/// `GgmlType::SUPPORTED` order).
const DOT_BITS: [u32; 70] = [
    1262158766, 1260673405, 1256310435, 1231185146, 1270789683, 1281604992, 1259778633, 3226466542, 3231808110,
    3228269858, 3159329280, 1074898346, 1093464089, 1092382155, 1236857159, 3398742960, 3379519767, 3397785449,
    1244513125, 1251026002, 3383386549, 1232619590, 1227437032, 3385525182, 1250187684, 1240531233, 1250893354,
    1239651249, 3224597230, 3231627690, 3228290774, 1053641560, 1072508940, 1093137633, 1092050141, 3225027311,
    3231354816, 3228540035, 1064356728, 1079569087, 1092570568, 1091712412, 1224556286, 3390473848, 3374835957,
    3388475232, 1236990795, 1243489088, 3374428522, 1223025548, 1225157088, 3375829490, 1240173377, 1231925995,
    1243279409, 1229952782, 3229211922, 3223617350, 3231567324, 1065787424, 1084838440, 1095209443, 1091385895,
    1061197476, 3220600240, 3238459490, 1071650967, 3238019388, 1086093928, 1077835603,
];

/// Rows of 16-bit floats in wasm (eight lanes in SIMD, a tail of 4 past them) give the bits of
/// the scalar order (eight lane sums with no fused multiply-add, their total, then the tail),
/// here recomputed from the dequantized weights; weights include f16 subnormals, zeros,
/// negatives and the largest values. (Natively the AVX2 kernel fuses its multiply-adds, so
/// float weights are not bit-identical across targets; quantized ones are, above.)
#[cfg(target_arch = "wasm32")]
#[test]
fn half_float_dots_keep_the_scalar_order() {
    use tokscope_core::quant::{GgmlType, dequantize_row, dot_rows};
    let (rows, cols) = (3, 100);
    let acts = dot_inputs(cols);
    let x = acts.x().to_vec();
    let specials: [u16; 6] = [0x0001, 0x03ff, 0x0000, 0x8000, 0x7bff, 0xfbff];
    for ty in [GgmlType::F16, GgmlType::BF16] {
        let w: Vec<u8> = (0..rows * cols)
            .flat_map(|i| {
                let h = if i % 7 == 0 {
                    specials[i / 7 % 6]
                } else {
                    (i * 40503 % 0x7bff) as u16 ^ (i as u16 & 1) << 15
                };
                // bf16: a moderate exponent (its top bits are f32's).
                let h = if ty == GgmlType::BF16 { h & 0x80ff | 0x3f00 } else { h };
                h.to_le_bytes()
            })
            .collect();
        let mut out = vec![0f32; rows];
        dot_rows(ty, &w, 2 * cols, acts.row_for(ty, 0), &mut out).unwrap();
        for (r, got) in out.iter().enumerate() {
            let mut wf = vec![0f32; cols];
            dequantize_row(ty, &w[r * 2 * cols..(r + 1) * 2 * cols], &mut wf).unwrap();
            let mut acc = [0f32; 8];
            for i in 0..cols / 8 * 8 {
                acc[i % 8] += wf[i] * x[i];
            }
            let mut want: f32 = acc.iter().sum();
            for i in cols / 8 * 8..cols {
                want += wf[i] * x[i];
            }
            assert_eq!(got.to_bits(), want.to_bits(), "{ty:?} row {r}: {got} vs {want}");
        }
    }
}
