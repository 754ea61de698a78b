//! Random-weight GGUFs with the exact tensor shapes of real models, for measuring speed where
//! the real weights cannot be downloaded (a GPU machine with no model hub, the page's model menu
//! as "synthetic: speed only"). Decode speed depends on the shapes and the tensor types, not on
//! the values, so these read exactly the bytes per token the real files do; their text is noise.
//!
//! Weights are valid blocks of the requested type: a pool of blocks quantized from random
//! values at the scale of each matrix, each block of the file drawn from that pool at random,
//! so no two rows repeat and writing gigabytes takes seconds, not the minutes quantizing every
//! value would. The file is written a tensor at a time ([`ShapeSpec::write`]), never whole in
//! memory. The tokenizer is the tiny test model's byte-level BPE, padded with filler tokens to
//! the real vocabulary size (the output head's rows are what a token reads).

use crate::gguf::{GgufWriter, Value, ValueType};
use crate::model::Family;
use crate::quant::{GgmlType, quantize_row};
use crate::synthetic::{MERGES, Rng, SPECIAL_TOKENS, vocab};
use std::io::{self, Write};

/// The shape of a decoder (what a speed measurement needs of a model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeSpec {
    /// Command-line name: `llama-3.2-1b`.
    pub id: &'static str,
    pub name: &'static str,
    /// The architecture written (its extra tensors and keys included).
    pub family: Family,
    /// The head size where it is not `d_model / heads` (Gemma 3: 256 with d = 640 and 4 heads).
    pub head_dim: Option<usize>,
    /// Gemma 3's sliding window (0: none).
    pub window: usize,
    pub layers: usize,
    pub d_model: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub context: usize,
    pub rope_base: f32,
    /// The output head is the token embedding (no `output.weight`).
    pub tied: bool,
    /// The embedding's (and a tied head's) type in the reference file, where it is not the
    /// matrices' own (SmolLM2's Q4_1 file keeps them at Q8_0).
    pub embd: Option<GgmlType>,
    /// Where the figures come from.
    pub source: &'static str,
}

/// Llama 3.2 1B, Llama 3.1 8B and Qwen2.5 0.5B (written as the llama architecture: Qwen's
/// Q/K/V biases are left out, 0.05 % of its bytes), SmolLM2 135M and Gemma 3 270M (the served
/// models, for GPU machines that cannot fetch them), plus a tiny shape for tests.
pub const SHAPES: [ShapeSpec; 6] = [
    ShapeSpec {
        id: "smollm2-135m",
        name: "SmolLM2 135M",
        family: Family::Llama,
        head_dim: None,
        window: 0,
        layers: 30,
        d_model: 576,
        heads: 9,
        kv_heads: 3,
        ffn: 1536,
        vocab: 49_152,
        context: 8192,
        rope_base: 100_000.0,
        tied: true,
        embd: Some(GgmlType::Q8_0),
        source: "HuggingFaceTB/SmolLM2-135M-Instruct config.json; its Q4_1 GGUF keeps the embedding at Q8_0",
    },
    ShapeSpec {
        id: "llama-3.2-1b",
        name: "Llama 3.2 1B",
        family: Family::Llama,
        head_dim: None,
        window: 0,
        layers: 16,
        d_model: 2048,
        heads: 32,
        kv_heads: 8,
        ffn: 8192,
        vocab: 128_256,
        context: 131_072,
        rope_base: 500_000.0,
        tied: true,
        embd: None,
        source: "meta-llama/Llama-3.2-1B config.json (Hugging Face)",
    },
    ShapeSpec {
        id: "llama-3.1-8b",
        name: "Llama 3.1 8B",
        family: Family::Llama,
        head_dim: None,
        window: 0,
        layers: 32,
        d_model: 4096,
        heads: 32,
        kv_heads: 8,
        ffn: 14_336,
        vocab: 128_256,
        context: 131_072,
        rope_base: 500_000.0,
        tied: false,
        embd: None,
        source: "meta-llama/Llama-3.1-8B config.json (Hugging Face)",
    },
    ShapeSpec {
        id: "qwen2.5-0.5b",
        name: "Qwen2.5 0.5B",
        family: Family::Llama,
        head_dim: None,
        window: 0,
        layers: 24,
        d_model: 896,
        heads: 14,
        kv_heads: 2,
        ffn: 4864,
        vocab: 151_936,
        context: 32_768,
        rope_base: 1_000_000.0,
        tied: true,
        embd: None,
        source: "Qwen/Qwen2.5-0.5B config.json (Hugging Face)",
    },
    ShapeSpec {
        id: "gemma3-270m",
        name: "Gemma 3 270M",
        family: Family::Gemma3,
        head_dim: Some(256),
        window: 512,
        layers: 18,
        d_model: 640,
        heads: 4,
        kv_heads: 1,
        ffn: 2048,
        vocab: 262_144,
        context: 32_768,
        rope_base: 1_000_000.0,
        tied: true,
        embd: Some(GgmlType::Q8_0),
        source: "gemma-3-270m-q4_k_m.gguf's own keys (google/gemma-3-270m); Q4_K_M keeps the embedding at Q8_0",
    },
    ShapeSpec {
        id: "tiny",
        name: "tiny (tests)",
        family: Family::Llama,
        head_dim: None,
        window: 0,
        layers: 2,
        d_model: 128,
        heads: 4,
        kv_heads: 2,
        ffn: 320,
        vocab: 1000,
        context: 512,
        rope_base: 10_000.0,
        tied: false,
        embd: None,
        source: "tokscope's own, for tests",
    },
];

