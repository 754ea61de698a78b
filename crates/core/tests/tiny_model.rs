//! The CPU engine on tiny synthetic models, against a naive forward pass written here from the
//! papers (dequantize everything, f32 everywhere, two-pass softmax), and its error cases.

use std::sync::Arc;
use tokscope_core::cpu::{CpuEngine, EngineError};
use tokscope_core::gguf::{GgufError, Value};
use tokscope_core::model::{Model, ModelError};
use tokscope_core::quant::{GgmlType, dequantize_row};
use tokscope_core::synthetic::TinyLlama;

struct Naive {
    m: Model<Vec<u8>>,
}

impl Naive {
    fn w(&self, name: &str) -> (Vec<f32>, usize) {
        let t = self.m.gguf.tensor(name).unwrap();
        let mut out = vec![0f32; t.n_elements() as usize];
        dequantize_row(t.ty, self.m.gguf.tensor_data(t), &mut out).unwrap();
        (out, t.dims[0] as usize)
    }

    fn matvec(&self, name: &str, x: &[f32]) -> Vec<f32> {
        let (w, cols) = self.w(name);
        w.chunks(cols)
            .map(|r| r.iter().zip(x).map(|(a, b)| a * b).sum())
            .collect()
    }

    fn rms(&self, name: &str, x: &[f32]) -> Vec<f32> {
        let (w, _) = self.w(name);
        let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
        x.iter().zip(&w).map(|(v, g)| v / (ms + 1e-5).sqrt() * g).collect()
    }

    fn has(&self, name: &str) -> bool {
        self.m.gguf.tensor(name).is_some()
    }

    /// RoPE (RoFormer): dimension pairs rotated by `pos · base^(−2i/hd)`; the pairs are adjacent
    /// (llama's converted layout) or `(i, i + hd/2)` (HF's, which gemma and qwen GGUFs keep).
    fn rope(x: &mut [f32], hd: usize, pos: usize, base: f64, halves: bool) {
        for h in x.chunks_mut(hd) {
            for i in 0..hd / 2 {
                let theta = pos as f64 * base.powf(-2.0 * i as f64 / hd as f64);
                let (s, c) = (theta.sin() as f32, theta.cos() as f32);
                let (ia, ib) = if halves { (i, i + hd / 2) } else { (2 * i, 2 * i + 1) };
                let (a, b) = (h[ia], h[ib]);
                h[ia] = a * c - b * s;
                h[ib] = a * s + b * c;
            }
        }
    }

