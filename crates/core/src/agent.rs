//! The agent-step latency simulator: an agent calls the model N times; each call waits for a
//! first token, prefills what the model has not yet read, decodes its visible and hidden
//! (reasoning) tokens, then waits for a tool before the next call. Tokens per second becomes
//! minutes of waiting.
//!
//! Per step: `ttft + prefilled ÷ prefill_rate + (output + reasoning) ÷ decode_rate`, plus the tool
//! latency after every step but the last. Context model (stated, since APIs differ): step `i`
//! (from 0) sees the prompt plus the visible output and tool result of every earlier step;
//! earlier steps' reasoning is dropped, as reasoning APIs do. With a prefix cache only the tokens
//! the model has not seen are prefilled (the prompt, then each new tool result); without one,
//! the whole context is prefilled every call.
//!
//! Source of the worked example: the project's seeds (DESIGN.md): 12 steps × 800 tokens = 9,600
//! tokens, 320 s at 30 tok/s, 32 s at 300 tok/s.

use crate::human;
use crate::roofline::{InputError, check};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentInputs {
    pub steps: u32,
    /// Visible tokens each step writes.
    pub output_tokens: u64,
    /// Hidden reasoning tokens each step decodes before its output.
    pub reasoning_tokens: u64,
    /// The first call's prompt.
    pub prompt_tokens: u64,
    /// Tokens each tool result adds to the context.
    pub tool_tokens: u64,
    /// Prompt-processing rate; `None` counts no prefill time.
    pub prefill_tok_s: Option<f64>,
    pub prefix_cache: bool,
    /// Fixed wait before each call's first token (network, queue), seconds.
    pub ttft_s: f64,
    /// Tool latency after each step but the last, seconds.
    pub tool_s: f64,
    pub decode_tok_s: f64,
}

impl Default for AgentInputs {
    /// The seeds' example at 30 tok/s.
    fn default() -> Self {
        Self {
            steps: 12,
            output_tokens: 800,
            reasoning_tokens: 0,
            prompt_tokens: 0,
            tool_tokens: 0,
            prefill_tok_s: None,
            prefix_cache: true,
            ttft_s: 0.0,
            tool_s: 0.0,
            decode_tok_s: 30.0,
        }
    }
}

/// One call of the loop, on the timeline from the agent's start.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Step {
    pub index: u32,
    pub start_s: f64,
    /// Tokens in the context when the call starts.
    pub context_tokens: u64,
    pub prefill_tokens: u64,
    pub ttft_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub tool_s: f64,
    pub end_s: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentRun {
    pub total_s: f64,
    pub ttft_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub tool_s: f64,
    /// Tokens decoded, visible and reasoning.
    pub tokens: u64,
    pub steps: Vec<Step>,
}

const MAX_STEPS: u32 = 100_000;
const MAX_TOKENS: u64 = 100_000_000;
const MAX_RATE: f64 = 1e9;
const MAX_WAIT_S: f64 = 86_400.0;

fn tokens(field: &'static str, n: u64) -> Result<u64, InputError> {
    if n > MAX_TOKENS {
        return Err(InputError {
            field,
            message: format!("{n} is more tokens than any context holds (at most {MAX_TOKENS})"),
        });
    }
    Ok(n)
}

impl AgentInputs {
    pub fn validate(&self) -> Result<(), InputError> {
        if self.steps == 0 || self.steps > MAX_STEPS {
            return Err(InputError {
                field: "steps",
                message: format!("must be between 1 and {MAX_STEPS}, got {}", self.steps),
            });
        }
        tokens("output tokens", self.output_tokens)?;
        tokens("reasoning tokens", self.reasoning_tokens)?;
        tokens("prompt tokens", self.prompt_tokens)?;
        tokens("tool tokens", self.tool_tokens)?;
        if self.output_tokens + self.reasoning_tokens == 0 {
            return Err(InputError {
                field: "output tokens",
                message: "each step must generate at least one token".into(),
            });
        }
        check("decode rate", self.decode_tok_s, false, MAX_RATE, "tok/s")?;
        if let Some(p) = self.prefill_tok_s {
            check("prefill rate", p, false, MAX_RATE, "tok/s")?;
        }
        check("time to first token", self.ttft_s, true, MAX_WAIT_S, "s")?;
        check("tool latency", self.tool_s, true, MAX_WAIT_S, "s")?;
        Ok(())
    }

