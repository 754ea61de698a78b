//! The bad model files a reader of GGUFs must refuse by name, made from the tiny test model:
//! one per row of the "bad input" table in ARCHITECTURE.md. The CLI's and the page's tests load
//! each and look for its message; the fuzzers start from them.

use crate::gguf::Value;
use crate::quant::GgmlType;
use crate::synthetic::TinyLlama;

pub struct Malformed {
    /// A file name saying what is wrong.
    pub file: &'static str,
    pub bytes: Vec<u8>,
    /// Words the reader's message contains.
    pub says: &'static str,
}

/// Every malformed variant of the default tiny model.
pub fn malformed_models() -> Vec<Malformed> {
    let spec = TinyLlama::default();
    let good = spec.build();
    let edited = |edit: &dyn Fn(&mut crate::gguf::GgufWriter)| {
        let mut w = spec.writer();
        edit(&mut w);
        w.to_bytes()
    };
    let set = |key: &'static str, value: Value| {
        edited(&move |w| {
            let entry = w
                .metadata
                .iter_mut()
                .find(|(k, _)| k == key)
                .expect("the tiny model has the key");
            entry.1 = value.clone();
        })
    };
    let mut version = good.clone();
    version[4..8].copy_from_slice(&4u32.to_le_bytes());
    let types_long = spec.vocab_size() + 1;
    vec![
        Malformed {
            file: "not-a-model.gguf",
            bytes: b"<!DOCTYPE html><html><body>404 Not Found</body></html>".to_vec(),
            says: "not a GGUF file",
        },
        Malformed {
            file: "truncated.gguf",
            bytes: good[..good.len() / 2].to_vec(),
            says: "truncated",
        },
        Malformed {
            file: "version-4.gguf",
            bytes: version,
            says: "unsupported GGUF version 4",
        },
        Malformed {
            file: "mamba.gguf",
            bytes: set("general.architecture", Value::String("mamba".into())),
            says: "unsupported architecture \"mamba\"",
        },
        Malformed {
            file: "iq4_nl.gguf",
            bytes: edited(&|w| {
                let t = w.tensor_mut("blk.0.attn_v.weight").expect("attn_v");
                t.ty = GgmlType::IQ4_NL;
                t.data = vec![0; 32 * 2 * 18];
            }),
            says: "is IQ4_NL, which tokscope cannot run yet (supported: F32",
        },
        Malformed {
            file: "wrong-shape.gguf",
            // Same element count, other shape: only the model's own description catches it.
            bytes: edited(&|w| {
                let t = w.tensor_mut("blk.0.attn_q.weight").expect("attn_q");
                t.dims = vec![t.dims[0] / 2, t.dims[1] * 2];
            }),
            says: "\"blk.0.attn_q.weight\" has shape [32, 128], expected [64, 64]",
        },
        Malformed {
            file: "zero-heads.gguf",
            bytes: set("llama.attention.head_count", Value::U32(0)),
            says: "bad hyperparameter llama.attention.head_count",
        },
        Malformed {
            file: "block-count-millions.gguf",
            // Found by the fuzzer: the layer list was sized from this before any was read.
            bytes: set("llama.block_count", Value::U32(1 << 24)),
            says: "missing required tensor \"blk.2.attn_norm.weight\"",
        },
        Malformed {
            file: "token-types.gguf",
            bytes: set(
                "tokenizer.ggml.token_type",
                Value::Array(crate::gguf::ValueType::I32, vec![Value::I32(1); types_long]),
            ),
            says: "tokenizer.ggml.token_type has 266 entries for 265 tokens",
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::tokenizer::Tokenizer;

    /// What the page's worker and the CLI do first: parse, tokenizer, model.
    fn load(bytes: &[u8]) -> Result<(), String> {
        let g = crate::gguf::Gguf::parse(bytes).map_err(|e| e.to_string())?;
        Tokenizer::from_gguf(&g).map_err(|e| e.to_string())?;
        Model::from_gguf(g).map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn each_is_refused_with_its_reason() {
        for m in malformed_models() {
            let e = load(&m.bytes).expect_err(m.file);
            assert!(e.contains(m.says), "{}: {e}", m.file);
        }
        assert!(load(&TinyLlama::default().build()).is_ok());
    }
}
