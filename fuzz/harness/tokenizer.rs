//! Tokenizers built from hostile `tokenizer.ggml.*` metadata: vocabularies, merges, scores,
//! token types and special ids that a GGUF may carry, around the test vocabulary or from
//! nothing, then used on arbitrary text (encode, decode, streaming decode, display pieces).

use arbitrary::{Arbitrary, Unstructured};
use tokscope_core::gguf::{Gguf, GgufWriter, Value, ValueType};
use tokscope_core::synthetic;
use tokscope_core::tokenizer::Tokenizer;

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    /// 0: "gpt2", 1: "llama", else this text.
    model: (u8, &'a str),
    /// 0..6: a known pre-tokenizer; else this text; absent when `None`.
    pre: Option<(u8, &'a str)>,
    /// Start from the tiny test vocabulary (and its merges/scores) before the extra tokens.
    base: bool,
    extra_tokens: Vec<&'a str>,
    /// Merges as pairs of token indices (likely valid) and as raw strings (likely not).
    merge_pairs: Vec<(u16, u16)>,
    raw_merges: Vec<&'a str>,
    types: Option<Vec<i32>>,
    scores: Option<Vec<f32>>,
    /// Keep the types' and scores' lengths as given; else fit them to the vocabulary (padding
    /// with normal tokens and zero scores), so most inputs get past the length check.
    lengths_as_given: bool,
    ids: [Option<u32>; 4],
    add_bos: Option<bool>,
    space_prefix: Option<bool>,
    text: &'a str,
    decode: Vec<u32>,
}

const PRES: [&str; 6] = ["default", "smollm", "llama-bpe", "qwen2", "gpt2", "starcoder"];
const ID_KEYS: [&str; 4] = ["bos_token_id", "eos_token_id", "eot_token_id", "unknown_token_id"];

fn strings(xs: impl IntoIterator<Item = String>) -> Value {
    Value::Array(ValueType::String, xs.into_iter().map(Value::String).collect())
}

/// Builds a tokenizer from the metadata `data` describes and uses it.
pub fn run(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let spm = input.model.0 == 1;
    let model = match input.model.0 {
        0 => "gpt2",
        1 => "llama",
        _ => input.model.1,
    };
    let (mut tokens, mut types, mut scores, mut merges) = match (input.base, spm) {
        (false, _) => (vec![], vec![], vec![], vec![]),
        (true, false) => {
            let merges = synthetic::MERGES.iter().map(|(a, b)| format!("{a} {b}")).collect();
            (synthetic::vocab(), vec![], vec![], merges)
        }
        (true, true) => {
            let (pieces, types, scores) = synthetic::spm_vocab();
            (pieces, types, scores, vec![])
        }
    };
    tokens.extend(input.extra_tokens.iter().map(|t| t.to_string()));
    merges.extend(
        input
            .merge_pairs
            .iter()
            .filter_map(|&(a, b)| Some(format!("{} {}", tokens.get(a as usize)?, tokens.get(b as usize)?))),
    );
    merges.extend(input.raw_merges.iter().map(|m| m.to_string()));
    types.extend(input.types.iter().flatten());
    scores.extend(input.scores.iter().flatten());
    if !input.lengths_as_given {
        types.resize(tokens.len(), 1);
        scores.resize(tokens.len(), 0.0);
    }

    let mut w = GgufWriter::new();
    w.meta("tokenizer.ggml.model", Value::String(model.into()))
        .meta("tokenizer.ggml.tokens", strings(tokens))
        .meta("tokenizer.ggml.merges", strings(merges));
    if let Some((i, text)) = input.pre {
        let pre = PRES.get(i as usize).copied().unwrap_or(text);
        w.meta("tokenizer.ggml.pre", Value::String(pre.into()));
    }
    if input.types.is_some() || input.base {
        w.meta(
            "tokenizer.ggml.token_type",
            Value::Array(ValueType::I32, types.into_iter().map(Value::I32).collect()),
        );
    }
    if input.scores.is_some() || input.base {
        w.meta(
            "tokenizer.ggml.scores",
            Value::Array(ValueType::F32, scores.into_iter().map(Value::F32).collect()),
        );
    }
    for (key, id) in ID_KEYS.iter().zip(input.ids) {
        if let Some(id) = id {
            w.meta(&format!("tokenizer.ggml.{key}"), Value::U32(id));
        }
    }
    if let Some(b) = input.add_bos {
        w.meta("tokenizer.ggml.add_bos_token", Value::Bool(b));
    }
    if let Some(b) = input.space_prefix {
        w.meta("tokenizer.ggml.add_space_prefix", Value::Bool(b));
    }
    let bytes = w.to_bytes();
    let gguf = Gguf::parse(bytes.as_slice()).expect("the writer's output parses");
    let Ok(tokenizer) = Tokenizer::from_gguf(&gguf) else {
        return;
    };
    if let Ok(ids) = tokenizer.encode(input.text) {
        let _ = tokenizer.decode(&ids);
        std::hint::black_box(tokenizer.pieces(&ids));
    }
    let _ = tokenizer.decode(&input.decode);
    std::hint::black_box(tokenizer.pieces(&input.decode));
    let mut stream = tokenizer.stream();
    for &id in &input.decode {
        if stream.step(id).is_err() {
            break;
        }
    }
}
