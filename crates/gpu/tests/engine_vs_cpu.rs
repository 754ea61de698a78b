#![cfg(not(target_arch = "wasm32"))]
//! The whole GPU forward pass against the CPU engine on the tiny synthetic models (every weight
//! type; awkward context positions), on lavapipe in CI.

mod common;
#[path = "common/compare.rs"]
mod compare;

use compare::{
    LONG_SHAPES, TOKENS, assert_logits_close, long_context_model, long_prompt, ranked, tiny_model, wide_vocab_model,
    with_gpu_shapes,
};

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::sampling::argmax;
use tokscope_core::synthetic::TinyLlama;
use tokscope_gpu::engine::{GpuEngine, Want};
use tokscope_gpu::matvec::{MAX_COLUMNS, gpu_types};

/// The kernels as real GPUs run them (`with_gpu_shapes`), on this adapter: a chunked prefill
/// and decoding, a batch of sequences, and long contexts over many attention shares, against the
/// CPU engine. No GPU has been lent to CI: this is where those shapes are held to the reference.
/// Each type's kernel in the GPUs' shapes is held to the CPU's dot by matvec_vs_cpu.rs; here
/// the engine around them, over the block layouts' families (4- and 8-bit blocks, K-quant
/// super-blocks, 6-bit, floats).
#[test]
fn the_gpus_work_shapes_match_cpu_engine() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(with_gpu_shapes(ctx));
    for ty in [
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
        GgmlType::F16,
    ] {
        let model = tiny_model(ty);
        let mut cpu = CpuEngine::new(model.clone(), 64).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 64, |_, _| {}).unwrap();
        let prompt: Vec<u32> = (0..MAX_COLUMNS as u32 + 3).map(|i| (i * 37 + 5) % 256).collect();
        let want = cpu.prefill(&prompt).unwrap().to_vec();
        assert_logits_close(ty, 0, &gpu.prefill(&prompt, Want::Logits).unwrap().into_logits(), &want);
        for (i, &t) in TOKENS[..4].iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            assert_logits_close(ty, i + 1, &gpu.decode(t).unwrap(), &want);
        }
    }
    let model = tiny_model(GgmlType::Q4_1);
    let mut gpu = GpuEngine::with_sequences(ctx.clone(), model.clone(), 8, 3, |_, _| {}).unwrap();
    let mut cpus: Vec<CpuEngine<Vec<u8>>> = (0..3).map(|_| CpuEngine::new(model.clone(), 8).unwrap()).collect();
    for step in 0..3 {
        let next = [TOKENS[step], TOKENS[step + 4], TOKENS[step + 8]];
        let got = gpu.decode_batch(&next).unwrap();
        for (s, cpu) in cpus.iter_mut().enumerate() {
            assert_logits_close(GgmlType::Q4_1, step, &got[s], cpu.decode(next[s]).unwrap());
        }
    }
    for shape in LONG_SHAPES {
        let model = long_context_model(shape);
        let mut cpu = CpuEngine::new(model.clone(), 700).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 700, |_, _| {}).unwrap();
        let want = cpu.prefill(&long_prompt()).unwrap().to_vec();
        let got = gpu.prefill(&long_prompt(), Want::Logits).unwrap().into_logits();
        assert_logits_close(GgmlType::F32, 0, &got, &want);
        let want = cpu.decode(TOKENS[0]).unwrap().to_vec();
        assert_logits_close(GgmlType::F32, 1, &gpu.decode(TOKENS[0]).unwrap(), &want);
    }
}

#[test]
fn context_full_and_bad_token_are_errors() {
    let Some(ctx) = common::gpu() else { return };
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let mut gpu = GpuEngine::new(Arc::new(ctx), model, 2, |_, _| {}).unwrap();
    assert!(
        gpu.decode(9999)
            .unwrap_err()
            .to_string()
            .contains("outside the vocabulary")
    );
    gpu.prefill(&[1, 2], Want::Top(1)).unwrap();
    assert!(gpu.decode(3).unwrap_err().to_string().contains("context full"));
    gpu.reset();
    assert!(gpu.decode(3).is_ok());
}

/// A prompt longer than one pass (MAX_COLUMNS), so prefill runs a full chunk and a partial one,
/// then decodes: logits against the CPU engine's for every weight type.
#[test]
fn chunked_prefill_and_decode_match_cpu_engine_for_every_weight_type() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let prompt: Vec<u32> = (0..MAX_COLUMNS as u32 + 7).map(|i| (i * 37 + 5) % 256).collect();
    for ty in gpu_types() {
        let model = tiny_model(ty);
        let mut cpu = CpuEngine::new(model.clone(), 64).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 64, |_, _| {}).unwrap();
        // The embedding lookup where its type has a kernel (Q2_K's and Q3_K's rows come from the
        // host).
        let lookup = tokscope_gpu::embed::kernel_type(ty).is_some() as usize;
        assert_eq!(gpu.looks_up_embedding(), lookup == 1, "{ty}");
        assert_eq!(gpu.dispatches_per_token(), lookup + 2 * 5 + 2);
        let want = cpu.prefill(&prompt).unwrap().to_vec();
        let got = gpu.prefill(&prompt, Want::Logits).unwrap().into_logits();
        assert_logits_close(ty, 0, &got, &want);
        assert_eq!(gpu.position(), prompt.len());
        for (i, &t) in TOKENS[..3].iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            assert_logits_close(ty, i + 1, &gpu.decode(t).unwrap(), &want);
        }
    }
}

