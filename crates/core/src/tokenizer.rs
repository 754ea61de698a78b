//! The model's own tokenizer, rebuilt from its GGUF `tokenizer.ggml.*` keys with the
//! `tokenizers` crate, so text becomes the same ids llama.cpp makes (checked by fixtures).
//!
//! Two vocabulary kinds (`tokenizer.ggml.model`):
//! - `gpt2`: byte-level BPE with explicit merges (SmolLM, Llama 3, Qwen2). Pre-tokenizer regexes
//!   per `tokenizer.ggml.pre`: llama.cpp `llama_vocab::impl::load` (src/llama-vocab.cpp) and the
//!   matching HF `tokenizer.json` files.
//! - `llama`: SentencePiece BPE (Llama 2, TinyLlama): pieces with scores, `▁` for spaces, byte
//!   fallback. Merges are derived from the vocabulary, highest merged-piece score first, as HF's
//!   `SentencePieceExtractor` does; llama.cpp's `llm_tokenizer_spm` merges by the same scores.

use crate::gguf::{Gguf, GgufError};
use std::collections::{HashMap, HashSet};
use thiserror::Error;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};
use tokenizers::{DecoderWrapper, NormalizerWrapper};

/// `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;
/// SentencePiece's space marker.
const SPM_SPACE: &str = "\u{2581}";

/// Llama 3's pre-tokenizer split (llama.cpp `LLAMA_VOCAB_PRE_TYPE_LLAMA3`).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's (llama.cpp `LLAMA_VOCAB_PRE_TYPE_QWEN2`): like Llama 3's but one digit at a time.
const QWEN2_SPLIT: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

#[derive(Debug, Error)]
pub enum TokenizerError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error(
        "tokenizer model {0:?} is not supported (tokscope reads \"gpt2\" byte-level BPE and \"llama\" SentencePiece vocabularies)"
    )]
    UnsupportedModel(String),
    #[error("pre-tokenizer {0:?} is not supported (known: smollm, starcoder, gpt2, default, llama-bpe, qwen2)")]
    UnsupportedPre(String),
    #[error("tokenizer.ggml.merges entry #{index} {merge:?} is not two tokens separated by a space")]
    BadMerge { index: usize, merge: String },
    #[error("{key} has {len} entries for {tokens} tokens")]
    LengthMismatch {
        key: &'static str,
        len: usize,
        tokens: usize,
    },
    #[error("tokenizer: {0}")]
    Library(String),
}

fn lib_err(e: impl std::fmt::Display) -> TokenizerError {
    TokenizerError::Library(e.to_string())
}

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// Whether llama.cpp would put BOS in front of a prompt (`tokenizer.ggml.add_bos_token`).
    pub add_bos: bool,
    /// Tokens that end a turn or the text: EOS, EOT and every control token named like one.
    stop: HashSet<u32>,
    /// Control tokens (`<bos>`, `<|im_start|>`): shown as marks, not text.
    control_ids: HashSet<u32>,
    pub model_name: String,
    pub pre: String,
    pub vocab_size: usize,
    pub n_merges: usize,
    pub n_special: usize,
}