    /// Logits after each token of `tokens`.
    fn run(&self, tokens: &[u32]) -> Vec<Vec<f32>> {
        let c = &self.m.config;
        let (hd, group) = (c.head_dim, c.n_heads / c.n_kv_heads);
        let mut ks: Vec<Vec<Vec<f32>>> = vec![vec![]; c.n_layers];
        let mut vs: Vec<Vec<Vec<f32>>> = vec![vec![]; c.n_layers];
        let (embd, d) = self.w("token_embd.weight");
        let gemma = c.architecture == "gemma3";
        let halves = c.architecture != "llama";
        let mut all = vec![];
        for (pos, &t) in tokens.iter().enumerate() {
            let mut x = embd[t as usize * d..(t as usize + 1) * d].to_vec();
            if gemma {
                x.iter_mut().for_each(|v| *v *= (d as f32).sqrt());
            }
            for l in 0..c.n_layers {
                let n = |p: &str| format!("blk.{l}.{p}.weight");
                let h = self.rms(&n("attn_norm"), &x);
                let mut q = self.matvec(&n("attn_q"), &h);
                let mut k = self.matvec(&n("attn_k"), &h);
                let mut v = self.matvec(&n("attn_v"), &h);
                for (y, b) in [(&mut q, "attn_q"), (&mut k, "attn_k"), (&mut v, "attn_v")] {
                    let bias = format!("blk.{l}.{b}.bias");
                    if self.has(&bias) {
                        y.iter_mut().zip(self.w(&bias).0).for_each(|(y, b)| *y += b);
                    }
                }
                if self.has(&n("attn_q_norm")) {
                    q = q.chunks(hd).flat_map(|h| self.rms(&n("attn_q_norm"), h)).collect();
                    k = k.chunks(hd).flat_map(|h| self.rms(&n("attn_k_norm"), h)).collect();
                }
                // Gemma 3: five sliding-window layers (local base 10,000) to one global.
                let sliding = gemma && l % 6 < 5;
                let base = if gemma && !sliding { 1e6 } else { 1e4 };
                let window = if sliding { c.sliding_window.unwrap() } else { usize::MAX };
                Self::rope(&mut q, hd, pos, base, halves);
                Self::rope(&mut k, hd, pos, base, halves);
                ks[l].push(k);
                vs[l].push(v);
                let from = (pos + 1).saturating_sub(window);
                let mut att = vec![0f32; c.n_heads * hd];
                for head in 0..c.n_heads {
                    let kvh = head / group;
                    let qh = &q[head * hd..(head + 1) * hd];
                    let scores: Vec<f32> = ks[l][from..]
                        .iter()
                        .map(|k| {
                            qh.iter()
                                .zip(&k[kvh * hd..(kvh + 1) * hd])
                                .map(|(a, b)| a * b)
                                .sum::<f32>()
                                / (hd as f32).sqrt()
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f32::MIN, f32::max);
                    let e: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f32 = e.iter().sum();
                    for (j, p) in e.iter().enumerate() {
                        for i in 0..hd {
                            att[head * hd + i] += p / sum * vs[l][from + j][kvh * hd + i];
                        }
                    }
                }
                let mut o = self.matvec(&n("attn_output"), &att);
                if self.has(&n("post_attention_norm")) {
                    o = self.rms(&n("post_attention_norm"), &o);
                }
                x.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
                let h = self.rms(&n("ffn_norm"), &x);
                let g = self.matvec(&n("ffn_gate"), &h);
                let u = self.matvec(&n("ffn_up"), &h);
                let act: Vec<f32> = g
                    .iter()
                    .zip(&u)
                    .map(|(&g, u)| {
                        if gemma {
                            // GELU, tanh form (Hendrycks & Gimpel 2016), evaluated at f16 like
                            // ggml's CPU backend (GGML_GELU_FP16), whose tokens we follow.
                            let h = |v: f32| half::f16::from_f32(v).to_f32();
                            let x = h(g);
                            let inner = (2.0 / std::f32::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                            let y = if g <= -10.0 {
                                0.0
                            } else if g >= 10.0 {
                                g
                            } else {
                                h(0.5 * x * (1.0 + inner.tanh()))
                            };
                            y * u
                        } else {
                            g / (1.0 + (-g).exp()) * u
                        }
                    })
                    .collect();
                let mut dn = self.matvec(&n("ffn_down"), &act);
                if self.has(&n("post_ffw_norm")) {
                    dn = self.rms(&n("post_ffw_norm"), &dn);
                }
                x.iter_mut().zip(&dn).for_each(|(a, b)| *a += b);
            }
            let h = self.rms("output_norm.weight", &x);
            let head = if self.m.gguf.tensor("output.weight").is_some() {
                "output.weight"
            } else {
                "token_embd.weight"
            };
            all.push(self.matvec(head, &h));
        }
        all
    }
}

fn engine(spec: &TinyLlama, context: usize) -> CpuEngine<Vec<u8>> {
    CpuEngine::new(Arc::new(Model::load(spec.build()).unwrap()), context).unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn scale(a: &[f32]) -> f32 {
    a.iter().fold(0f32, |m, v| m.max(v.abs()))
}

const TOKENS: [u32; 12] = [1, 77, 104, 105, 200, 3, 45, 45, 260, 12, 99, 2];

#[test]
fn engine_matches_naive_forward_for_every_weight_type() {
    for (ty, rel_tol) in [
        (GgmlType::F32, 1e-4),
        (GgmlType::F16, 1e-4),
        (GgmlType::BF16, 1e-4),
        (GgmlType::Q8_0, 0.03),
        (GgmlType::Q5_0, 0.03),
        (GgmlType::Q5_1, 0.03),
        (GgmlType::Q4_0, 0.03),
        (GgmlType::Q4_1, 0.03),
        (GgmlType::Q6_K, 0.03),
        (GgmlType::Q4_K, 0.03),
        (GgmlType::Q5_K, 0.03),
        (GgmlType::Q3_K, 0.06),
        (GgmlType::Q2_K, 0.12),
    ] {
        // K-quants hold 256 values a block: rows that wide.
        let (d_model, ffn_dim) = if ty.block_size() == 256 { (256, 512) } else { (64, 96) };
        for tied in [true, false] {
            let spec = TinyLlama {
                weight_type: ty,
                embd_type: if tied { ty } else { GgmlType::Q8_0 },
                tied_output: tied,
                d_model,
                ffn_dim,
                ..Default::default()
            };
            let naive = Naive {
                m: Model::load(spec.build()).unwrap(),
            }
            .run(&TOKENS);
            let mut e = engine(&spec, 64);
            for (i, &t) in TOKENS.iter().enumerate() {
                let got = e.decode(t).unwrap();
                let diff = max_abs_diff(got, &naive[i]);
                // Quantized types see 8-bit activations (as ggml's CPU path does); floats are exact.
                assert!(
                    diff <= rel_tol * scale(&naive[i]).max(1.0),
                    "{ty} tied={tied} step {i}: max diff {diff}, scale {}",
                    scale(&naive[i])
                );
            }
        }
    }
}

/// Every family's forward pass against the naive one: gemma3 over 6 layers (five sliding, one
/// global) with a window shorter than the prompt, qwen2's biases, qwen3's Q/K norms; F32
/// weights so any difference is the architecture, not rounding. Prefill in one batch must equal
/// decoding token by token (the window applies per row).
#[test]
fn every_family_matches_naive_forward() {
    use tokscope_core::model::Family;
    for family in [Family::Gemma3, Family::Qwen2, Family::Qwen3] {
        let spec = TinyLlama {
            family,
            n_layers: if family == Family::Gemma3 { 6 } else { 2 },
            sliding_window: 5,
            weight_type: GgmlType::F32,
            embd_type: GgmlType::F32,
            spm: family == Family::Gemma3,
            ..Default::default()
        };
        let naive = Naive {
            m: Model::load(spec.build()).unwrap(),
        }
        .run(&TOKENS[..11]);
        let mut e = engine(&spec, 64);
        for (i, &t) in TOKENS[..11].iter().enumerate() {
            let got = e.decode(t).unwrap();
            let diff = max_abs_diff(got, &naive[i]);
            assert!(
                diff <= 1e-4 * scale(&naive[i]).max(1.0),
                "{family:?} step {i}: max diff {diff}, scale {}",
                scale(&naive[i])
            );
        }
        let mut batched = engine(&spec, 64);
        let last = batched.prefill(&TOKENS[..11]).unwrap();
        assert!(
            max_abs_diff(last, &naive[10]) <= 1e-4 * scale(&naive[10]).max(1.0),
            "{family:?} prefill"
        );
    }
}

#[test]
fn batched_prefill_equals_token_by_token_decode() {
    let spec = TinyLlama::default();
    let mut a = engine(&spec, 128);
    let mut b = engine(&spec, 128);
    let long: Vec<u32> = (0..100).map(|i| (i * 37 % 265) as u32).collect(); // > one prefill chunk
    let batched = a.prefill(&long).unwrap().to_vec();
    let mut stepped = vec![];
    for &t in &long {
        stepped = b.decode(t).unwrap().to_vec();
    }
    assert!(
        max_abs_diff(&batched, &stepped) < 1e-4,
        "{}",
        max_abs_diff(&batched, &stepped)
    );
    // And decoding continues identically from either.
    let x = a.decode(5).unwrap().to_vec();
    let y = b.decode(5).unwrap().to_vec();
    assert!(max_abs_diff(&x, &y) < 1e-4);
    assert_eq!(a.position(), 101);
}

/// Why the GPU comparisons allow quantized models 1e-2 of the logits' scale: with activations
/// rounded to 8-bit blocks, a few ULPs anywhere (another summation order, as on a GPU) can put
/// one value on the other side of a rounding step, and that step moves the logits by up to
/// ≈ 0.6 % of their scale. Here the CPU engine against itself, one norm's gains nudged by 3 ULPs:
/// some steps move by more than float noise (1e-4), none by more than 1e-2.
#[test]
fn a_few_ulps_flip_an_activation_rounding_step() {
    let spec = TinyLlama {
        weight_type: GgmlType::Q4_K,
        embd_type: GgmlType::F32,
        tied_output: false,
        d_model: 256,
        ffn_dim: 512,
        ..Default::default()
    };
    let bytes = spec.build();
    let model = Model::load(bytes.clone()).unwrap();
    let mut nudged = bytes;
    for c in nudged[model.desc.layers[0].attn_norm.data.clone()].chunks_exact_mut(4) {
        let v = f32::from_le_bytes(c.try_into().unwrap()) * (1.0 + 3.0 * f32::EPSILON);
        c.copy_from_slice(&v.to_le_bytes());
    }
    let mut a = CpuEngine::new(Arc::new(model), 64).unwrap();
    let mut b = CpuEngine::new(Arc::new(Model::load(nudged).unwrap()), 64).unwrap();
    let mut worst = 0f32;
    for i in 0..40u32 {
        let t = (i * 37 + 5) % 256;
        let x = a.decode(t).unwrap().to_vec();
        let y = b.decode(t).unwrap();
        worst = worst.max(max_abs_diff(&x, y) / scale(&x).max(1.0));
    }
    assert!(worst > 1e-4 && worst <= 1e-2, "worst relative move {worst}");
}

/// The page's worker feeds a long prompt a chunk at a time (looking for Stop in between):
/// the same bits as one prefill.
#[test]
fn feeding_whole_chunks_then_prefilling_the_rest_is_one_prefill() {
    use tokscope_core::cpu::PREFILL_CHUNK;
    let spec = TinyLlama::default();
    let prompt: Vec<u32> = (0..2 * PREFILL_CHUNK as u32 + 17).map(|i| 3 + i * 7 % 250).collect();
    let mut whole = engine(&spec, 256);
    let want = whole.prefill(&prompt).unwrap().to_vec();
    let mut parts = engine(&spec, 256);
    parts.feed(&prompt[..PREFILL_CHUNK]).unwrap();
    parts.feed(&prompt[PREFILL_CHUNK..2 * PREFILL_CHUNK]).unwrap();
    let got = parts.prefill(&prompt[2 * PREFILL_CHUNK..]).unwrap().to_vec();
    assert_eq!(got, want);
    assert_eq!(parts.position(), prompt.len());
    let next = whole.decode(5).unwrap().to_vec();
    assert_eq!(parts.decode(5).unwrap(), next.as_slice());
}

#[test]
fn reset_reproduces_the_same_logits() {
    let spec = TinyLlama::default();
    let mut e = engine(&spec, 32);
    let first = e.prefill(&TOKENS).unwrap().to_vec();
    e.reset();
    assert_eq!(e.prefill(&TOKENS).unwrap(), &first[..]);
}

#[test]
fn context_full_and_bad_tokens_are_errors() {
    let spec = TinyLlama::default();
    let mut e = engine(&spec, 4);
    assert_eq!(
        e.prefill(&[1, 2, 3, 4, 5]).unwrap_err(),
        EngineError::ContextFull { needed: 5, capacity: 4 }
    );
    e.prefill(&[1, 2, 3]).unwrap();
    e.decode(4).unwrap();
    let err = e.decode(5).unwrap_err();
    assert!(err.to_string().contains("context full"), "{err}");
    e.reset();
    assert!(matches!(
        e.decode(9999),
        Err(EngineError::TokenOutOfRange { token: 9999, .. })
    ));
    assert_eq!(e.prefill(&[]).unwrap_err(), EngineError::EmptyPrompt);
}

#[test]
fn unsupported_architecture_type_and_shapes_are_named() {
    let mut w = TinyLlama::default().writer();
    *w.meta_mut("general.architecture").unwrap() = Value::String("qwen3moe".into());
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert_eq!(e, ModelError::UnsupportedArchitecture("qwen3moe".into()));

    let mut w = TinyLlama::default().writer();
    let t = w.tensor_mut("blk.1.attn_q.weight").unwrap();
    t.ty = GgmlType::Q4_K; // 64×64 elements = 16 Q4_K blocks of 144 bytes
    t.dims = vec![256, 16];
    t.data = vec![0; 16 * 144];
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert!(
        matches!(&e, ModelError::ShapeMismatch { tensor, .. } if tensor == "blk.1.attn_q.weight"),
        "{e}"
    );

    let mut w = TinyLlama::default().writer();
    let t = w.tensor_mut("blk.0.ffn_up.weight").unwrap();
    t.ty = GgmlType::IQ4_NL;
    t.data = vec![0; 96 * 2 * 18];
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert_eq!(
        e,
        ModelError::UnsupportedType {
            tensor: "blk.0.ffn_up.weight".into(),
            ty: GgmlType::IQ4_NL
        }
    );
    assert!(e.to_string().contains("IQ4_NL"));

    let mut w = TinyLlama::default().writer();
    w.tensors.retain(|t| t.name != "blk.1.ffn_down.weight");
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert_eq!(
        e,
        ModelError::Gguf(GgufError::MissingTensor {
            name: "blk.1.ffn_down.weight".into()
        })
    );

    let mut w = TinyLlama::default().writer();
    w.metadata.retain(|(k, _)| k != "llama.embedding_length");
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert_eq!(
        e,
        ModelError::Gguf(GgufError::MissingKey {
            key: "llama.embedding_length".into()
        })
    );

    let mut w = TinyLlama::default().writer();
    for (k, v) in w.metadata.iter_mut() {
        if k == "llama.attention.head_count_kv" {
            *v = Value::U32(3);
        }
    }
    let e = Model::load(w.to_bytes()).err().unwrap();
    assert!(matches!(e, ModelError::BadConfig { .. }), "{e}");
}

#[test]
fn bytes_per_token_counts_weights_once_and_kv_per_position() {
    let spec = TinyLlama::default();
    let m = Model::load(spec.build()).unwrap();
    let d = &m.desc;
    let layers: u64 = d
        .layers
        .iter()
        .map(|l| {
            l.matrices()
                .iter()
                .chain(l.vectors().iter())
                .map(|w| w.n_bytes())
                .sum::<u64>()
        })
        .sum();
    // Tied: the whole embedding is read as the head, plus one embedding row.
    let expected = layers + d.output_norm.n_bytes() + d.token_embd.n_bytes() + d.token_embd.row_bytes() as u64;
    assert_eq!(d.weight_bytes_per_token(), expected);
    let kv = (2 * 2 * 32 * 4) as u64; // layers × (K, V) × kv_dim × f32
    assert_eq!(m.config.kv_bytes_per_token(4), kv);
    assert_eq!(m.bytes_per_token(9, 4), expected + 10 * kv);
    assert_eq!(
        m.bytes_per_token(9, 2),
        expected + 5 * kv,
        "an f16 cache: half the KV bytes"
    );
}

#[test]
fn unsupported_tokenizers_are_named() {
    use tokscope_core::tokenizer::Tokenizer;
    let mut w = TinyLlama::default().writer();
    for (k, v) in w.metadata.iter_mut() {
        if k == "tokenizer.ggml.model" {
            *v = Value::String("bert".into());
        }
    }
    let g = tokscope_core::gguf::Gguf::parse(w.to_bytes()).unwrap();
    let e = Tokenizer::from_gguf(&g).err().unwrap().to_string();
    assert!(e.contains("\"bert\"") && e.contains("SentencePiece"), "{e}");

    let mut w = TinyLlama::default().writer();
    for (k, v) in w.metadata.iter_mut() {
        if k == "tokenizer.ggml.pre" {
            *v = Value::String("jais".into());
        }
    }
    let g = tokscope_core::gguf::Gguf::parse(w.to_bytes()).unwrap();
    let e = Tokenizer::from_gguf(&g).err().unwrap().to_string();
    assert!(e.contains("\"jais\""), "{e}");
}
