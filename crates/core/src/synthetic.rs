//! Tiny random models (llama, gemma3, qwen2, qwen3) written as real GGUF files, for fast tests of the reader, both
//! engines and the CLI without a download. The tokenizer is a byte-level BPE over the 256
//! bytes plus a few merges and ChatML's special tokens, so every text round-trips.

use crate::gguf::{GgufWriter, Value, ValueType};
use crate::model::Family;
use crate::quant::{GgmlType, quantize_row};

#[derive(Debug, Clone)]
pub struct TinyLlama {
    /// The architecture: its keys are `{family}.*` and it gets that family's extra tensors.
    pub family: Family,
    /// Gemma 3's sliding window (its layers 0–4 of every 6 attend this far back).
    pub sliding_window: usize,
    pub n_layers: usize,
    pub d_model: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub ffn_dim: usize,
    pub context_length: usize,
    /// Type of the layer matrices.
    pub weight_type: GgmlType,
    /// Type of the token embedding (also the output head when tied).
    pub embd_type: GgmlType,
    pub tied_output: bool,
    /// A SentencePiece ("llama") vocabulary instead of byte-level BPE.
    pub spm: bool,
    pub seed: u64,
}

impl Default for TinyLlama {
    /// 2 layers, d = 64, 4 heads sharing 2 KV heads: the shape of the real thing, in 100 KB.
    fn default() -> Self {
        Self {
            family: Family::Llama,
            sliding_window: 5,
            n_layers: 2,
            d_model: 64,
            n_heads: 4,
            n_kv_heads: 2,
            ffn_dim: 96,
            context_length: 256,
            weight_type: GgmlType::Q4_1,
            embd_type: GgmlType::Q8_0,
            tied_output: true,
            spm: false,
            seed: 1,
        }
    }
}

/// GPT-2's byte → printable-character table (`bytes_to_unicode` in openai/gpt-2 encoder.py).
pub fn byte_to_char(b: u8) -> char {
    let printable = |b: u8| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    if printable(b) {
        return b as char;
    }
    let rank = (0..b).filter(|&x| !printable(x)).count() as u32;
    char::from_u32(256 + rank).unwrap()
}

/// The byte a character of GPT-2's byte-level alphabet stands for ([`byte_to_char`] reversed).
pub fn char_to_byte(c: char) -> Option<u8> {
    (0..=255u8).find(|&b| byte_to_char(b) == c)
}

pub const SPECIAL_TOKENS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
/// Merges on top of the bytes (in GPT-2's byte-level alphabet, where 'Ġ' is a space).
pub const MERGES: [(&str, &str); 6] = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r")];

/// The vocabulary: specials (ids 0..3), then the 256 bytes, then one token per merge.
pub fn vocab() -> Vec<String> {
    let mut v: Vec<String> = SPECIAL_TOKENS.iter().map(|s| s.to_string()).collect();
    v.extend((0..=255u8).map(|b| byte_to_char(b).to_string()));
    v.extend(MERGES.iter().map(|(a, b)| format!("{a}{b}")));
    v
}

/// SentencePiece pieces after the specials and the 256 byte tokens: single characters (low
/// scores), then merged pieces, best first. Enough to make words like "▁the" and "▁cat".
pub const SPM_CHARS: &str = "▁abcdefghijklmnopqrstuvwxyzTHE,.!?'0123456789";
pub const SPM_MERGED: [&str; 16] = [
    "▁t", "he", "▁the", "in", "er", "▁a", "at", "▁c", "▁cat", "▁s", "▁sat", "on", "▁on", "▁m", "▁mat", "▁th",
];

/// Pieces, token types and scores of the SentencePiece test vocabulary.
pub fn spm_vocab() -> (Vec<String>, Vec<i32>, Vec<f32>) {
    let mut pieces: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
    let mut types = vec![2, 3, 3];
    pieces.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    types.extend([6; 256]);
    let mut scores = vec![0.0; pieces.len()];
    for (k, c) in SPM_CHARS.chars().enumerate() {
        pieces.push(c.to_string());
        types.push(1);
        scores.push(-1000.0 - k as f32);
    }
    for (k, p) in SPM_MERGED.iter().enumerate() {
        pieces.push(p.to_string());
        types.push(1);
        scores.push(-(k as f32));
    }
    (pieces, types, scores)
}

/// SplitMix64 (Steele et al. 2014): a tiny, seedable source of test weights.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(crate) fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

impl TinyLlama {
    pub fn vocab_size(&self) -> usize {
        if self.spm { spm_vocab().0.len() } else { vocab().len() }
    }

    /// The GGUF bytes of this model.
    pub fn build(&self) -> Vec<u8> {
        self.writer().to_bytes()
    }

