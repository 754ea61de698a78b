//! The explanations beside the live numbers, in our own words, each with its source. Figures
//! in the text come from `tokscope_core` (reading pace, the worked roofline example), not typed.

use leptos::prelude::*;
use tokscope_core::meter::{READING_WPM, WORDS_PER_TOKEN, reading_tok_s};
use tokscope_core::roofline::Inputs;

struct Topic {
    id: &'static str,
    title: &'static str,
    body: String,
    source: &'static str,
}

fn topics() -> Vec<Topic> {
    let worked = Inputs::default().estimate().expect("the default inputs are valid");
    let eight_bit = Inputs {
        bits_per_weight: 8.0,
        ..Default::default()
    }
    .estimate()
    .expect("valid");
    vec![
        Topic {
            id: "prefill-decode",
            title: "Prefill and decode are different jobs",
            body: "Prefill reads your whole prompt in one pass: every weight is fetched once and used for all \
                   prompt tokens, so the chip's arithmetic is the limit, and it sets the time to the first token. \
                   Decode then writes one token per pass, fetching every weight again for a single token: memory \
                   bandwidth is the limit. That is why the meter shows prefill in hundreds of tokens per second and \
                   decode in tens."
                .into(),
            source: "Databricks, \"LLM Inference Performance Engineering: Best Practices\" (2023)",
        },
        Topic {
            id: "pipe",
            title: "A pipe, not a pump",
            body: format!(
                "Think of the weights flowing through a pipe from memory to the cores once per token. The width of the \
                 pipe (bandwidth) sets the rate, not the strength of the pump (FLOP/s). Llama 3.1 8B at 16 bits is \
                 {:.2} GB per token; on 1 TB/s that is at most {:.0} tokens per second, and at 8 bits, half the bytes, \
                 {:.0}. The roofline panel computes exactly this.",
                worked.bytes_per_step / 1e9,
                worked.per_user_tok_s,
                eight_bit.per_user_tok_s
            ),
            source: "Williams, Waterman & Patterson, \"Roofline\" (CACM 2009); Databricks (2023)",
        },
        Topic {
            id: "dials",
            title: "The four dials",
            body: "Four things move decode speed: bytes per weight (precision: 16, 8, 4 bits), parameters read per \
                   token (model size, or a mixture of experts' active share), memory bandwidth (the device), and how \
                   many sequences share each read (batch). The first three set the ceiling for one user; the fourth \
                   trades one user's speed for everyone's."
                .into(),
            source: "Databricks (2023): MBU and the batch-size experiments",
        },
        Topic {
            id: "latency-throughput",
            title: "Latency is not throughput",
            body: "A server decoding 64 sequences reads the weights once for all of them, so its total tokens per \
                   second grow almost 64-fold while each user's rate barely moves, until the arithmetic catches up \
                   with the bytes at the ridge point. A vendor's \"tokens per second\" may be either number: ask which."
                .into(),
            source: "Databricks (2023); the roofline panel's batch and ridge figures",
        },
        Topic {
            id: "fixed-cost",
            title: "Why small models miss the roofline",
            body: "Each token also pays a fixed cost: launching dozens of GPU kernels, barriers between them, \
                   submitting the work and waiting until the browser learns it is done. For an 8B model that is noise \
                   beside 16 GB of reads; for a 135M model, whose weights stream in a fraction of a millisecond, it can \
                   be most of the time. The speed check measures the cost per dispatch and the completion latency on \
                   your device; where the browser learns of finished work only on a timer (Firefox: every 100 ms), that \
                   tick sets the speed of a small model, whatever the GPU."
                .into(),
            source: "Measured by this project's probe; DESIGN.md (≈29 µs per dispatch, ≈0.6 ms per round trip on SwiftShader); \
                     Mozilla bug 1870699 (Firefox polls WebGPU from a 100 ms timer)",
        },
        Topic {
            id: "reading",
            title: "How fast is fast enough",
            body: format!(
                "People read about {READING_WPM:.0} words a minute; at {WORDS_PER_TOKEN} words a token that is \
                 {:.1} tokens per second. Below about 5 tok/s text feels broken, 20–40 is comfortable chat, and \
                 hundreds are for programs, not eyes — which is where agents live: every step's tokens add up.",
                reading_tok_s()
            ),
            source: "Brysbaert, \"How many words do we read per minute?\" (2019, 190 studies, 18,573 readers)",
        },
        Topic {
            id: "tokenizers",
            title: "Tokens are not words, and not the same everywhere",
            body: "Two models can take different numbers of tokens for the same text: Llama 2's tokenizer makes about \
                   19 % more tokens than ChatGPT's for the same English. Compare speeds in words per minute, or with \
                   the same tokenizer."
                .into(),
            source: "Anyscale's comparison of Llama 2 and ChatGPT token counts for the same text (as collected in DESIGN.md)",
        },
        Topic {
            id: "misconceptions",
            title: "Common misconceptions",
            body: "\"More TFLOP/s means faster chat\": not at batch 1, where bandwidth binds. \"A 4-bit model is less \
                   work\": the same arithmetic, a quarter of the bytes, so nearly four times the speed. \"Tokens per \
                   second is one number\": per user and aggregate differ by the batch size. \"A claimed speed follows \
                   from the hardware\": check it against bandwidth ÷ bytes; a model that beats that ceiling is not \
                   making one token per read of its weights (speculative decoding, diffusion models)."
                .into(),
            source: "This project's roofline and agent panels; DESIGN.md's vendor claims",
        },
    ]
}

#[component]
pub fn Explainers() -> impl IntoView {
    view! {
        <section class="card explainers" id="learn" aria-labelledby="learn-h">
            <h2 id="learn-h">"Why the numbers are what they are"</h2>
            {topics().into_iter().map(|t| view! {
                <details id=t.id data-testid=format!("learn-{}", t.id)>
                    <summary>{t.title}</summary>
                    <p>{t.body}</p>
                    <p class="source">"Source: " {t.source}</p>
                </details>
            }).collect_view()}
        </section>
    }
}
