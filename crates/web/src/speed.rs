//! The speed check's result card: what was measured (probe bandwidth, decode rate), what follows
//! (MBU, where the device sits among the presets), as Markdown to paste and as URL pairs for a
//! share link that shows the same card on another machine.

use crate::params::{Settings, number};
use tokscope_core::presets;
use tokscope_core::roofline::completion::describe_nudged;
use tokscope_core::roofline::floor::{Floor, FloorInputs};
use tokscope_core::roofline::probe::Latency;
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
    /// The probe's completion latency (and tick), as the engine's reads see it.
    pub latency: Option<Latency>,
    /// The latency without the nudge, where reads nudge the queue (Firefox: its 100 ms tick).
    pub unnudged: Option<Latency>,
    /// The probe's figures on the GPU's clock, where the adapter has timestamps.
    pub gpu_gb_s: Option<f64>,
    pub gpu_dispatch_us: Option<f64>,
    /// Dispatches the GPU engine records per token (`None` on the CPU engine).
    pub dispatches: Option<u32>,
    /// Mean decode rate over the check's tokens.
    pub tok_s: f64,
    /// Tokens that rate is over ([`DECODE_TOKENS`], or fewer when the check stopped early).
    pub tokens: usize,
    pub bytes_per_token: u64,
    /// Decode steps one submit held on average (WebGPU's chained greedy steps); `None`: one.
    pub steps_per_submit: Option<f64>,
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
            self.latency.as_ref()?,
            self.steps_per_submit.unwrap_or(1.0),
        )
    }

    /// "8.00 GB/s (GPU timestamps: 8.10)", or "–" without a probe.
    pub fn bandwidth_text(&self) -> String {
        with_gpu_clock(self.gb_s, self.gpu_gb_s, 2, "GB/s")
    }

    /// "29.5 µs (GPU timestamps: 28.0)", or "–".
    pub fn dispatch_text(&self) -> String {
        with_gpu_clock(self.dispatch_us, self.gpu_dispatch_us, 1, "µs")
    }

    /// "0.450 ms (min 0.440, max 0.470)", a tick named as such, or "–".
    pub fn latency_text(&self) -> String {
        match (self.latency, self.unnudged) {
            (Some(l), Some(plain)) => describe_nudged(&l, &plain),
            (Some(l), None) => l.describe(),
            (None, _) => "–".into(),
        }
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
        let mut md = format!(
            "| tokscope speed check | |\n|---|---|\n| Adapter | {} |\n| Browser | {} |\n| Model | {} |\n\
             | Read bandwidth (probe) | {} |\n| Decode | {:.1}{} |\n| Bytes per token | {:.1} MB |\n| MBU | {} |\n\
             | Cost per dispatch | {} |\n| Completion latency | {} |\n",
            self.adapter.replace('|', "/"),
            self.browser.replace('|', "/"),
            self.model.replace('|', "/"),
            self.bandwidth_text(),
            self.tok_s,
            self.over(),
            self.bytes_per_token as f64 / 1e6,
            self.mbu().map_or("–".into(), |m| format!("{:.0} %", 100.0 * m)),
            self.dispatch_text(),
            self.latency_text(),
        );
        if let Some(k) = self.steps_per_submit {
            md.push_str(&format!(
                "| Steps a submit | {k:.1} (greedy steps chained on the GPU: one completion wait each) |\n"
            ));
        }
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
        // A latency known by one figure until the others arrive.
        let flat = |x| Latency {
            min_ms: x,
            median_ms: x,
            max_ms: x,
            tick_ms: None,
        };
        match key {
            "adapter" => self.adapter = v.into(),
            "browser" => self.browser = v.into(),
            "model_name" => self.model = v.into(),
            "gbs" => self.gb_s = Some(positive(v)?),
            "dispatch_us" => self.dispatch_us = Some(positive(v)?),
            "gpu_gbs" => self.gpu_gb_s = Some(positive(v)?),
            "gpu_dispatch_us" => self.gpu_dispatch_us = Some(positive(v)?),
            "latency_ms" | "latency_min_ms" | "latency_max_ms" | "tick_ms" | "round_trip_ms" => {
                let x = positive(v)?;
                let l = self.latency.get_or_insert(flat(x));
                match key {
                    "latency_min_ms" => l.min_ms = x,
                    "latency_max_ms" => l.max_ms = x,
                    "tick_ms" => l.tick_ms = Some(x),
                    // A link from before the latency had its own figures: the round trip.
                    _ => l.median_ms = x,
                }
            }
            "unnudged_ms" | "unnudged_tick_ms" => {
                let x = positive(v)?;
                let l = self.unnudged.get_or_insert(flat(x));
                match key {
                    "unnudged_tick_ms" => l.tick_ms = Some(x),
                    _ => (l.min_ms, l.median_ms, l.max_ms) = (x, x, x),
                }
            }
            "dispatches" => self.dispatches = Some(number(v)?),
            "steps_per_submit" => self.steps_per_submit = Some(positive(v)?.max(1.0)),
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
        let l = self.latency.as_ref();
        for (k, v) in [
            ("gbs", self.gb_s),
            ("dispatch_us", self.dispatch_us),
            ("gpu_gbs", self.gpu_gb_s),
            ("gpu_dispatch_us", self.gpu_dispatch_us),
            ("latency_ms", l.map(|l| l.median_ms)),
            ("latency_min_ms", l.map(|l| l.min_ms)),
            ("latency_max_ms", l.map(|l| l.max_ms)),
            ("tick_ms", l.and_then(|l| l.tick_ms)),
            ("unnudged_ms", self.unnudged.map(|l| l.median_ms)),
            ("unnudged_tick_ms", self.unnudged.and_then(|l| l.tick_ms)),
            ("steps_per_submit", self.steps_per_submit),
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

/// "8.00 GB/s (GPU timestamps: 8.10)": the wall clock's figure, the GPU clock's beside it.
fn with_gpu_clock(wall: Option<f64>, gpu: Option<f64>, digits: usize, unit: &str) -> String {
    match (wall, gpu) {
        (None, _) => "–".into(),
        (Some(w), None) => format!("{w:.digits$} {unit}"),
        (Some(w), Some(g)) => format!("{w:.digits$} {unit} (GPU timestamps: {g:.digits$})"),
    }
}

/// The floor model of a GPU run from the probe's figures (bandwidth GB/s, µs per dispatch,
/// completion latency), the engine's dispatches per token and the steps a submit chained;
/// `None` when a figure is unusable.
pub fn floor_of(
    bytes_per_token: f64,
    gb_s: f64,
    dispatches: u32,
    dispatch_us: f64,
    latency: &Latency,
    steps_per_submit: f64,
) -> Option<(FloorInputs, Floor)> {
    let inputs = FloorInputs {
        bytes_per_token,
        bandwidth_gb_s: gb_s,
        dispatches,
        dispatch_us,
        latency_ms: latency.median_ms,
        tick_ms: latency.tick_ms,
        steps_per_submit,
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
            latency: Some(Latency {
                min_ms: 0.5,
                median_ms: 0.61,
                max_ms: 0.8,
                tick_ms: None,
            }),
            unnudged: None,
            gpu_gb_s: Some(8.1),
            gpu_dispatch_us: None,
            dispatches: Some(152),
            tok_s: 20.0,
            tokens: 128,
            bytes_per_token: 100_000_000,
            steps_per_submit: Some(4.5),
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
            "| Read bandwidth (probe) | 8.00 GB/s (GPU timestamps: 8.10) |",
            "| Decode | 20.0 tok/s over 128 tokens |",
            "| MBU | 25 % |",
            "| Cost per dispatch | 29.5 µs |",
            "| Completion latency | 0.610 ms (min 0.500, max 0.800) |",
            "| Steps a submit | 4.5 (greedy steps chained on the GPU: one completion wait each) |",
            // 100 MB at 8 GB/s = 12.5 ms; 152 × 29.5 µs + 0.61 ms ÷ 4.5 steps = 4.620 ms.
            "| Floor model | 58.4 tok/s (17.120 ms a token) |",
            "Bandwidth sets this speed: 12.5 ms to read 100.0 MB at 8.00 GB/s, 2.71× the rest of the step",
            "Measured: 50.0 ms a token, 2.92× the floor's 17.1 ms.",
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
        // A tick survives the link; a link from before the latency's figures keeps its round trip.
        let ticked = SpeedResult {
            latency: Some(Latency {
                min_ms: 100.2,
                median_ms: 101.0,
                max_ms: 103.9,
                tick_ms: Some(101.0),
            }),
            ..sample()
        };
        let pairs = ticked.to_pairs();
        let (back, _) = SpeedResult::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert_eq!(back, ticked);
        // A nudged latency keeps the tick it was nudged past, and says so.
        let nudged = SpeedResult {
            unnudged: Some(Latency {
                min_ms: 100.2,
                median_ms: 100.2,
                max_ms: 100.2,
                tick_ms: Some(100.2),
            }),
            ..sample()
        };
        let pairs = nudged.to_pairs();
        let (back, _) = SpeedResult::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
        assert_eq!(back, nudged);
        let text = back.latency_text();
        assert!(
            text.starts_with("0.610 ms (min 0.500, max 0.800), nudged by an empty submit every 2 ms (without: 100")
                && text.ends_with("a timer's tick, not the GPU)"),
            "{text}"
        );
        let (old, errors) = SpeedResult::from_pairs([("round_trip_ms", "0.61")]);
        assert!(errors.is_empty());
        assert_eq!(old.latency.map(|l| (l.median_ms, l.tick_ms)), Some((0.61, None)));
    }
}