impl Tokenizer {
    pub fn from_gguf<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<Self, TokenizerError> {
        let model_name = g.get_str("tokenizer.ggml.model")?.to_string();
        let tokens = g.get_str_array("tokenizer.ggml.tokens")?;
        let types = g.opt_int_array("tokenizer.ggml.token_type")?;
        same_length("tokenizer.ggml.token_type", types.as_ref().map(Vec::len), tokens.len())?;
        let (mut inner, pre, n_merges) = match model_name.as_str() {
            "gpt2" => {
                let pre = g.opt_str("tokenizer.ggml.pre")?.unwrap_or("default").to_string();
                let (inner, n) = gpt2_bpe(&tokens, &g.get_str_array("tokenizer.ggml.merges")?, &pre)?;
                (inner, pre, n)
            }
            "llama" => {
                let scores = g.opt_f32_array("tokenizer.ggml.scores")?;
                same_length("tokenizer.ggml.scores", scores.as_ref().map(Vec::len), tokens.len())?;
                let scores = scores.unwrap_or_default();
                let unk = g.opt_u64("tokenizer.ggml.unknown_token_id")?.unwrap_or(0) as usize;
                let space_prefix = g.opt_bool("tokenizer.ggml.add_space_prefix")?.unwrap_or(true);
                let (inner, n) = spm_bpe(&tokens, &scores, tokens.get(unk).copied(), space_prefix)?;
                (inner, "sentencepiece".to_string(), n)
            }
            _ => return Err(TokenizerError::UnsupportedModel(model_name)),
        };

        // Control and user-defined tokens are matched as wholes in the text, as llama.cpp does.
        let typed = |want: &[i64]| -> Vec<u32> {
            let all = types.iter().flatten().enumerate();
            all.filter(|(_, ty)| want.contains(ty)).map(|(i, _)| i as u32).collect()
        };
        let special: Vec<AddedToken> = typed(&[TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED])
            .into_iter()
            .map(|i| AddedToken::from(tokens[i as usize].to_string(), true))
            .collect();
        let control_ids: HashSet<u32> = typed(&[TOKEN_TYPE_CONTROL]).into_iter().collect();
        inner.add_special_tokens(&special);

        let id = |k: &str| -> Result<Option<u32>, TokenizerError> {
            Ok(g.opt_u64(k)?.filter(|&v| (v as usize) < tokens.len()).map(|v| v as u32))
        };
        let bos = id("tokenizer.ggml.bos_token_id")?;
        let eos = id("tokenizer.ggml.eos_token_id")?;
        let mut stop: HashSet<u32> = [
            eos,
            id("tokenizer.ggml.eot_token_id")?,
            id("tokenizer.ggml.eom_token_id")?,
        ]
        .into_iter()
        .flatten()
        .collect();
        // llama.cpp also stops on control tokens it recognises as end-of-turn by name.
        for (i, t) in tokens.iter().enumerate() {
            let is_control = types.as_ref().is_some_and(|ty| ty.get(i) == Some(&TOKEN_TYPE_CONTROL));
            if is_control
                && matches!(
                    *t,
                    "<|im_end|>" | "<|eot_id|>" | "<|end_of_text|>" | "<|endoftext|>" | "<end_of_turn>" | "<|end|>"
                )
            {
                stop.insert(i as u32);
            }
        }
        Ok(Self {
            inner,
            bos,
            eos,
            // llama.cpp's default: SentencePiece vocabularies start with BOS, BPE ones do not.
            add_bos: g
                .opt_bool("tokenizer.ggml.add_bos_token")?
                .unwrap_or(model_name == "llama"),
            stop,
            control_ids,
            model_name,
            pre,
            vocab_size: tokens.len(),
            n_merges,
            n_special: special.len(),
        })
    }

    /// Token ids of `text` exactly as written: special tokens such as `<|im_start|>` in the text
    /// become their ids; BOS is added when the GGUF's `add_bos_token` asks for it.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        self.encode_with_bos(text, self.add_bos)
    }

    /// As [`Tokenizer::encode`] with BOS chosen by the caller. Unlike llama.cpp (which warns),
    /// a text that already begins with BOS (e.g. from a Llama 3 chat template) does not get a
    /// second one.
    pub fn encode_with_bos(&self, text: &str, add_bos: bool) -> Result<Vec<u32>, TokenizerError> {
        let enc = self.inner.encode_fast(text, false).map_err(lib_err)?;
        let mut ids = enc.get_ids().to_vec();
        if let (true, Some(bos)) = (add_bos, self.bos)
            && ids.first() != Some(&bos)
        {
            ids.insert(0, bos);
        }
        Ok(ids)
    }

    /// Text of `ids`, special tokens included as written.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        self.inner.decode(ids, false).map_err(lib_err)
    }

    /// A decoder that turns ids into text as they arrive, holding back partial UTF-8 sequences.
    pub fn stream(&self) -> TextStream<'_> {
        TextStream {
            inner: self.inner.decode_stream(false),
        }
    }

    pub fn is_stop(&self, id: u32) -> bool {
        self.stop.contains(&id)
    }

    pub fn token_text(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Each id as a reader should see it: its text, whether it is a control token, and the
    /// bytes it stands for when they are not UTF-8 on their own (SentencePiece's byte-fallback
    /// pieces such as `<0xE6>`, byte-level BPE pieces holding part of a character).
    pub fn pieces(&self, ids: &[u32]) -> Vec<Piece> {
        ids.iter()
            .map(|&id| {
                let raw = self.token_text(id).unwrap_or_default();
                let special = self.control_ids.contains(&id);
                let bytes: Option<Vec<u8>> = match self.model_name.as_str() {
                    _ if special => None,
                    "llama" => raw
                        .strip_prefix("<0x")
                        .and_then(|h| h.strip_suffix('>'))
                        .filter(|h| h.len() == 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .map(|b| vec![b]),
                    _ => raw
                        .chars()
                        .map(crate::synthetic::char_to_byte)
                        .collect::<Option<Vec<u8>>>()
                        .filter(|b| std::str::from_utf8(b).is_err()),
                };
                let text = if special || bytes.is_some() {
                    raw
                } else {
                    self.decode(&[id]).unwrap_or(raw)
                };
                Piece {
                    id,
                    text,
                    special,
                    bytes,
                }
            })
            .collect()
    }
}

/// One token of a text, for display ([`Tokenizer::pieces`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Piece {
    pub id: u32,
    pub text: String,
    pub special: bool,
    /// The raw bytes, only where they are not text by themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Vec<u8>>,
}

