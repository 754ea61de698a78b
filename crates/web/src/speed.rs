//! The speed check's result card: what was measured (probe bandwidth, decode rate), what follows
//! (MBU, where the device sits among the presets), as Markdown to paste and as URL pairs for a
//! share link that shows the same card on another machine.

use crate::params::{Settings, number};
use tokscope_core::presets;
use tokscope_core::roofline::floor::{Floor, FloorInputs};
use tokscope_core::roofline::{GB, mbu};

/// Tokens the speed check decodes at most (end-of-text ignored, greedy).
pub const DECODE_TOKENS: usize = 128;
/// Decode time after which the check stops early, once it has [`MIN_TOKENS`]: a device that
/// decodes 128 tokens in minutes (a software adapter, a slow phone) gets its rate in seconds
/// instead, over at least 16 tokens; the card says how many.
pub const DECODE_SECONDS: f64 = 20.0;
/// Tokens the check always decodes before it may stop early.
pub const MIN_TOKENS: usize = 16;

/// Whether the check should stop after `tokens` decoded tokens that took `seconds` in all.
pub fn time_is_up(tokens: usize, seconds: f64) -> bool {
    tokens >= MIN_TOKENS && seconds >= DECODE_SECONDS
}
/// The prompt it decodes from.
pub const PROMPT: &str = "The history of the printing press";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpeedResult {
    pub adapter: String,
    pub browser: String,
    pub model: String,
    /// Probe read bandwidth, GB/s (`None` on the CPU engine: no GPU to probe).
    pub gb_s: Option<f64>,
    pub dispatch_us: Option<f64>,
    pub round_trip_ms: Option<f64>,
    /// Dispatches the GPU engine records per token (`None` on the CPU engine).
    pub dispatches: Option<u32>,
    /// Mean decode rate over the check's tokens.
    pub tok_s: f64,
    /// Tokens that rate is over ([`DECODE_TOKENS`], or fewer when the check stopped early).
    pub tokens: usize,
    pub bytes_per_token: u64,
}

impl SpeedResult {
    /// " tok/s over N tokens" (a link from before the count was shared says only " tok/s").
    pub fn over(&self) -> String {
        match self.tokens {
            0 => " tok/s".into(),
            n => format!(" tok/s over {n} tokens"),
        }
    }

    /// Measured decode bandwidth ÷ probe bandwidth.
    pub fn mbu(&self) -> Option<f64> {
        mbu(self.tok_s, self.bytes_per_token as f64, self.gb_s? * GB)
    }

    /// The floor model's inputs and prediction, where the GPU was probed.
    pub fn floor(&self) -> Option<(FloorInputs, Floor)> {
        floor_of(
            self.bytes_per_token as f64,
            self.gb_s?,
            self.dispatches?,
            self.dispatch_us?,
            self.round_trip_ms?,
        )
    }

    /// "between Apple A17 Pro (51 GB/s peak) and Apple M1 (68 GB/s peak)", in words.
    pub fn placement(&self) -> Option<String> {
        let g = self.gb_s?;
        let name = |d: &presets::DevicePreset| format!("{} ({} GB/s peak)", d.name, d.bandwidth_gb_s);
        Some(match presets::neighbours(g) {
            (Some(b), Some(a)) => format!("between {} and {}", name(b), name(a)),
            (None, Some(a)) => format!("below {}", name(a)),
            (Some(b), None) => format!("above {}", name(b)),
            (None, None) => return None,
        })
    }

    pub fn to_markdown(&self) -> String {
        let opt =
            |v: Option<f64>, digits: usize, unit: &str| v.map_or("–".into(), |x| format!("{x:.digits$} {unit}"));
        let mut md = format!(
            "| tokscope speed check | |\n|---|---|\n| Adapter | {} |\n| Browser | {} |\n| Model | {} |\n\
             | Read bandwidth (probe) | {} |\n| Decode | {:.1}{} |\n| Bytes per token | {:.1} MB |\n| MBU | {} |\n\
             | Cost per dispatch | {} |\n| Submit + read-back | {} |\n",
            self.adapter.replace('|', "/"),
            self.browser.replace('|', "/"),
            self.model.replace('|', "/"),
            opt(self.gb_s, 2, "GB/s"),
            self.tok_s,
            self.over(),
            self.bytes_per_token as f64 / 1e6,
            self.mbu().map_or("–".into(), |m| format!("{:.0} %", 100.0 * m)),
            opt(self.dispatch_us, 1, "µs"),
            opt(self.round_trip_ms, 2, "ms"),
        );
        if let Some((inputs, f)) = self.floor() {
            md.push_str(&format!(
                "| Floor model | {:.1} tok/s ({:.3} ms a token) |\n\n{}\n",
                f.tok_s,
                f.step_s * 1e3,
                inputs.sentence(&f)
            ));
            if let Some(m) = f.measured_sentence(self.tok_s) {
                md.push_str(&format!("{m}\n"));
            }
        }
        if let Some(p) = self.placement() {
            md.push_str(&format!("\nMeasured bandwidth sits {p}.\n"));
        }
        md
    }
}