    pub fn simulate(&self) -> Result<AgentRun, InputError> {
        self.validate()?;
        let mut steps = Vec::with_capacity(self.steps as usize);
        let mut clock = 0.0;
        let decoded = self.output_tokens + self.reasoning_tokens;
        for i in 0..self.steps {
            let earlier = i as u64;
            let context_tokens = self.prompt_tokens + earlier * (self.output_tokens + self.tool_tokens);
            let prefill_tokens = match (self.prefix_cache, i) {
                (true, 0) | (false, _) => context_tokens,
                (true, _) => self.tool_tokens,
            };
            let prefill_s = self.prefill_tok_s.map_or(0.0, |r| prefill_tokens as f64 / r);
            let decode_s = decoded as f64 / self.decode_tok_s;
            let tool_s = if i + 1 < self.steps { self.tool_s } else { 0.0 };
            let end_s = clock + self.ttft_s + prefill_s + decode_s + tool_s;
            steps.push(Step {
                index: i,
                start_s: clock,
                context_tokens,
                prefill_tokens,
                ttft_s: self.ttft_s,
                prefill_s,
                decode_s,
                tool_s,
                end_s,
            });
            clock = end_s;
        }
        let sum = |f: fn(&Step) -> f64| steps.iter().map(f).sum::<f64>();
        Ok(AgentRun {
            total_s: clock,
            ttft_s: sum(|s| s.ttft_s),
            prefill_s: sum(|s| s.prefill_s),
            decode_s: sum(|s| s.decode_s),
            tool_s: sum(|s| s.tool_s),
            tokens: decoded * self.steps as u64,
            steps,
        })
    }
}