/// The GGUF metadata key that marks a file as random weights.
pub const SYNTHETIC_KEY: &str = "tokscope.synthetic";

/// Blocks in each matrix's pool.
const POOL_UNITS: usize = 4096;

impl ShapeSpec {
    pub fn by_id(id: &str) -> Option<&'static ShapeSpec> {
        SHAPES.iter().find(|s| s.id.eq_ignore_ascii_case(id))
    }

    pub fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(self.d_model / self.heads)
    }

    /// Every tensor: (name, rows, cols, type). Norms are F32; every matrix is `ty`, the token
    /// embedding and output head included unless the shape names the embedding's own type; a
    /// K-quant where rows are not whole super-blocks takes llama.cpp's stand-in (Q4_K: Q5_0).
    fn tensors(&self, ty: GgmlType) -> Vec<(String, usize, usize, GgmlType)> {
        let hd = self.head_dim();
        let (d, q, kv, f) = (self.d_model, self.heads * hd, self.kv_heads * hd, self.ffn);
        let m = |rows: usize, cols: usize| {
            let t = crate::requant::encoding(&[cols as u64, rows as u64], ty).unwrap_or(ty);
            (rows, cols, t)
        };
        let mut t = vec![("token_embd.weight".to_string(), self.vocab, d, self.embd.unwrap_or(ty))];
        for i in 0..self.layers {
            let n = |p: &str| format!("blk.{i}.{p}.weight");
            let mut layer = vec![
                (n("attn_norm"), (1, d, GgmlType::F32)),
                (n("attn_q"), m(q, d)),
                (n("attn_k"), m(kv, d)),
                (n("attn_v"), m(kv, d)),
                (n("attn_output"), m(d, q)),
                (n("ffn_norm"), (1, d, GgmlType::F32)),
                (n("ffn_gate"), m(f, d)),
                (n("ffn_up"), m(f, d)),
                (n("ffn_down"), m(d, f)),
            ];
            if self.family.qk_norm() {
                layer.push((n("attn_q_norm"), (1, hd, GgmlType::F32)));
                layer.push((n("attn_k_norm"), (1, hd, GgmlType::F32)));
            }
            if self.family.post_norms() {
                layer.push((n("post_attention_norm"), (1, d, GgmlType::F32)));
                layer.push((n("post_ffw_norm"), (1, d, GgmlType::F32)));
            }
            t.extend(layer.into_iter().map(|(name, (r, c, ty))| (name, r, c, ty)));
        }
        t.push(("output_norm.weight".into(), 1, d, GgmlType::F32));
        if !self.tied {
            t.push(("output.weight".into(), self.vocab, d, ty));
        }
        t
    }

    /// The file's size in bytes for weights of `ty` (header included).
    pub fn file_bytes(&self, ty: GgmlType) -> Result<u64, String> {
        let (w, sizes) = self.layout(ty)?;
        let (header, offsets) = w.header(&sizes);
        Ok(header.len() as u64 + *offsets.last().unwrap_or(&0) as u64 + *sizes.last().unwrap_or(&0) as u64)
    }

    /// The tensors' data bytes for weights of `ty`: without building the header (whose
    /// vocabulary alone is 150k strings), so cheap enough for a menu.
    pub fn weight_bytes(&self, ty: GgmlType) -> Result<u64, String> {
        Ok(self.sizes(ty)?.iter().map(|&n| n as u64).sum())
    }

    /// Each tensor's bytes, or why `ty` cannot encode this shape.
    fn sizes(&self, ty: GgmlType) -> Result<Vec<usize>, String> {
        if !ty.is_supported() {
            return Err(format!(
                "{ty} cannot be executed by tokscope's engines (supported: {})",
                GgmlType::SUPPORTED.map(|t| t.name()).join(", ")
            ));
        }
        self.tensors(ty)
            .into_iter()
            .map(|(name, rows, cols, t)| {
                t.bytes_for((rows * cols) as u64)
                    .map(|n| n as usize)
                    .ok_or_else(|| format!("{name}: {cols} columns are not whole {t} blocks"))
            })
            .collect()
    }

    fn layout(&self, ty: GgmlType) -> Result<(GgufWriter, Vec<usize>), String> {
        let sizes = self.sizes(ty)?;
        let mut w = GgufWriter::new();
        let s = |x: &str| Value::String(x.into());
        let u = |x: usize| Value::U32(x as u32);
        let mut tokens = vocab();
        let n_real = tokens.len();
        tokens.extend((n_real..self.vocab).map(|i| format!("<synthetic_{i}>")));
        let types = (0..self.vocab)
            .map(|i| Value::I32(if i < SPECIAL_TOKENS.len() { 3 } else { 1 }))
            .collect();
        let strings = |xs: Vec<String>| Value::Array(ValueType::String, xs.into_iter().map(Value::String).collect());
        let arch = self.family.name();
        let k = |key: &str| format!("{arch}.{key}");
        if let Some(hd) = self.head_dim {
            w.meta(&k("attention.key_length"), u(hd))
                .meta(&k("attention.value_length"), u(hd));
        }
        if self.window > 0 {
            w.meta(&k("attention.sliding_window"), u(self.window));
        }
        w.meta("general.architecture", s(arch))
            .meta(
                "general.name",
                s(&format!("synthetic {} {ty} (random weights: speed only)", self.name)),
            )
            .meta(SYNTHETIC_KEY, Value::Bool(true))
            .meta(&k("block_count"), u(self.layers))
            .meta(&k("context_length"), u(self.context))
            .meta(&k("embedding_length"), u(self.d_model))
            .meta(&k("feed_forward_length"), u(self.ffn))
            .meta(&k("attention.head_count"), u(self.heads))
            .meta(&k("attention.head_count_kv"), u(self.kv_heads))
            .meta(&k("rope.freq_base"), Value::F32(self.rope_base))
            .meta(&k("attention.layer_norm_rms_epsilon"), Value::F32(1e-5))
            .meta("tokenizer.ggml.model", s("gpt2"))
            .meta("tokenizer.ggml.pre", s("smollm"))
            .meta("tokenizer.ggml.tokens", strings(tokens))
            .meta("tokenizer.ggml.token_type", Value::Array(ValueType::I32, types))
            .meta(
                "tokenizer.ggml.merges",
                strings(MERGES.iter().map(|(a, b)| format!("{a} {b}")).collect()),
            )
            .meta("tokenizer.ggml.bos_token_id", u(1))
            .meta("tokenizer.ggml.eos_token_id", u(2))
            .meta("tokenizer.ggml.add_bos_token", Value::Bool(false))
            .meta("tokenizer.chat_template", s(crate::chat::CHATML_TEMPLATE));
        for (name, rows, cols, t) in self.tensors(ty) {
            let dims: Vec<u64> = if rows == 1 {
                vec![cols as u64]
            } else {
                vec![cols as u64, rows as u64]
            };
            w.tensor(&name, &dims, t, Vec::new());
        }
        Ok((w, sizes))
    }

    /// Writes the model with every matrix in `ty` to `out`, a tensor at a time; returns the bytes
    /// written. `seed` picks the weights.
    pub fn write(&self, ty: GgmlType, seed: u64, out: &mut impl Write) -> io::Result<u64> {
        let (w, sizes) = self.layout(ty).map_err(io::Error::other)?;
        let (header, offsets) = w.header(&sizes);
        self.write_laid_out(ty, seed, &header, &sizes, &offsets, out)
    }

    /// [`ShapeSpec::write`] once the header and each tensor's size and offset are known.
    fn write_laid_out(
        &self,
        ty: GgmlType,
        seed: u64,
        header: &[u8],
        sizes: &[usize],
        offsets: &[usize],
        out: &mut impl Write,
    ) -> io::Result<u64> {
        out.write_all(header)?;
        let mut written = header.len() as u64;
        let mut rng = Rng(seed);
        let mut pool: Option<((GgmlType, usize), Pool)> = None;
        let mut at = 0usize;
        for (((_, rows, cols, t), &size), &offset) in self.tensors(ty).iter().zip(sizes).zip(offsets) {
            let pad = offset - at;
            out.write_all(&vec![0u8; pad])?;
            written += pad as u64;
            let data = if *rows == 1 {
                // A norm's weight: near 1.
                let v: Vec<f32> = (0..*cols).map(|_| 1.0 + 0.1 * rng.next_f32()).collect();
                quantize_row(*t, &v).map_err(io::Error::other)?
            } else {
                // One pool per type and width (the scale is 1/√cols), kept while they repeat.
                if pool.as_ref().is_none_or(|(key, _)| *key != (*t, *cols)) {
                    pool = Some(((*t, *cols), Pool::new(*t, *cols, &mut rng)?));
                }
                let (_, p) = pool.as_ref().expect("made above");
                p.fill(size, &mut rng)
            };
            debug_assert_eq!(data.len(), size);
            out.write_all(&data)?;
            written += size as u64;
            at = offset + size;
        }
        Ok(written)
    }

    /// The whole file in memory (the page's synthetic models, tests).
    pub fn build(&self, ty: GgmlType, seed: u64) -> Result<Vec<u8>, String> {
        let (w, sizes) = self.layout(ty)?;
        let (header, offsets) = w.header(&sizes);
        let total = header.len() + offsets.last().unwrap_or(&0) + sizes.last().unwrap_or(&0);
        let mut out = Vec::with_capacity(total);
        self.write_laid_out(ty, seed, &header, &sizes, &offsets, &mut out)
            .map_err(|e| e.to_string())?;
        Ok(out)
    }
}