/// Three sequences with different prompts decoded together: each one's logits against the CPU
/// engine decoding that sequence alone, and its top-k against its own logits.
#[test]
fn batched_decode_matches_each_sequence_alone() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let prompts: [&[u32]; 3] = [&[1, 77, 104], &[5, 6], &[200, 3, 45, 45, 260]];
    for ty in [GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::F16] {
        let model = tiny_model(ty);
        let mut gpu = GpuEngine::with_sequences(ctx.clone(), model.clone(), 16, 3, |_, _| {}).unwrap();
        let mut cpus: Vec<CpuEngine<Vec<u8>>> = (0..3).map(|_| CpuEngine::new(model.clone(), 16).unwrap()).collect();
        let mut next = vec![0u32; 3];
        for (s, p) in prompts.iter().enumerate() {
            let want = cpus[s].prefill(p).unwrap().to_vec();
            gpu.submit_prefill_seq(s, p, Want::Logits).unwrap();
            let got = gpu.read().unwrap().into_logits();
            assert_logits_close(ty, s, &got, &want);
            next[s] = argmax(&want);
        }
        for step in 0..4 {
            let got = gpu.decode_batch(&next).unwrap();
            for (s, cpu) in cpus.iter_mut().enumerate() {
                let want = cpu.decode(next[s]).unwrap().to_vec();
                assert_logits_close(ty, step, &got[s], &want);
                next[s] = argmax(&want);
            }
        }
        gpu.submit_batch(&next, Want::Top(2)).unwrap();
        let tops = gpu.read_all().unwrap();
        for (s, cpu) in cpus.iter_mut().enumerate() {
            let want = cpu.decode(next[s]).unwrap();
            assert_eq!(tops[s].clone().into_top()[0].1, argmax(want), "{ty} sequence {s}");
        }
    }
}

/// The batch dial's engines run over the loaded engine's weights: new sequence state, not one
/// byte of the weights uploaded again, and the same logits as an engine with its own upload.
#[test]
fn an_engine_over_shared_weights_uploads_no_weights_and_decodes_alike() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = tiny_model(GgmlType::Q4_1);
    // Everything but the embedding table, which stays with the host (a token's row is looked up
    // there and written with the step).
    let weights: u64 = model
        .desc
        .weights()
        .iter()
        .filter(|w| w.name != "token_embd.weight")
        .map(|w| w.n_bytes())
        .sum();
    let made = |f: &mut dyn FnMut()| {
        let before = ctx.created.get().1;
        f();
        ctx.created.get().1 - before
    };
    let base = GpuEngine::new(ctx.clone(), model.clone(), 16, |_, _| {}).unwrap();
    let (mut own, mut shared) = (None, None);
    let own_bytes =
        made(&mut || own = Some(GpuEngine::with_sequences(ctx.clone(), model.clone(), 16, 3, |_, _| {}).unwrap()));
    let shared_bytes = made(&mut || shared = Some(base.sharing_weights(16, 3).unwrap()));
    let (mut own, mut shared) = (own.unwrap(), shared.unwrap());
    println!(
        "GPU buffers made: {own_bytes} bytes with an upload, {shared_bytes} over shared weights ({weights} bytes of weights)"
    );
    assert!(shared.shares_weights_with(&base) && !own.shares_weights_with(&base));
    assert!(own_bytes - shared_bytes >= weights, "{own_bytes} vs {shared_bytes}");
    let prompts: [&[u32]; 3] = [&[1, 77, 104], &[5, 6], &[200, 3, 45]];
    for (s, p) in prompts.iter().enumerate() {
        own.submit_prefill_seq(s, p, Want::Top(1)).unwrap();
        own.read().unwrap();
        shared.submit_prefill_seq(s, p, Want::Top(1)).unwrap();
        shared.read().unwrap();
    }
    for _ in 0..3 {
        assert_eq!(
            own.decode_batch(&[7, 8, 9]).unwrap(),
            shared.decode_batch(&[7, 8, 9]).unwrap()
        );
    }
}

