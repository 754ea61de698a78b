//! Batched decode: B sequences at different positions, one pass per step, must give each
//! sequence exactly the logits it gets decoded alone (the same kernels, row by row).

use std::sync::Arc;
use tokscope_core::cpu::{CpuEngine, EngineError};
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::synthetic::TinyLlama;

fn model() -> Arc<Model<Vec<u8>>> {
    Arc::new(Model::from_gguf(Gguf::parse(TinyLlama::default().build()).unwrap()).unwrap())
}

#[test]
fn each_sequence_of_a_batch_decodes_as_it_would_alone() {
    let m = model();
    let vocab = m.config.vocab_size;
    let prompts: [&[u32]; 4] = [&[1, 2, 3], &[7, 8, 9, 10, 11], &[42], &[5, 5, 5, 5, 5, 5, 5]];
    let mut batch = CpuEngine::with_sequences(m.clone(), 64, prompts.len()).unwrap();
    let mut alone: Vec<CpuEngine<Vec<u8>>> = prompts.iter().map(|_| CpuEngine::new(m.clone(), 64).unwrap()).collect();
    for (b, p) in prompts.iter().enumerate() {
        let x = batch.prefill_seq(b, p).unwrap().to_vec();
        assert_eq!(x, alone[b].prefill(p).unwrap());
    }
    let mut next: Vec<u32> = vec![3, 17, 100, 250];
    for step in 0..6 {
        let logits = batch.decode_batch(&next).unwrap().to_vec();
        for (b, e) in alone.iter_mut().enumerate() {
            let single = e.decode(next[b]).unwrap();
            assert_eq!(&logits[b * vocab..(b + 1) * vocab], single, "sequence {b}, step {step}");
        }
        next = next.iter().map(|t| (t * 31 + 7) % vocab as u32).collect();
    }
}

#[test]
fn a_full_sequence_stops_the_batch_with_a_clear_error() {
    let mut batch = CpuEngine::with_sequences(model(), 4, 2).unwrap();
    batch.prefill_seq(1, &[1, 2, 3, 4]).unwrap();
    let e = batch.decode_batch(&[1, 1]).unwrap_err();
    assert_eq!(e, EngineError::ContextFull { needed: 5, capacity: 4 });
}