/// Quantized units (32 values each, or one block when blocks are larger) to draw from.
struct Pool {
    unit_bytes: usize,
    bytes: Vec<u8>,
}

impl Pool {
    fn new(ty: GgmlType, cols: usize, rng: &mut Rng) -> io::Result<Pool> {
        let unit = (ty.block_size() as usize).max(32);
        let unit_bytes = ty.bytes_for(unit as u64).expect("whole blocks") as usize;
        // Values at the scale of a matrix whose outputs should stay near unit size.
        let scale = 2.0 / (cols as f32).sqrt();
        let values: Vec<f32> = (0..POOL_UNITS * unit).map(|_| scale * rng.next_f32()).collect();
        let bytes = quantize_row(ty, &values).map_err(io::Error::other)?;
        Ok(Pool { unit_bytes, bytes })
    }

    /// `size` bytes of units drawn at random.
    fn fill(&self, size: usize, rng: &mut Rng) -> Vec<u8> {
        let mut out = Vec::with_capacity(size);
        while out.len() < size {
            let k = (rng.next_u64() % POOL_UNITS as u64) as usize * self.unit_bytes;
            out.extend_from_slice(&self.bytes[k..k + self.unit_bytes]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::Gguf;
    use crate::model::Model;

    #[test]
    fn real_shapes_read_the_real_bytes() {
        // Llama 3.1 8B: 8.03e9 parameters; at Q4_0 (4.5 bits) every tensor but the norms.
        let s = ShapeSpec::by_id("llama-3.1-8b").unwrap();
        let params: u64 = s
            .tensors(GgmlType::Q4_0)
            .iter()
            .map(|(_, r, c, _)| (r * c) as u64)
            .sum();
        assert_eq!(params, 8_030_261_248);
        let bytes = s.file_bytes(GgmlType::Q4_0).unwrap();
        // The menu's figure: the data alone, the header's vocabulary left out.
        let data = s.weight_bytes(GgmlType::Q4_0).unwrap();
        assert!(data < bytes && bytes - data < 4_000_000, "{data} of {bytes}");
        assert!((4.51e9..4.53e9).contains(&(bytes as f64)), "{bytes}");
        // Llama 3.2 1B (tied): 1,235,814,400 as published; Qwen2.5 0.5B: 494,032,768 less its
        // Q/K/V biases (24 × (896 + 128 + 128)).
        let p = |id: &str| -> u64 {
            ShapeSpec::by_id(id)
                .unwrap()
                .tensors(GgmlType::Q8_0)
                .iter()
                .map(|(_, r, c, _)| (r * c) as u64)
                .sum()
        };
        assert_eq!(p("llama-3.2-1b"), 1_235_814_400);
        assert_eq!(p("qwen2.5-0.5b"), 494_032_768 - 24 * 1152);
        // SmolLM2 135M at Q4_1 with its Q8_0 embedding: the default file's 134.5 M parameters
        // and 96,576,768 tensor bytes (`tokscope inspect --json` on it).
        let smol = ShapeSpec::by_id("smollm2-135m").unwrap();
        assert_eq!(p("smollm2-135m"), 134_515_008);
        let data: u64 = smol
            .tensors(GgmlType::Q4_1)
            .iter()
            .map(|(_, r, c, t)| t.bytes_for((r * c) as u64).unwrap())
            .sum();
        assert_eq!(data, 96_576_768, "{data}");
    }

    /// Gemma 3 270M: the real file's 268,098,176 parameters (`tokscope inspect --json`); at
    /// Q4_K its 640-wide rows take Q5_0 as in the real Q4_K_M file, whose 246.6 MB a token (it
    /// has Q6_K and Q8_0 where this has Q4_K and Q5_0) this is within 2 % of.
    #[test]
    fn gemma3_shape_is_the_real_files() {
        let g = ShapeSpec::by_id("gemma3-270m").unwrap();
        let t = g.tensors(GgmlType::Q4_K);
        assert_eq!(t.iter().map(|(_, r, c, _)| (r * c) as u64).sum::<u64>(), 268_098_176);
        let ty = |name: &str| t.iter().find(|x| x.0 == name).unwrap().3;
        assert_eq!(ty("blk.0.attn_q.weight"), GgmlType::Q5_0);
        assert_eq!(ty("blk.0.ffn_down.weight"), GgmlType::Q4_K);
        assert_eq!(ty("token_embd.weight"), GgmlType::Q8_0);
        let bytes = g.weight_bytes(GgmlType::Q4_K).unwrap() as f64;
        assert!((bytes / 246_588_584.0 - 1.0).abs() < 0.02, "{bytes}");
    }

    #[test]
    fn a_shaped_model_loads_and_decodes() {
        let s = ShapeSpec::by_id("tiny").unwrap();
        for ty in [GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::F16] {
            let bytes = s.build(ty, 7).unwrap();
            assert_eq!(bytes.len() as u64, s.file_bytes(ty).unwrap());
            let g = Gguf::parse(&bytes[..]).unwrap();
            assert_eq!(g.opt_bool(SYNTHETIC_KEY).unwrap(), Some(true));
            let model = std::sync::Arc::new(Model::from_gguf(g).unwrap());
            assert_eq!(model.config.vocab_size, 1000);
            assert_eq!(model.config.n_layers, 2);
            let mut e = crate::cpu::CpuEngine::new(model.clone(), 8).unwrap();
            let logits = e.decode(5).unwrap();
            assert_eq!(logits.len(), 1000);
            assert!(logits.iter().all(|x| x.is_finite()), "{ty}");
            // Not a constant model: the logits spread.
            let (lo, hi) = logits
                .iter()
                .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            assert!(hi - lo > 0.1, "{ty}: {lo}..{hi}");
        }
        // Seeds give different weights; the same seed the same file.
        assert_ne!(s.build(GgmlType::Q4_0, 1), s.build(GgmlType::Q4_0, 2));
        assert_eq!(s.build(GgmlType::Q4_0, 1), s.build(GgmlType::Q4_0, 1));
    }

    /// An embedding of another type than the matrices, at the same width (SmolLM2's Q8_0 beside
    /// Q4_1): each tensor's blocks come from a pool of its own type.
    #[test]
    fn an_embedding_of_its_own_type_gives_finite_logits() {
        let s = ShapeSpec {
            embd: Some(GgmlType::Q8_0),
            tied: true,
            ..*ShapeSpec::by_id("tiny").unwrap()
        };
        let g = Gguf::parse(s.build(GgmlType::Q4_1, 3).unwrap()).unwrap();
        let model = std::sync::Arc::new(Model::from_gguf(g).unwrap());
        let mut e = crate::cpu::CpuEngine::new(model, 8).unwrap();
        for t in [5, 6, 7] {
            assert!(e.decode(t).unwrap().iter().all(|x| x.is_finite()));
        }
    }

    #[test]
    fn unsupported_types_are_refused_by_name() {
        let e = ShapeSpec::by_id("tiny")
            .unwrap()
            .build(GgmlType::IQ4_NL, 1)
            .unwrap_err();
        assert!(e.contains("IQ4_NL") && e.contains("Q4_1"), "{e}");
    }
}