    /// The writer, for tests that tamper with metadata or tensors before writing.
    pub fn writer(&self) -> GgufWriter {
        let mut rng = Rng(self.seed);
        let head_dim = self.d_model / self.n_heads;
        let (d, kv, ffn, vocab_n) = (
            self.d_model,
            self.n_kv_heads * head_dim,
            self.ffn_dim,
            self.vocab_size(),
        );
        let mut w = GgufWriter::new();
        let s = |x: &str| Value::String(x.into());
        let u = |x: usize| Value::U32(x as u32);
        let strings = |xs: Vec<String>| Value::Array(ValueType::String, xs.into_iter().map(Value::String).collect());
        let arch = self.family.name();
        let k = |key: &str| format!("{arch}.{key}");
        w.meta("general.architecture", s(arch))
            .meta("general.name", s("tokscope tiny test model"))
            .meta(&k("block_count"), u(self.n_layers))
            .meta(&k("context_length"), u(self.context_length))
            .meta(&k("embedding_length"), u(d))
            .meta(&k("feed_forward_length"), u(ffn))
            .meta(&k("attention.head_count"), u(self.n_heads))
            .meta(&k("attention.head_count_kv"), u(self.n_kv_heads))
            .meta(
                &k("rope.freq_base"),
                Value::F32(if self.family == Family::Gemma3 { 1e6 } else { 1e4 }),
            )
            .meta(&k("attention.layer_norm_rms_epsilon"), Value::F32(1e-5));
        if self.family == Family::Gemma3 {
            w.meta(&k("attention.sliding_window"), u(self.sliding_window));
        }
        w.meta("tokenizer.ggml.bos_token_id", u(1))
            .meta("tokenizer.ggml.eos_token_id", u(2));
        let ints = |xs: Vec<i32>| Value::Array(ValueType::I32, xs.into_iter().map(Value::I32).collect());
        if self.spm {
            // add_bos_token and add_space_prefix left out: the defaults (both true) apply.
            let (pieces, types, scores) = spm_vocab();
            let scores = Value::Array(ValueType::F32, scores.into_iter().map(Value::F32).collect());
            w.meta("tokenizer.ggml.model", s("llama"))
                .meta("tokenizer.ggml.tokens", strings(pieces))
                .meta("tokenizer.ggml.token_type", ints(types))
                .meta("tokenizer.ggml.scores", scores)
                .meta("tokenizer.ggml.unknown_token_id", u(0));
        } else {
            let types = (0..vocab_n)
                .map(|i| if i < SPECIAL_TOKENS.len() { 3 } else { 1 })
                .collect();
            let merges = strings(MERGES.iter().map(|(a, b)| format!("{a} {b}")).collect());
            w.meta("tokenizer.ggml.model", s("gpt2"))
                .meta("tokenizer.ggml.pre", s("smollm"))
                .meta("tokenizer.ggml.tokens", strings(vocab()))
                .meta("tokenizer.ggml.token_type", ints(types))
                .meta("tokenizer.ggml.merges", merges)
                .meta("tokenizer.ggml.add_bos_token", Value::Bool(false))
                .meta("tokenizer.chat_template", s(crate::chat::CHATML_TEMPLATE));
        }
        let mut tensor =
            |w: &mut GgufWriter, name: &str, rows: usize, cols: usize, ty: GgmlType, scale: f32, offset: f32| {
                let data: Vec<f32> = (0..rows * cols).map(|_| offset + scale * rng.next_f32()).collect();
                let bytes = quantize_row(ty, &data).expect("test types are supported");
                let dims: Vec<u64> = if rows == 1 {
                    vec![cols as u64]
                } else {
                    vec![cols as u64, rows as u64]
                };
                w.tensor(name, &dims, ty, bytes);
            };
        let mat_scale = 1.0 / (d as f32).sqrt();
        tensor(&mut w, "token_embd.weight", vocab_n, d, self.embd_type, 1.0, 0.0);
        for i in 0..self.n_layers {
            let n = |p: &str| format!("blk.{i}.{p}.weight");
            let wt = self.weight_type;
            tensor(&mut w, &n("attn_norm"), 1, d, GgmlType::F32, 0.2, 1.0);
            tensor(&mut w, &n("attn_q"), d, d, wt, mat_scale * 2.0, 0.0);
            tensor(&mut w, &n("attn_k"), kv, d, wt, mat_scale * 2.0, 0.0);
            tensor(&mut w, &n("attn_v"), kv, d, wt, mat_scale, 0.0);
            tensor(&mut w, &n("attn_output"), d, d, wt, mat_scale, 0.0);
            tensor(&mut w, &n("ffn_norm"), 1, d, GgmlType::F32, 0.2, 1.0);
            tensor(&mut w, &n("ffn_gate"), ffn, d, wt, mat_scale, 0.0);
            tensor(&mut w, &n("ffn_up"), ffn, d, wt, mat_scale, 0.0);
            tensor(&mut w, &n("ffn_down"), d, ffn, wt, 1.0 / (ffn as f32).sqrt(), 0.0);
            let f = self.family;
            if f.qk_norm() {
                tensor(&mut w, &n("attn_q_norm"), 1, head_dim, GgmlType::F32, 0.2, 1.0);
                tensor(&mut w, &n("attn_k_norm"), 1, head_dim, GgmlType::F32, 0.2, 1.0);
            }
            if f.post_norms() {
                tensor(&mut w, &n("post_attention_norm"), 1, d, GgmlType::F32, 0.2, 1.0);
                tensor(&mut w, &n("post_ffw_norm"), 1, d, GgmlType::F32, 0.2, 1.0);
            }
            if f.qkv_bias() {
                let b = |p: &str| format!("blk.{i}.{p}.bias");
                tensor(&mut w, &b("attn_q"), 1, d, GgmlType::F32, 0.5, 0.0);
                tensor(&mut w, &b("attn_k"), 1, kv, GgmlType::F32, 0.5, 0.0);
                tensor(&mut w, &b("attn_v"), 1, kv, GgmlType::F32, 0.5, 0.0);
            }
        }
        tensor(&mut w, "output_norm.weight", 1, d, GgmlType::F32, 0.2, 1.0);
        if !self.tied_output {
            tensor(
                &mut w,
                "output.weight",
                vocab_n,
                d,
                self.weight_type,
                mat_scale * 4.0,
                0.0,
            );
        }
        w
    }
}