impl AgentRun {
    /// One sentence in the reader's numbers: what the loop costs and where the time goes.
    pub fn explain(&self, inputs: &AgentInputs) -> String {
        let per_step = inputs.output_tokens + inputs.reasoning_tokens;
        let parts = [
            ("decoding", self.decode_s),
            ("prefilling", self.prefill_s),
            ("waiting for tools", self.tool_s),
            ("waiting for first tokens", self.ttft_s),
        ];
        let (what, most) = parts
            .iter()
            .cloned()
            .fold(("decoding", f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let share = if self.total_s > 0.0 {
            100.0 * most / self.total_s
        } else {
            0.0
        };
        format!(
            "At {} tok/s, {} steps of {} tokens ({} in all) take {}, {:.0} % of it {what}.",
            trim_rate(inputs.decode_tok_s),
            inputs.steps,
            human::count(per_step),
            human::count(self.tokens),
            human::duration(self.total_s),
            share,
        )
    }
}

/// A rate as people write it: "30", "12.5", "0.8".
fn trim_rate(r: f64) -> String {
    if r >= 100.0 || r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn the_seeds_example_exactly() {
        let slow = AgentInputs::default().simulate().unwrap();
        assert_eq!(slow.tokens, 9600);
        assert_eq!(slow.total_s, 320.0);
        assert_eq!(slow.decode_s, 320.0);
        assert_eq!(slow.steps.len(), 12);
        let fast = AgentInputs {
            decode_tok_s: 300.0,
            ..Default::default()
        }
        .simulate()
        .unwrap();
        assert!(close(fast.total_s, 32.0));
        assert_eq!(
            slow.explain(&AgentInputs::default()),
            "At 30 tok/s, 12 steps of 800 tokens (9,600 in all) take 5 min 20 s, 100 % of it decoding."
        );
    }

    /// 3 steps, 100 visible + 50 reasoning tokens at 50 tok/s (3 s each), prompt 1000 tokens,
    /// 200-token tool results, prefill 1000 tok/s, TTFT 0.5 s, tools 2 s.
    fn three_steps(prefix_cache: bool) -> AgentInputs {
        AgentInputs {
            steps: 3,
            output_tokens: 100,
            reasoning_tokens: 50,
            prompt_tokens: 1000,
            tool_tokens: 200,
            prefill_tok_s: Some(1000.0),
            prefix_cache,
            ttft_s: 0.5,
            tool_s: 2.0,
            decode_tok_s: 50.0,
        }
    }

    #[test]
    fn prefix_cache_prefills_only_new_tokens() {
        let r = three_steps(true).simulate().unwrap();
        let prefilled: Vec<u64> = r.steps.iter().map(|s| s.prefill_tokens).collect();
        assert_eq!(prefilled, [1000, 200, 200]);
        let contexts: Vec<u64> = r.steps.iter().map(|s| s.context_tokens).collect();
        assert_eq!(contexts, [1000, 1300, 1600]);
        // ttft 1.5 + prefill 1.4 + decode 9 + tools 4 (two, not three) = 15.9 s.
        assert!(close(r.ttft_s, 1.5));
        assert!(close(r.prefill_s, 1.4));
        assert!(close(r.decode_s, 9.0));
        assert!(close(r.tool_s, 4.0));
        assert!(close(r.total_s, 15.9));
        assert_eq!(r.tokens, 450);
        // The timeline is contiguous.
        assert_eq!(r.steps[0].start_s, 0.0);
        assert!(close(r.steps[1].start_s, 0.5 + 1.0 + 3.0 + 2.0));
        assert!(r.steps.windows(2).all(|w| w[0].end_s == w[1].start_s));
        assert_eq!(r.steps[2].tool_s, 0.0);
    }

    #[test]
    fn without_a_prefix_cache_the_whole_context_is_prefilled_each_call() {
        let r = three_steps(false).simulate().unwrap();
        let prefilled: Vec<u64> = r.steps.iter().map(|s| s.prefill_tokens).collect();
        assert_eq!(prefilled, [1000, 1300, 1600]);
        assert!(close(r.prefill_s, 3.9));
        assert!(close(r.total_s, 18.4));
    }

    #[test]
    fn reasoning_tokens_cost_decode_time_but_not_context() {
        let base = AgentInputs {
            steps: 2,
            output_tokens: 100,
            decode_tok_s: 100.0,
            ..Default::default()
        };
        let thinking = AgentInputs {
            reasoning_tokens: 900,
            ..base
        };
        let (a, b) = (base.simulate().unwrap(), thinking.simulate().unwrap());
        assert!(close(a.total_s, 2.0));
        assert!(close(b.total_s, 20.0));
        assert_eq!(b.tokens, 2000);
        assert_eq!(a.steps[1].context_tokens, b.steps[1].context_tokens);
    }

    #[test]
    fn one_step_pays_no_tool_latency_and_no_prefill_without_a_rate() {
        let r = AgentInputs {
            steps: 1,
            output_tokens: 60,
            prompt_tokens: 5000,
            tool_s: 10.0,
            ttft_s: 0.25,
            decode_tok_s: 20.0,
            ..Default::default()
        }
        .simulate()
        .unwrap();
        assert_eq!(r.tool_s, 0.0);
        assert_eq!(r.prefill_s, 0.0);
        assert!(close(r.total_s, 3.25));
    }

    #[test]
    fn bad_inputs_are_refused_by_name() {
        let bad = |i: AgentInputs| i.simulate().unwrap_err();
        let d = AgentInputs::default();
        assert_eq!(bad(AgentInputs { steps: 0, ..d }).field, "steps");
        assert_eq!(bad(AgentInputs { decode_tok_s: 0.0, ..d }).field, "decode rate");
        assert_eq!(
            bad(AgentInputs {
                decode_tok_s: f64::NAN,
                ..d
            })
            .field,
            "decode rate"
        );
        assert_eq!(
            bad(AgentInputs {
                prefill_tok_s: Some(-5.0),
                ..d
            })
            .field,
            "prefill rate"
        );
        assert_eq!(bad(AgentInputs { tool_s: -1.0, ..d }).field, "tool latency");
        assert_eq!(
            bad(AgentInputs { output_tokens: 0, ..d }).message,
            "each step must generate at least one token"
        );
        assert_eq!(
            bad(AgentInputs {
                prompt_tokens: u64::MAX,
                ..d
            })
            .field,
            "prompt tokens"
        );
    }
}
