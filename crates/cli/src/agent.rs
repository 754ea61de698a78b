//! `tokscope agent`: the agent-step simulator of the agent panel, on the command line.

use crate::CliResult;
use crate::args::{AgentArgs, OnOff};
use tokscope_core::agent::AgentInputs;
use tokscope_core::human::duration;

pub fn run(a: AgentArgs) -> CliResult {
    let inputs = AgentInputs {
        steps: a.steps,
        output_tokens: a.output_tokens,
        reasoning_tokens: a.reasoning_tokens,
        prompt_tokens: a.prompt_tokens,
        tool_tokens: a.tool_tokens,
        prefill_tok_s: a.prefill_tok_s,
        prefix_cache: a.prefix_cache == OnOff::On,
        ttft_s: a.ttft_s,
        tool_s: a.tool_s,
        decode_tok_s: a.tok_s,
    };
    let r = inputs.simulate().map_err(|e| e.to_string())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!("step  context  prefilled    ttft  prefill   decode     tool     ends at");
    for s in &r.steps {
        println!(
            "{:>4} {:>8} {:>10} {:>7} {:>8} {:>8} {:>8} {:>11}",
            s.index + 1,
            s.context_tokens,
            s.prefill_tokens,
            duration(s.ttft_s),
            duration(s.prefill_s),
            duration(s.decode_s),
            duration(s.tool_s),
            duration(s.end_s)
        );
    }
    println!(
        "total {} = decode {} + prefill {} + tools {} + first-token waits {}; {} tokens decoded",
        duration(r.total_s),
        duration(r.decode_s),
        duration(r.prefill_s),
        duration(r.tool_s),
        duration(r.ttft_s),
        r.tokens
    );
    println!("{}", r.explain(&inputs));
    Ok(())
}
