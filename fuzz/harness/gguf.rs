//! A model file from a stranger, through everything the page and the CLI do with one before
//! the first token: parse, tokenizer, the model's description, an engine with a short context
//! and one decoded token. Any panic, hang or huge allocation here is a bug: every malformed
//! file must come back as an error.

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::tokenizer::Tokenizer;

/// One input through the pipeline; panics on a bug.
pub fn run(data: &[u8]) {
    let Ok(gguf) = Gguf::parse(data) else { return };
    for (key, value) in gguf.metadata() {
        std::hint::black_box((key, value.describe()));
    }
    let parameters: u64 = gguf.tensors().iter().map(|t| t.n_elements()).sum();
    std::hint::black_box(parameters);
    if let Ok(tokenizer) = Tokenizer::from_gguf(&gguf)
        && let Ok(ids) = tokenizer.encode("The capital of France is <|im_start|> 東京 🦀")
    {
        let _ = tokenizer.decode(&ids);
        std::hint::black_box(tokenizer.pieces(&ids));
    }
    let Ok(model) = Model::from_gguf(gguf) else { return };
    std::hint::black_box(model.bytes_per_token(0, 2));
    let Ok(mut engine) = CpuEngine::new(Arc::new(model), 4) else {
        return;
    };
    let _ = engine.decode(0);
}
