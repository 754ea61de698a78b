//! `tokscope generate`: stream the text to stdout, timings to stderr.

use crate::CliResult;
use crate::args::GenerateArgs;
use crate::engine;
use crate::model_file::load;
use std::io::Write;
use std::time::Instant;
use tokscope_core::cpu::EngineError;
use tokscope_core::prompt::{chat_template, prompt_tokens};
use tokscope_core::sampling::{Sampler, SamplingParams};
use tokscope_gpu::decode::{Decode, why_not_chained};

pub fn run(a: GenerateArgs) -> CliResult {
    let params = SamplingParams {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        seed: a.seed,
    };
    let mut sampler = Sampler::new(params).map_err(|e| e.to_string())?;
    let loaded = load(&a.model)?;
    let tok = &loaded.tokenizer;
    let template = match a.chat {
        true => Some(chat_template(&loaded.model.gguf).map_err(|e| e.to_string())?),
        false => None,
    };
    let tokens = prompt_tokens(tok, template.as_ref(), &a.prompt).map_err(|e| e.to_string())?;
    let max_context = loaded.model.config.context_length;
    let context = a.context.unwrap_or(tokens.len() + a.max_tokens).min(max_context);
    if tokens.len() > context {
        return Err(EngineError::ContextFull {
            needed: tokens.len(),
            capacity: context,
        }
        .to_string());
    }
    let mut engine = engine::new(a.backend, loaded.model.clone(), context)?;

    let start = Instant::now();
    let mut next = engine.prefill(&tokens, &mut sampler).map_err(|e| e.to_string())?;
    let ttft = start.elapsed();
    let mut stream = tok.stream();
    let mut out = std::io::stdout().lock();
    let mut generated = 0;
    let mut note = None;
    let decode_start = Instant::now();
    let now = || decode_start.elapsed().as_secs_f64();
    let budget = (a.max_tokens.saturating_sub(1)).min(context - tokens.len());
    let mut decode =
        Decode::start(&mut engine, &mut sampler, next, budget, a.chain, now()).map_err(|e| e.to_string())?;
    while generated < a.max_tokens {
        if !a.ignore_eos && tok.is_stop(next) {
            break;
        }
        generated += 1;
        if let Some(text) = stream.step(next).map_err(|e| e.to_string())?
            && (out.write_all(text.as_bytes()).is_err() || out.flush().is_err())
        {
            break; // stdout closed (e.g. piped into `head`): stop quietly.
        }
        if generated == a.max_tokens {
            break;
        }
        if decode.full(&engine) {
            note = Some(format!("stopped: context full ({context} tokens)"));
            break;
        }
        next = decode
            .next_blocking(&mut engine, &mut sampler, &now)
            .map_err(|e| e.to_string())?
            .0;
    }
    let decode_s = decode_start.elapsed().as_secs_f64();
    let chained = decode.chained().map(|c| (c.steps_read, c.chunks));
    decode.stop(&mut engine);
    let _ = writeln!(out);
    drop(out);
    let prefill_s = ttft.as_secs_f64();
    eprintln!("prompt tokens: {}", tokens.len());
    eprintln!("time to first token: {:.1} ms", prefill_s * 1e3);
    eprintln!("prefill: {:.1} tok/s", tokens.len() as f64 / prefill_s);
    let steps = generated.saturating_sub(1);
    if steps > 0 {
        eprintln!("decode: {:.1} tok/s ({generated} tokens)", steps as f64 / decode_s);
        match chained {
            Some((steps, chunks)) if chunks > 0 => eprintln!(
                "chained: {steps} steps in {chunks} submits ({:.1} a submit)",
                steps as f64 / chunks as f64
            ),
            _ => eprintln!(
                "chained: no — {}",
                why_not_chained(&mut engine, &sampler, a.chain).unwrap_or_default()
            ),
        }
    } else {
        eprintln!("decode: n/a ({generated} tokens)");
    }
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok(())
}
