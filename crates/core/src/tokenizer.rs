//! The model's own tokenizer, rebuilt from its GGUF `tokenizer.ggml.*` keys with the
//! `tokenizers` crate, so text becomes the same ids llama.cpp makes (checked by fixtures).
//!
//! Pre-tokenizer regexes per `tokenizer.ggml.pre`: llama.cpp `llama_vocab::impl::load`
//! (src/llama-vocab.cpp) and the matching HF `tokenizer.json` files.

use crate::gguf::{Gguf, GgufError};
use std::collections::HashSet;
use thiserror::Error;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

/// `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

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
        "tokenizer model {0:?} is not supported yet (tokscope reads \"gpt2\" byte-level BPE vocabularies; SentencePiece \"llama\" vocabularies such as TinyLlama's are planned)"
    )]
    UnsupportedModel(String),
    #[error("pre-tokenizer {0:?} is not supported (known: smollm, starcoder, gpt2, default, llama-bpe, qwen2)")]
    UnsupportedPre(String),
    #[error("tokenizer.ggml.merges entry #{index} {merge:?} is not two tokens separated by a space")]
    BadMerge { index: usize, merge: String },
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
    pub model_name: String,
    pub pre: String,
    pub vocab_size: usize,
    pub n_merges: usize,
    pub n_special: usize,
}

impl Tokenizer {
    pub fn from_gguf<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<Self, TokenizerError> {
        let model_name = g.get_str("tokenizer.ggml.model")?.to_string();
        if model_name != "gpt2" {
            return Err(TokenizerError::UnsupportedModel(model_name));
        }
        let pre = g.opt_str("tokenizer.ggml.pre")?.unwrap_or("default").to_string();
        let tokens = g.get_str_array("tokenizer.ggml.tokens")?;
        let merges = g.get_str_array("tokenizer.ggml.merges")?;
        let types = g.opt_int_array("tokenizer.ggml.token_type")?;

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
        inner.with_pre_tokenizer(Some(pre_tokenizer(&pre)?));
        inner.with_decoder(Some(ByteLevelDecoder::default()));

        let special: Vec<AddedToken> = types
            .iter()
            .flatten()
            .enumerate()
            .filter(|(_, ty)| matches!(**ty, TOKEN_TYPE_CONTROL | TOKEN_TYPE_USER_DEFINED))
            .map(|(i, _)| AddedToken::from(tokens[i].to_string(), true))
            .collect();
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
            add_bos: g.opt_bool("tokenizer.ggml.add_bos_token")?.unwrap_or(false),
            stop,
            model_name,
            pre,
            vocab_size: tokens.len(),
            n_merges,
            n_special: special.len(),
        })
    }

    /// Token ids of `text` exactly as written: special tokens such as `<|im_start|>` in the text
    /// become their ids; BOS is added only when `add_bos` is set and the text does not already
    /// begin with it.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let enc = self.inner.encode_fast(text, false).map_err(lib_err)?;
        let mut ids = enc.get_ids().to_vec();
        if let (true, Some(bos)) = (self.add_bos, self.bos)
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
