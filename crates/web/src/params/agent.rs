//! The agent panel's settings: the loop's shape and up to three decode speeds side by side.
//! Example: `#/embed/agent?steps=12&tokens=800&speeds=30,300`.

use super::{Settings, flag, number};
use tokscope_core::agent::AgentInputs;
use tokscope_core::presets;

/// Speeds compared side by side.
pub const MAX_SPEEDS: usize = 3;

/// One decode speed to compare.
#[derive(Debug, Clone, PartialEq)]
pub enum Speed {
    /// A rate the reader typed, tok/s.
    Fixed(f64),
    /// This device's measured decode rate (the decode meter's mean).
    Measured,
    /// The roofline panel's ceiling for its current model and device.
    Ceiling,
    /// A vendor's claim, by preset id (labelled as a claim).
    Claim(&'static str),
}

impl Speed {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        match t {
            "measured" => Ok(Speed::Measured),
            "ceiling" => Ok(Speed::Ceiling),
            _ => {
                if let Some(c) = presets::claim(t) {
                    return Ok(Speed::Claim(c.id));
                }
                match t.parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => Ok(Speed::Fixed(v)),
                    _ => Err(format!(
                        "{t:?} is not a speed: write tok/s (e.g. 30), measured, ceiling or a claim id"
                    )),
                }
            }
        }
    }

    pub fn key(&self) -> String {
        match self {
            Speed::Fixed(v) => v.to_string(),
            Speed::Measured => "measured".into(),
            Speed::Ceiling => "ceiling".into(),
            Speed::Claim(id) => (*id).into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// The loop; its `decode_tok_s` is replaced by each speed in turn.
    pub shape: AgentInputs,
    pub speeds: Vec<Speed>,
}

impl Default for AgentSettings {
    /// The seeds' example: 12 steps × 800 tokens at 30 and 300 tok/s.
    fn default() -> Self {
        Self {
            shape: AgentInputs::default(),
            speeds: vec![Speed::Fixed(30.0), Speed::Fixed(300.0)],
        }
    }
}

/// Loop shapes readers recognise. Illustrative sizes, not measurements.
pub const PRESETS: &[(&str, &str)] = &[
    ("seeds", "12 steps × 800 tokens (the worked example)"),
    ("coding", "Coding agent: 20 steps, growing context"),
    ("voice", "Voice reply: one short answer"),
];

impl AgentSettings {
    /// Replaces the loop's shape with a preset's, keeping the speeds.
    pub fn pick(&mut self, id: &str) -> Result<(), String> {
        let d = AgentInputs::default();
        self.shape = match id {
            "seeds" => d,
            // Illustrative: a 6k-token system prompt and repository map, 1.5k-token tool
            // results (file reads, test output), 250 visible + 400 reasoning tokens a step.
            "coding" => AgentInputs {
                steps: 20,
                output_tokens: 250,
                reasoning_tokens: 400,
                prompt_tokens: 6000,
                tool_tokens: 1500,
                prefill_tok_s: Some(2000.0),
                prefix_cache: true,
                ttft_s: 0.4,
                tool_s: 1.5,
                ..d
            },
            // Illustrative: one spoken answer of ~45 words after a 500-token prompt.
            "voice" => AgentInputs {
                steps: 1,
                output_tokens: 60,
                prompt_tokens: 500,
                prefill_tok_s: Some(2000.0),
                ttft_s: 0.3,
                ..d
            },
            _ => return Err(format!("no agent preset {id:?} (seeds, coding, voice)")),
        };
        Ok(())
    }
}

impl Settings for AgentSettings {
    const FIRST: &'static [&'static str] = &["preset"];

    fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let mut s = self.clone();
        let shape = &mut s.shape;
        match key {
            "preset" => s.pick(v)?,
            "steps" => shape.steps = number(v)?,
            "tokens" => shape.output_tokens = number(v)?,
            "reasoning" => shape.reasoning_tokens = number(v)?,
            "prompt_tokens" => shape.prompt_tokens = number(v)?,
            "tool_tokens" => shape.tool_tokens = number(v)?,
            "prefill" => {
                shape.prefill_tok_s = if v.trim().is_empty() || v == "0" {
                    None
                } else {
                    Some(number(v)?)
                }
            }
            "cache" => shape.prefix_cache = flag(v)?,
            "ttft" => shape.ttft_s = number(v)?,
            "tool_s" => shape.tool_s = number(v)?,
            "speeds" => {
                let speeds = v
                    .split(',')
                    .filter(|p| !p.trim().is_empty())
                    .map(Speed::parse)
                    .collect::<Result<Vec<_>, _>>()?;
                if speeds.is_empty() || speeds.len() > MAX_SPEEDS {
                    return Err(format!("give 1 to {MAX_SPEEDS} speeds, got {}", speeds.len()));
                }
                s.speeds = speeds;
            }
            _ => return Ok(()),
        }
        s.shape.validate().map_err(|e| e.to_string())?;
        *self = s;
        Ok(())
    }

    fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let a = &self.shape;
        let mut p = vec![
            ("steps", a.steps.to_string()),
            ("tokens", a.output_tokens.to_string()),
            ("reasoning", a.reasoning_tokens.to_string()),
            ("prompt_tokens", a.prompt_tokens.to_string()),
            ("tool_tokens", a.tool_tokens.to_string()),
        ];
        if let Some(r) = a.prefill_tok_s {
            p.push(("prefill", r.to_string()));
        }
        p.extend([
            ("cache", u8::from(a.prefix_cache).to_string()),
            ("ttft", a.ttft_s.to_string()),
            ("tool_s", a.tool_s.to_string()),
            (
                "speeds",
                self.speeds.iter().map(Speed::key).collect::<Vec<_>>().join(","),
            ),
        ]);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_issue_example() {
        let (s, errors) = AgentSettings::from_pairs([("steps", "12"), ("tokens", "800"), ("speeds", "30,300")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s, AgentSettings::default());
        let (s, errors) = AgentSettings::from_pairs([("speeds", "measured, ceiling,clover-h200")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.speeds, [Speed::Measured, Speed::Ceiling, Speed::Claim("clover-h200")]);
    }

    #[test]
    fn bad_values_are_named() {
        let (s, errors) = AgentSettings::from_pairs([
            ("steps", "0"),
            ("speeds", "30,fast"),
            ("speeds", "1,2,3,4"),
            ("ttft", "-1"),
            ("preset", "nope"),
        ]);
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].contains("no agent preset"), "{errors:?}");
        assert!(errors[1].contains("steps: must be between 1"), "{errors:?}");
        assert!(errors[2].contains("\"fast\" is not a speed"), "{errors:?}");
        assert!(errors[3].contains("1 to 3 speeds"), "{errors:?}");
        assert!(errors[4].contains("time to first token"), "{errors:?}");
        assert_eq!(s, AgentSettings::default());
    }

    #[test]
    fn presets_then_overrides_round_trip() {
        let (s, errors) =
            AgentSettings::from_pairs([("steps", "25"), ("preset", "coding"), ("speeds", "12.5,measured")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.shape.steps, 25);
        assert_eq!(s.shape.tool_tokens, 1500);
        let pairs = s.to_pairs();
        let (back, errors) = AgentSettings::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(back, s);
    }
}
