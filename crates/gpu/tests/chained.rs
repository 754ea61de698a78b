#![cfg(not(target_arch = "wasm32"))]
//! Chained greedy decode (chain.rs, chained.rs) against one step per submit on the same
//! adapter: the same tokens for every chunk length, and where a chain stops mid-chunk (end of
//! text, max tokens, Stop) the cache holds what the step-at-a-time loop would, so decoding
//! continues alike; the context limit bounds the chunks.

mod common;
#[path = "common/compare.rs"]
#[allow(dead_code, reason = "the other comparisons share this module")]
mod compare;

use compare::tiny_model;
use std::sync::Arc;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::sampling::{Sampler, SamplingParams};
use tokscope_core::shaped::ShapeSpec;
use tokscope_gpu::chained::Chained;
use tokscope_gpu::decode::{Chain, Decode};
use tokscope_gpu::engine::{GpuEngine, Want};
use tokscope_gpu::runner::Runner;

const PROMPT: [u32; 5] = [1, 77, 104, 105, 200];

fn engine(ctx: &Arc<tokscope_gpu::GpuContext>, model: &Arc<Model<Vec<u8>>>, context: usize) -> GpuEngine<Vec<u8>> {
    GpuEngine::new(ctx.clone(), model.clone(), context, |_, _| {}).unwrap()
}

/// The first generated token and `n` more, one step per submit.
fn one_step(e: &mut GpuEngine<Vec<u8>>, n: usize) -> Vec<u32> {
    e.reset();
    let mut t = e.prefill(&PROMPT, Want::Top(1)).unwrap().into_top()[0].1;
    let mut out = vec![t];
    for _ in 0..n {
        t = e.decode_top(t, 1).unwrap()[0].1;
        out.push(t);
    }
    out
}

fn greedy() -> Sampler {
    Sampler::new(SamplingParams::default()).unwrap()
}

fn now() -> f64 {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
}

/// The first generated token and up to `n` more, chained in chunks of `k` (`None`: chosen).
fn chained(e: &mut GpuEngine<Vec<u8>>, n: usize, k: Option<usize>) -> Vec<u32> {
    e.reset();
    let first = e.prefill(&PROMPT, Want::Top(1)).unwrap().into_top()[0].1;
    let mut out = vec![first];
    let mut c = Chained::start(e, &mut greedy(), first, n, k, now()).unwrap();
    loop {
        let chunk = c.next_blocking(e, &mut greedy(), &now).unwrap();
        if chunk.is_empty() {
            break;
        }
        out.extend(chunk);
    }
    assert_eq!(e.position(), PROMPT.len() + n, "every step's token in the cache");
    out
}

fn models() -> Vec<(String, Arc<Model<Vec<u8>>>)> {
    let mut m: Vec<(String, Arc<Model<Vec<u8>>>)> = [
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_1,
        GgmlType::F16,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
    ]
    .into_iter()
    .map(|ty| (format!("tiny {ty} (own embedding)"), tiny_model(ty)))
    .collect();
    for id in ["tiny", "gemma3-270m"] {
        let spec = ShapeSpec::by_id(id).unwrap();
        let spec = ShapeSpec {
            layers: spec.layers.min(2),
            ..*spec
        };
        let bytes = spec.build(GgmlType::Q8_0, 3).unwrap();
        m.push((format!("{id} Q8_0 (tied head)"), Arc::new(Model::load(bytes).unwrap())));
    }
    m
}

#[test]
fn chained_steps_choose_the_tokens_one_step_at_a_time_does() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    for (name, model) in models() {
        let mut e = engine(&ctx, &model, 64);
        assert!(e.looks_up_embedding(), "{name}");
        let want = one_step(&mut e, 23);
        for k in [Some(1), Some(3), Some(7), Some(64), None] {
            assert_eq!(chained(&mut e, 23, k), want, "{name}, chunks of {k:?}");
        }
    }
}