#[test]
fn batch_errors_are_named() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let too_many = GpuEngine::with_sequences(ctx.clone(), model.clone(), 8, 17, |_, _| {});
    assert!(too_many.err().unwrap().to_string().contains("1 to 16"));
    let mut gpu = GpuEngine::with_sequences(ctx, model, 2, 2, |_, _| {}).unwrap();
    let e = gpu.submit_batch(&[1], Want::Top(1)).unwrap_err().to_string();
    assert!(e.contains("one token per sequence"), "{e}");
    gpu.submit_prefill_seq(1, &[1, 2], Want::Top(1)).unwrap();
    gpu.read().unwrap();
    assert!(
        gpu.submit_batch(&[1, 2], Want::Top(1))
            .unwrap_err()
            .to_string()
            .contains("context full")
    );
    assert!(
        gpu.submit_prefill_seq(2, &[1], Want::Top(1))
            .unwrap_err()
            .to_string()
            .contains("sequence 2")
    );
}

/// Attention split across workgroups (flash-decoding): contexts several workgroups long, so a
/// pass has several shares per head, each longer than a workgroup, with a head narrower than
/// the attention workgroup (positions side by side in the weighted sum where the workgroup is
/// wider) and one wider (several dimensions per invocation); logits against the CPU engine
/// while decoding on (compare.rs's `LONG_SHAPES`).
#[test]
fn long_contexts_match_cpu_engine_across_attention_shares() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    for shape in LONG_SHAPES {
        let model = long_context_model(shape);
        let prompt = long_prompt();
        let mut cpu = CpuEngine::new(model.clone(), 700).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 700, |_, _| {}).unwrap();
        let want = cpu.prefill(&prompt).unwrap().to_vec();
        let got = gpu.prefill(&prompt, Want::Logits).unwrap().into_logits();
        assert_logits_close(GgmlType::F32, 0, &got, &want);
        for (i, &t) in TOKENS[..4].iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            assert_logits_close(GgmlType::F32, i + 1, &gpu.decode(t).unwrap(), &want);
        }
    }
}

/// The top-k kernel returns the k highest logits, highest first (ties to the lower token), for
/// every k up to the most it serves: against the same engine's full logits, sorted.
#[test]
fn top_k_is_the_highest_logits_in_order() {
    use tokscope_gpu::engine::MAX_TOP_K;
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = tiny_model(GgmlType::Q8_0);
    let mut all = GpuEngine::new(ctx.clone(), model.clone(), 32, |_, _| {}).unwrap();
    let mut top = GpuEngine::new(ctx, model, 32, |_, _| {}).unwrap();
    for (i, &t) in TOKENS[..4].iter().enumerate() {
        let want = ranked(&all.decode(t).unwrap());
        let k = [1, 7, 40, MAX_TOP_K][i];
        assert_eq!(top.decode_top(t, k).unwrap(), want[..k], "k = {k}");
    }
}

/// The same over a vocabulary of several top-k chunks (a workgroup each, then a merge), the
/// logits themselves against the CPU engine's.
#[test]
fn top_k_over_chunks_of_a_large_vocabulary() {
    use tokscope_gpu::engine::MAX_TOP_K;
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = wide_vocab_model();
    let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
    let mut all = GpuEngine::new(ctx.clone(), model.clone(), 32, |_, _| {}).unwrap();
    let mut top = GpuEngine::new(ctx, model, 32, |_, _| {}).unwrap();
    assert_eq!(
        top.dispatches_per_token(),
        1 + 2 * 5 + 1 + 2,
        "the head, then two top-k stages"
    );
    for (i, &t) in [5u32, 9_999, 4_096, 300].iter().enumerate() {
        let logits = all.decode(t).unwrap();
        assert_logits_close(GgmlType::Q8_0, i, &logits, cpu.decode(t).unwrap());
        let k = [1, 7, 40, MAX_TOP_K][i];
        assert_eq!(top.decode_top(t, k).unwrap(), ranked(&logits)[..k], "k = {k}");
    }
}

/// An output head larger than one binding (a 128k or 262k vocabulary on a 128 MiB device) runs
/// in row slices, one dispatch each: here a 34 KB F16 head under a 16 KiB binding limit (every
/// other buffer of the tiny model fits it), logits and top-k against the CPU engine.
#[test]
fn an_output_head_larger_than_a_binding_runs_in_slices() {
    let Some(mut ctx) = common::gpu() else { return };
    ctx.limits.max_storage_buffer_binding_size = 16 * 1024;
    let ctx = Arc::new(ctx);
    let spec = TinyLlama {
        embd_type: GgmlType::F16,
        tied_output: true,
        ..Default::default()
    };
    let model = Arc::new(Model::load(spec.build()).unwrap());
    let head_bytes = model.desc.output.n_bytes();
    assert!(head_bytes > 2 * 16 * 1024, "{head_bytes}");
    let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
    let mut gpu = GpuEngine::new(ctx, model, 32, |_, _| {}).unwrap();
    // 3 slices: two more dispatches than one head, and three lookups (one a slice).
    assert_eq!(gpu.dispatches_per_token(), 3 + 2 * 5 + 2 + 2);
    for (i, &t) in TOKENS[..4].iter().enumerate() {
        let want = cpu.decode(t).unwrap().to_vec();
        assert_logits_close(GgmlType::F16, i, &gpu.decode(t).unwrap(), &want);
    }
    let top = gpu.decode_top(TOKENS[4], 3).unwrap();
    assert_eq!(top[0].1, argmax(cpu.decode(TOKENS[4]).unwrap()));
}

