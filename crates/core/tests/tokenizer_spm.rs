//! SentencePiece ("llama") vocabularies against llama.cpp, on the synthetic vocabulary of
//! `synthetic::spm_vocab` (written by `cargo xtask tiny-model --spm`; fixture recorded with
//! `scripts/llamacpp_reference.py --tokenizer-only`). Needs no download.

use serde::Deserialize;
use tokscope_core::gguf::Gguf;
use tokscope_core::synthetic::TinyLlama;
use tokscope_core::tokenizer::Tokenizer;

#[derive(Deserialize)]
struct Case {
    text: String,
    ids: Vec<u32>,
    decoded: String,
    ids_with_bos: Vec<u32>,
}

#[test]
fn spm_tokenizer_matches_llamacpp() {
    let g = Gguf::parse(
        TinyLlama {
            spm: true,
            ..Default::default()
        }
        .build(),
    )
    .unwrap();
    let tok = Tokenizer::from_gguf(&g).unwrap();
    assert!(
        tok.add_bos,
        "SentencePiece vocabularies default to BOS, as in llama.cpp"
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/llamacpp/tokenizer_spm.json"
    );
    let cases: Vec<Case> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(cases.len() >= 30);
    let mut failures = vec![];
    for c in &cases {
        let ids = tok.encode_with_bos(&c.text, false).unwrap();
        if ids != c.ids {
            failures.push(format!("{:?}: ours {ids:?}, llama.cpp {:?}", c.text, c.ids));
            continue;
        }
        let text = tok.decode(&ids).unwrap();
        if text != c.decoded {
            failures.push(format!("decode {:?}: ours {text:?}, llama.cpp {:?}", c.ids, c.decoded));
        }
        // llama.cpp adds a second BOS to a text that starts with one (and warns); we do not.
        let expected_bos = if c.ids.first() == Some(&1) {
            &c.ids_with_bos[1..]
        } else {
            &c.ids_with_bos[..]
        };
        assert_eq!(tok.encode(&c.text).unwrap(), expected_bos, "{:?}", c.text);
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn spm_model_generates_from_the_cli_path() {
    use std::sync::Arc;
    use tokscope_core::cpu::CpuEngine;
    use tokscope_core::model::Model;
    let model = Arc::new(
        Model::load(
            TinyLlama {
                spm: true,
                ..Default::default()
            }
            .build(),
        )
        .unwrap(),
    );
    let tok = Tokenizer::from_gguf(&model.gguf).unwrap();
    let ids = tok.encode("the cat").unwrap();
    assert_eq!(ids[0], 1);
    let mut e = CpuEngine::new(model, 32).unwrap();
    let logits = e.prefill(&ids).unwrap();
    assert_eq!(logits.len(), tok.vocab_size);
}