impl Settings for SpeedResult {
    fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let positive = |v: &str| -> Result<f64, String> {
            match number::<f64>(v)? {
                x if x.is_finite() && x >= 0.0 => Ok(x),
                x => Err(format!("must be a positive number, got {x}")),
            }
        };
        match key {
            "adapter" => self.adapter = v.into(),
            "browser" => self.browser = v.into(),
            "model_name" => self.model = v.into(),
            "gbs" => self.gb_s = Some(positive(v)?),
            "dispatch_us" => self.dispatch_us = Some(positive(v)?),
            "round_trip_ms" => self.round_trip_ms = Some(positive(v)?),
            "dispatches" => self.dispatches = Some(number(v)?),
            "tok_s" => self.tok_s = positive(v)?,
            "tokens" => self.tokens = number(v)?,
            "bytes_per_token" => self.bytes_per_token = number(v)?,
            _ => {}
        }
        Ok(())
    }

    fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            ("adapter", self.adapter.clone()),
            ("browser", self.browser.clone()),
            ("model_name", self.model.clone()),
            // Full precision: the shared card must round to the same figures as the original.
            ("tok_s", self.tok_s.to_string()),
            ("tokens", self.tokens.to_string()),
            ("bytes_per_token", self.bytes_per_token.to_string()),
        ];
        for (k, v) in [
            ("gbs", self.gb_s),
            ("dispatch_us", self.dispatch_us),
            ("round_trip_ms", self.round_trip_ms),
        ] {
            if let Some(v) = v {
                p.push((k, v.to_string()));
            }
        }
        if let Some(d) = self.dispatches {
            p.push(("dispatches", d.to_string()));
        }
        p
    }
}

/// The floor model of a GPU run from the probe's figures (bandwidth GB/s, µs per dispatch,
/// round-trip ms) and the engine's dispatches per token; `None` when a figure is unusable.
pub fn floor_of(
    bytes_per_token: f64,
    gb_s: f64,
    dispatches: u32,
    dispatch_us: f64,
    round_trip_ms: f64,
) -> Option<(FloorInputs, Floor)> {
    let inputs = FloorInputs {
        bytes_per_token,
        bandwidth_gb_s: gb_s,
        dispatches,
        dispatch_us,
        round_trip_ms,
    };
    inputs.floor().ok().map(|f| (inputs, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SpeedResult {
        SpeedResult {
            adapter: "WebGPU: google swiftshader".into(),
            browser: "Chromium 156".into(),
            model: "SmolLM2 135M Instruct".into(),
            gb_s: Some(8.0),
            dispatch_us: Some(29.5),
            round_trip_ms: Some(0.61),
            dispatches: Some(152),
            tok_s: 20.0,
            tokens: 128,
            bytes_per_token: 100_000_000,
        }
    }

    #[test]
    fn mbu_and_placement() {
        let r = sample();
        // 20 tok/s × 100 MB = 2 GB/s of 8 GB/s.
        assert!((r.mbu().unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(r.placement().unwrap(), "below Apple A17 Pro (51 GB/s peak)");
        let cpu = SpeedResult { gb_s: None, ..sample() };
        assert_eq!((cpu.mbu(), cpu.placement()), (None, None));
    }

    #[test]
    fn the_check_stops_early_only_with_enough_tokens_and_time() {
        assert!(!time_is_up(MIN_TOKENS - 1, 10.0 * DECODE_SECONDS));
        assert!(!time_is_up(MIN_TOKENS, DECODE_SECONDS - 0.5));
        assert!(time_is_up(MIN_TOKENS, DECODE_SECONDS));
        assert!(time_is_up(100, 30.0));
    }

    #[test]
    fn markdown_has_every_figure() {
        let md = sample().to_markdown();
        for needle in [
            "| Read bandwidth (probe) | 8.00 GB/s |",
            "| Decode | 20.0 tok/s over 128 tokens |",
            "| MBU | 25 % |",
            "| Cost per dispatch | 29.5 µs |",
            // 100 MB at 8 GB/s = 12.5 ms; 152 × 29.5 µs + 0.61 ms = 5.094 ms.
            "| Floor model | 56.8 tok/s (17.594 ms a token) |",
            "Bandwidth sets this speed: 12.5 ms to read 100.0 MB at 8.00 GB/s, 2.45× the fixed cost per token",
            "Measured: 50.0 ms a token, 2.84× the floor's 17.6 ms.",
            "below Apple A17 Pro",
        ] {
            assert!(md.contains(needle), "{needle} not in\n{md}");
        }
    }

    #[test]
    fn share_pairs_round_trip() {
        // Figures that a rounded link would display differently (2.1649… vs 2.165).
        let r = SpeedResult {
            gb_s: Some(2.164_9),
            tok_s: 2.249_9,
            ..sample()
        };
        let pairs = r.to_pairs();
        let (back, errors) = SpeedResult::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(back, r);
        let (_, errors) = SpeedResult::from_pairs([("gbs", "-1"), ("tok_s", "fast")]);
        assert_eq!(errors.len(), 2);
    }
}