/// A Q4_K_M-like mix (Q4_K layers, Q6_K embedding and head) over 40 decoded tokens: the
/// K-quant kernels inside the whole pass (fused QKV + RoPE, SwiGLU pairs, residual adds, head).
#[test]
fn k_quant_mix_decodes_like_the_cpu_engine() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    for (layers, embd) in [(GgmlType::Q4_K, GgmlType::Q6_K), (GgmlType::Q6_K, GgmlType::F32)] {
        let spec = TinyLlama {
            weight_type: layers,
            embd_type: embd,
            d_model: 256,
            ffn_dim: 512,
            ..Default::default()
        };
        let model = Arc::new(Model::load(spec.build()).unwrap());
        let mut cpu = CpuEngine::new(model.clone(), 64).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 64, |_, _| {}).unwrap();
        for i in 0..40u32 {
            let t = (i * 37 + 5) % 256;
            let want = cpu.decode(t).unwrap().to_vec();
            assert_logits_close(layers, i as usize, &gpu.decode(t).unwrap(), &want);
        }
    }
}

/// gemma3 (six layers: five sliding within a 5-position window, one global with its own RoPE
/// base; head norms, post-norms, GELU), qwen2 (biases) and qwen3 (head norms) against the CPU
/// engine, token by token past the window and as one prefill, in F32 and Q8_0.
#[test]
fn every_family_matches_the_cpu_engine() {
    use tokscope_core::model::Family;
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    for family in [Family::Gemma3, Family::Qwen2, Family::Qwen3] {
        for ty in [GgmlType::F32, GgmlType::Q8_0] {
            let spec = TinyLlama {
                family,
                n_layers: if family == Family::Gemma3 { 6 } else { 2 },
                weight_type: ty,
                embd_type: ty,
                ..Default::default()
            };
            let model = Arc::new(Model::load(spec.build()).unwrap());
            let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
            let mut gpu = GpuEngine::new(ctx.clone(), model.clone(), 32, |_, _| {}).unwrap();
            for (i, &t) in TOKENS.iter().enumerate() {
                let want = cpu.decode(t).unwrap().to_vec();
                let got = gpu.decode(t).unwrap();
                assert_logits_close(ty, i, &got, &want);
            }
            let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
            let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
            let want = cpu.prefill(&TOKENS).unwrap().to_vec();
            let got = gpu.prefill(&TOKENS, Want::Logits).unwrap().into_logits();
            assert_logits_close(ty, 99, &got, &want);
            println!(
                "{family:?} {ty}: GPU = CPU, {} dispatches a token",
                gpu.dispatches_per_token()
            );
        }
    }
}

/// Q, K and V of different types (Q4_K_M files give V more bits) run as three products into one
/// buffer and the Q/K/V step rotates adjacent pairs for llama: no re-encoding, the CPU's
/// numbers. Here V is re-encoded Q8_0 while Q and K stay Q4_1.
#[test]
fn mixed_qkv_types_match_the_cpu_engine() {
    use tokscope_core::quant::{dequantize_row, quantize_row};
    let Some(ctx) = common::gpu() else { return };
    let mut w = TinyLlama::default().writer();
    for t in w.tensors.iter_mut().filter(|t| t.name.ends_with("attn_v.weight")) {
        let mut x = vec![0f32; t.dims.iter().product::<u64>() as usize];
        dequantize_row(t.ty, &t.data, &mut x).unwrap();
        t.data = quantize_row(GgmlType::Q8_0, &x).unwrap();
        t.ty = GgmlType::Q8_0;
    }
    let model = Arc::new(Model::load(w.to_bytes()).unwrap());
    let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
    let mut gpu = GpuEngine::new(Arc::new(ctx), model, 32, |_, _| {}).unwrap();
    assert_eq!(
        gpu.dispatches_per_token(),
        1 + 2 * 8 + 2,
        "three products and the Q/K/V step"
    );
    for (i, &t) in TOKENS.iter().enumerate() {
        let want = cpu.decode(t).unwrap().to_vec();
        assert_logits_close(GgmlType::Q4_1, i, &gpu.decode(t).unwrap(), &want);
    }
}