pub struct TextStream<'a> {
    inner: tokenizers::tokenizer::DecodeStream<
        'a,
        tokenizers::ModelWrapper,
        tokenizers::NormalizerWrapper,
        tokenizers::PreTokenizerWrapper,
        tokenizers::PostProcessorWrapper,
        tokenizers::DecoderWrapper,
    >,
}

impl TextStream<'_> {
    /// The text this id completes, if any.
    pub fn step(&mut self, id: u32) -> Result<Option<String>, TokenizerError> {
        self.inner.step(id).map_err(lib_err)
    }
}

/// A per-token array (types, scores) that is present must have one entry per token: a file
/// where they disagree is malformed, and indexing one by the other would read past its end.
fn same_length(key: &'static str, len: Option<usize>, tokens: usize) -> Result<(), TokenizerError> {
    match len {
        Some(len) if len != tokens => Err(TokenizerError::LengthMismatch { key, len, tokens }),
        _ => Ok(()),
    }
}

fn gpt2_bpe(tokens: &[&str], merges: &[&str], pre: &str) -> Result<(tokenizers::Tokenizer, usize), TokenizerError> {
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as u32))
        .collect();
    let merges = merges
        .iter()
        .enumerate()
        .map(|(index, m)| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| TokenizerError::BadMerge {
                    index,
                    merge: m.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let n_merges = merges.len();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(lib_err)?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    inner.with_pre_tokenizer(Some(pre_tokenizer(pre)?));
    inner.with_decoder(Some(ByteLevelDecoder::default()));
    Ok((inner, n_merges))
}

/// SentencePiece as BPE: every split of a piece into two pieces of the vocabulary is a merge,
/// ranked by the merged piece's score (highest first; ties by piece id, then the halves' ids).
fn spm_bpe(
    tokens: &[&str],
    scores: &[f32],
    unk: Option<&str>,
    space_prefix: bool,
) -> Result<(tokenizers::Tokenizer, usize), TokenizerError> {
    let index: HashMap<&str, u32> = tokens.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
    let score = |id: usize| scores.get(id).copied().unwrap_or(0.0);
    let mut ranked: Vec<(f32, u32, u32, u32)> = Vec::new();
    for (id, piece) in tokens.iter().enumerate() {
        for (at, _) in piece.char_indices().skip(1) {
            if let (Some(&l), Some(&r)) = (index.get(&piece[..at]), index.get(&piece[at..])) {
                ranked.push((score(id), id as u32, l, r));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3))));
    let merges: Vec<(String, String)> = ranked
        .iter()
        .map(|&(_, _, l, r)| (tokens[l as usize].to_string(), tokens[r as usize].to_string()))
        .collect();
    let n_merges = merges.len();
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as u32))
        .collect();
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(unk) = unk {
        builder = builder.unk_token(unk.to_string());
    }
    let mut inner = tokenizers::Tokenizer::new(builder.build().map_err(lib_err)?);
    let replace = Replace::new(" ", SPM_SPACE).map_err(lib_err)?;
    let mut normalizers: Vec<NormalizerWrapper> = Vec::new();
    if space_prefix {
        normalizers.push(Prepend::new(SPM_SPACE.to_string()).into());
    }
    normalizers.push(replace.into());
    inner.with_normalizer(Some(NormalizerSequence::new(normalizers)));
    let decoders: Vec<DecoderWrapper> = vec![
        Replace::new(SPM_SPACE, " ").map_err(lib_err)?.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    // No Strip of the leading space: llama.cpp's detokenizer keeps it, and a continuation's
    // first piece ("▁Paris") must keep its space after the prompt.
    inner.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok((inner, n_merges))
}

fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, TokenizerError> {
    let byte_level = ByteLevel::default().add_prefix_space(false);
    let split = |pattern: &str| -> Result<PreTokenizerWrapper, TokenizerError> {
        let split = Split::new(
            SplitPattern::Regex(pattern.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(lib_err)?;
        Ok(Sequence::new(vec![split.into(), byte_level.use_regex(false).into()]).into())
    };
    match pre {
        // GPT-2's regex, inside ByteLevel.
        "default" | "gpt2" | "gpt-2" => Ok(byte_level.into()),
        // llama.cpp: "\p{N}" first, then GPT-2's regex: every digit is its own piece.
        "smollm" | "starcoder" | "refact" | "codeshell" => {
            Ok(Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into())
        }
        "llama-bpe" | "llama3" | "llama-v3" | "smaug-bpe" => split(LLAMA3_SPLIT),
        "qwen2" | "deepseek-r1-qwen" => split(QWEN2_SPLIT),
        other => Err(TokenizerError::UnsupportedPre(other.to_string())),
    }
}