#[test]
fn a_chain_stopped_mid_chunk_leaves_the_cache_a_step_at_a_time_decode_would() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = tiny_model(GgmlType::Q4_1);
    let mut e = engine(&ctx, &model, 64);
    let want = one_step(&mut e, 20);
    // Stop after taking `used` tokens of a chunk of 5 (0: at the prefill's token, before any
    // chunk), as end of text, max tokens or Stop do; then decode on one step at a time.
    for (chunks, used) in [(0, 0), (1, 2), (1, 5), (2, 1), (2, 4)] {
        e.reset();
        let first = e.prefill(&PROMPT, Want::Top(1)).unwrap().into_top()[0].1;
        let mut c = Chained::start(&mut e, &mut greedy(), first, 20, Some(5), now()).unwrap();
        let mut taken = vec![first];
        for _ in 0..chunks {
            taken = vec![*taken.last().unwrap()];
            taken.extend(c.next_blocking(&mut e, &mut greedy(), &now).unwrap());
        }
        let stop_at = *taken.get(used).unwrap_or(&first);
        let seen = if chunks == 0 { 0 } else { 5 * (chunks - 1) + used };
        assert_eq!(stop_at, want[seen], "chunks {chunks}, used {used}");
        c.stop(&mut e, used);
        assert_eq!(e.position(), PROMPT.len() + seen, "chunks {chunks}, used {used}");
        // The token the caller stopped at was not appended: decoding it now goes on alike.
        let mut t = stop_at;
        for (i, w) in want[seen + 1..seen + 4].iter().enumerate() {
            t = e.decode_top(t, 1).unwrap()[0].1;
            assert_eq!(t, *w, "chunks {chunks}, used {used}, step {i} after the stop");
        }
    }
}

#[test]
fn chains_end_at_the_context_limit() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = tiny_model(GgmlType::Q8_0);
    let capacity = PROMPT.len() + 9;
    let mut e = engine(&ctx, &model, capacity);
    let want = one_step(&mut e, 9);
    assert_eq!(e.position(), capacity);
    // A budget of the context's room: chunks of 4, 4, 1.
    assert_eq!(chained(&mut e, 9, Some(4)), want);
    assert_eq!(e.position(), capacity);
    // One more step does not fit: an error, not a write past the cache.
    e.truncate(capacity);
    let err = e.submit_chain(Some(1), 1, &[]).unwrap_err().to_string();
    assert!(err.contains("context"), "{err}");
}

/// A seeded sampled decode through the runner (what the CLI and the page run): the GPU samples
/// from its top-k candidates with the host's draws, one step a submit or chained alike; with
/// every logit wanted (no top-k cut) the host samples, one step a submit.
#[test]
fn a_seeded_sampled_decode_chains_to_the_same_text() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    let model = tiny_model(GgmlType::Q8_0);
    let params = SamplingParams {
        temperature: 1.3,
        top_k: 20,
        top_p: 0.9,
        seed: 11,
    };
    let run = |chain: Chain, params: SamplingParams| {
        let mut r = Runner::gpu(ctx.clone(), model.clone(), 64, |_, _| {}).unwrap();
        let mut s = Sampler::new(params).unwrap();
        let first = r.prefill(&PROMPT, &mut s).unwrap();
        let mut d = Decode::start(&mut r, &mut s, first, 30, chain, now()).unwrap();
        let chained = d.is_chained();
        let mut out = vec![first];
        for _ in 0..30 {
            out.push(d.next_blocking(&mut r, &mut s, &now).unwrap().0);
        }
        d.stop(&mut r);
        (out, chained)
    };
    let (want, chained) = run(Chain::Off, params);
    assert!(!chained);
    for chain in [Chain::Fixed(1), Chain::Fixed(4), Chain::Auto] {
        let (got, chained) = run(chain, params);
        assert!(chained, "{chain:?}");
        assert_eq!(got, want, "{chain:?}");
    }
    // Another seed draws other tokens; the sampler is not greedy in disguise.
    let (other, _) = run(Chain::Auto, SamplingParams { seed: 12, ..params });
    assert_ne!(other, want);
    let greedy_text = run(Chain::Off, SamplingParams::default()).0;
    assert_ne!(greedy_text, want);
    // No top-k cut: every logit is read back and the host samples, one step a submit.
    let (_, chained) = run(Chain::Auto, SamplingParams { top_k: 0, ..params });
    assert!(!chained);
}
