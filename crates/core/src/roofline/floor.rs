//! The floor model of one decode step on a GPU: the time to stream the step's bytes at the
//! probed bandwidth, plus the platform's fixed cost per token — every dispatch's launch (the
//! probe's empty dispatch) and the wait until the host learns the step is done (the probe's
//! completion latency):
//!
//! `floor = bytes ÷ probed bandwidth + dispatches × probed cost per dispatch + completion wait`.
//!
//! It is the `time per token ≈ bytes ÷ bandwidth + dispatches × cost per dispatch + sync` model
//! of DESIGN.md with every term measured on the device (tokscope's probe), so a measured step
//! can be read against it: a small model on a big GPU is latency-bound (the fixed cost sets its
//! speed, whatever the bandwidth), a big model bandwidth-bound. Where completions arrive on a
//! timer's tick (Firefox's WebGPU: a 100 ms timer, Mozilla bug 1870699) a step ends at the first
//! tick after its work, so the wait is what is left of the tick, not a tick more. Sources:
//! Williams, Waterman & Patterson, "Roofline" (CACM 2009) for the bandwidth term; the fixed term
//! is the launch overhead the roofline leaves out (NVIDIA's CUDA Graphs notes make the same
//! point: "for short-running kernels, launch overheads can be a significant fraction of the
//! overall time").

use super::{GB, InputError, check};
use crate::human::{bytes, count, figure, ms};
use serde::Serialize;

/// The probed figures and the step's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorInputs {
    /// Bytes one token reads (weights + KV cache).
    pub bytes_per_token: f64,
    /// The probe's streaming read bandwidth, GB/s.
    pub bandwidth_gb_s: f64,
    /// Dispatches the engine records per token.
    pub dispatches: u32,
    /// The probe's cost of one more (empty) dispatch inside a pass, µs.
    pub dispatch_us: f64,
    /// The probe's completion latency (median), ms: once per token.
    pub latency_ms: f64,
    /// The timer completions wait for, ms, where the probe found one
    /// ([`super::probe::Latency::tick_ms`]).
    pub tick_ms: Option<f64>,
    /// Decode steps one submit chains (tokscope-gpu's `chain`; 1: a round trip per token):
    /// the completion wait is paid once per submit, so a token pays its share.
    pub steps_per_submit: f64,
}

/// Which term sets the floor: the largest of the three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Streaming the bytes: bandwidth-bound.
    Bytes,
    /// Launching the dispatches: latency-bound on the GPU's side.
    Dispatches,
    /// Waiting for the host to learn the step is done: latency-bound on the host's side.
    Completion,
}

/// The floor model's prediction for one token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Floor {
    /// bytes ÷ bandwidth, seconds.
    pub bytes_s: f64,
    /// dispatches × cost per dispatch, seconds.
    pub dispatch_s: f64,
    /// The completion wait, seconds: the latency, or on a tick what is left of it after the work.
    pub sync_s: f64,
    /// dispatch + sync.
    pub fixed_s: f64,
    /// bytes + fixed: the predicted step time.
    pub step_s: f64,
    /// 1 ÷ step: the rate the floor allows.
    pub tok_s: f64,
    /// 1 ÷ bytes: the bandwidth ceiling alone (what a calculator without the fixed cost shows).
    pub ceiling_tok_s: f64,
    pub limit: Limit,
    /// The limiting term ÷ the other two (≥ 1: it outweighs them together).
    pub ratio: f64,
    /// The completion tick, seconds, where there is one.
    pub tick_s: Option<f64>,
}

const MAX_BYTES: f64 = 1e15;
const MAX_DISPATCHES: u32 = 1_000_000;

impl FloorInputs {
    /// The prediction; each bad figure is named.
    pub fn floor(&self) -> Result<Floor, InputError> {
        check("bytes per token", self.bytes_per_token, false, MAX_BYTES, "bytes")?;
        check("bandwidth", self.bandwidth_gb_s, false, 1e6, "GB/s")?;
        check("cost per dispatch", self.dispatch_us, true, 1e6, "µs")?;
        check("completion latency", self.latency_ms, true, 1e5, "ms")?;
        if let Some(t) = self.tick_ms {
            check("completion tick", t, false, 1e5, "ms")?;
        }
        if self.dispatches > MAX_DISPATCHES {
            return Err(InputError {
                field: "dispatches",
                message: format!("at most {MAX_DISPATCHES}, got {}", self.dispatches),
            });
        }
        let bytes_s = self.bytes_per_token / (self.bandwidth_gb_s * GB);
        let dispatch_s = self.dispatches as f64 * self.dispatch_us * 1e-6;
        let work = bytes_s + dispatch_s;
        if !(self.steps_per_submit >= 1.0 && self.steps_per_submit <= 1e6) {
            return Err(InputError {
                field: "steps per submit",
                message: format!("at least 1, got {}", self.steps_per_submit),
            });
        }
        let k = self.steps_per_submit;
        let sync_s = match self.tick_ms {
            // The first tick at or after the chunk's work ends (at least one), shared by its steps.
            Some(t) => {
                let t = t * 1e-3;
                ((k * work / t).ceil().max(1.0) * t - k * work) / k
            }
            None => self.latency_ms * 1e-3 / k,
        };
        let fixed_s = dispatch_s + sync_s;
        let step_s = bytes_s + fixed_s;
        let terms = [
            (Limit::Bytes, bytes_s),
            (Limit::Dispatches, dispatch_s),
            (Limit::Completion, sync_s),
        ];
        let (limit, top) = terms
            .iter()
            .copied()
            .fold((Limit::Bytes, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let rest = step_s - top;
        Ok(Floor {
            bytes_s,
            dispatch_s,
            sync_s,
            fixed_s,
            step_s,
            tok_s: 1.0 / step_s,
            ceiling_tok_s: 1.0 / bytes_s,
            limit,
            ratio: if rest > 0.0 { top / rest } else { f64::INFINITY },
            tick_s: self.tick_ms.map(|t| t * 1e-3),
        })
    }

    /// One sentence for the reader: which term sets this device's speed for this model, by how
    /// much, with the terms spelled out, and what would change it.
    pub fn sentence(&self, f: &Floor) -> String {
        let read = format!(
            "{} to read {} at {} GB/s",
            ms(f.bytes_s),
            bytes(self.bytes_per_token),
            figure(self.bandwidth_gb_s)
        );
        let launches = format!(
            "{} dispatches × {} µs = {} of launches",
            count(self.dispatches as u64),
            figure(self.dispatch_us),
            ms(f.dispatch_s)
        );
        let wait = match self.tick_ms {
            Some(t) => format!(
                "{} waiting for the browser's {} ms completion tick",
                ms(f.sync_s),
                figure(t)
            ),
            None => format!("{} of submit and read-back", ms(f.sync_s)),
        };
        let (sets, set) = if f.ratio >= 1.0 {
            ("sets this speed", "set this speed")
        } else {
            (
                "is the largest part of this speed",
                "are the largest part of this speed",
            )
        };
        let r = figure(f.ratio);
        match (f.limit, self.tick_ms) {
            (Limit::Bytes, _) => format!("Bandwidth {sets}: {read}, {r}× the rest of the step ({launches}, {wait})."),
            (Limit::Dispatches, _) => format!(
                "Launches {set}: {launches}, {r}× the rest of the step ({read}, {wait}). A small \
                 model on a fast GPU is latency-bound: the GPU waits on launches, not on memory, so \
                 more bandwidth would not make it faster; fewer, fused kernels would."
            ),
            (Limit::Completion, Some(t)) => format!(
                "The browser's completion tick {sets}: this browser learns that the GPU has \
                 finished only when a {} ms timer fires, so each token waits {} after its {} of \
                 work ({read}, {launches}). Neither the GPU's bandwidth nor its launches set this \
                 rate; another browser, the CPU engine (no GPU to wait for) or more tokens per \
                 submit would change it.",
                figure(t),
                ms(f.sync_s),
                ms(f.bytes_s + f.dispatch_s)
            ),
            (Limit::Completion, None) => format!(
                "Waiting for completion {sets}: {wait}, {r}× the rest of the step ({read}, \
                 {launches}). Each token's result goes back to the host before the next step is \
                 sent; more tokens per submit would hide the wait, more bandwidth would not."
            ),
        }
    }
}

impl Floor {
    /// Measured step time ÷ the floor's (≥ 1 when the model holds; how far above the floor
    /// the engine runs).
    pub fn measured_ratio(&self, measured_tok_s: f64) -> Option<f64> {
        (measured_tok_s.is_finite() && measured_tok_s > 0.0).then(|| self.tok_s / measured_tok_s)
    }

    /// "Measured: 5.2 ms a token, 1.1× the floor's 4.7 ms" and, well above the floor, where the
    /// rest goes.
    pub fn measured_sentence(&self, measured_tok_s: f64) -> Option<String> {
        let r = self.measured_ratio(measured_tok_s)?;
        let step = 1.0 / measured_tok_s;
        let mut s = format!(
            "Measured: {} a token, {}× the floor's {}.",
            ms(step),
            figure(r),
            ms(self.step_s)
        );
        match self.tick_s {
            Some(t) if r > 1.2 => s.push_str(&format!(
                " The other {}: ticks come whole, so a token any part of which misses one tick \
                 (the host's own turn between tokens included) waits for the next, {} later.",
                ms(step - self.step_s),
                ms(t)
            )),
            None if r > 1.5 => s.push_str(&format!(
                " The other {} are the kernels' own work beyond streaming the bytes: arithmetic \
                 (on a CPU-backed adapter the kernels are compute-bound), and waits where a \
                 kernel leaves most of the GPU's cores idle.",
                ms(step - self.step_s)
            )),
            _ => {}
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-30)
    }

    /// SmolLM2-135M (96 MB a token) on an H200-class probe (4,000 GB/s): 24 µs of bytes beside
    /// 152 dispatches of 5 µs and a 50 µs round trip.
    fn small_on_big() -> FloorInputs {
        FloorInputs {
            bytes_per_token: 96e6,
            bandwidth_gb_s: 4000.0,
            dispatches: 152,
            dispatch_us: 5.0,
            latency_ms: 0.05,
            tick_ms: None,
            steps_per_submit: 1.0,
        }
    }

    #[test]
    fn the_terms_add_up() {
        let f = small_on_big().floor().unwrap();
        assert!(close(f.bytes_s, 24e-6));
        assert!(close(f.dispatch_s, 760e-6));
        assert!(close(f.sync_s, 50e-6));
        assert!(close(f.step_s, 834e-6));
        assert!(close(f.tok_s, 1.0 / 834e-6));
        assert!(close(f.ceiling_tok_s, 1.0 / 24e-6));
        assert_eq!(f.limit, Limit::Dispatches);
        assert!(close(f.ratio, 760.0 / 74.0));
    }

    #[test]
    fn a_big_model_is_bandwidth_bound() {
        // Llama 3.1 8B at Q4_0 (4.5 bits: 4.52 GB) on the same probe: 1.13 ms of bytes.
        let i = FloorInputs {
            bytes_per_token: 4.52e9,
            ..small_on_big()
        };
        let f = i.floor().unwrap();
        assert_eq!(f.limit, Limit::Bytes);
        assert!(close(f.bytes_s, 1.13e-3));
        assert!(close(f.ratio, 1.13e-3 / 810e-6));
        let s = i.sentence(&f);
        assert_eq!(
            s,
            "Bandwidth sets this speed: 1.13 ms to read 4.52 GB at 4,000 GB/s, 1.40× the rest of the step \
             (152 dispatches × 5.00 µs = 0.760 ms of launches, 0.050 ms of submit and read-back)."
        );
    }

    #[test]
    fn the_sentence_names_the_launches_and_the_factor() {
        let i = small_on_big();
        let f = i.floor().unwrap();
        let s = i.sentence(&f);
        assert!(
            s.starts_with("Launches set this speed: 152 dispatches × 5.00 µs = 0.760 ms of launches, 10.3× the rest of the step (0.024 ms to read 96.00 MB at 4,000 GB/s, 0.050 ms of submit and read-back)."),
            "{s}"
        );
        assert!(s.contains("latency-bound"));
    }

    #[test]
    fn a_slow_round_trip_is_its_own_term() {
        // Chrome on an M1 Max: 0.45 ms a submit + map, against 0.24 ms of bytes (400 GB/s).
        let i = FloorInputs {
            bandwidth_gb_s: 400.0,
            dispatch_us: 0.5,
            latency_ms: 0.45,
            ..small_on_big()
        };
        let f = i.floor().unwrap();
        assert_eq!(f.limit, Limit::Completion);
        assert!(close(f.sync_s, 0.45e-3));
        assert!(close(f.ratio, 0.45 / (0.24 + 0.076)));
        let s = i.sentence(&f);
        assert!(
            s.starts_with("Waiting for completion sets this speed: 0.450 ms of submit and read-back, 1.42× the rest"),
            "{s}"
        );
        assert!(s.contains("more tokens per submit would hide the wait"), "{s}");
    }

    #[test]
    fn chained_steps_share_one_completion_wait() {
        // The same Firefox step, 6 steps a submit: the chunk's 112.6 ms of work ends before the
        // second tick, whose wait (87.4 ms) the six tokens share.
        let i = FloorInputs {
            bytes_per_token: 96.6e6,
            bandwidth_gb_s: 6.3,
            dispatches: 153,
            dispatch_us: 22.7,
            latency_ms: 101.0,
            tick_ms: Some(100.0),
            steps_per_submit: 6.0,
        };
        let f = i.floor().unwrap();
        let work = 96.6e6 / 6.3e9 + 153.0 * 22.7e-6;
        assert!(close(f.sync_s, (0.2 - 6.0 * work) / 6.0), "{}", f.sync_s);
        assert_eq!(f.limit, Limit::Bytes);
        // Without a tick, the round trip is split alike.
        let g = FloorInputs {
            tick_ms: None,
            latency_ms: 0.45,
            steps_per_submit: 9.0,
            ..i
        };
        assert!(close(g.floor().unwrap().sync_s, 0.000_05));
        let bad = FloorInputs {
            steps_per_submit: 0.5,
            ..i
        };
        assert_eq!(bad.floor().unwrap_err().field, "steps per submit");
    }

    #[test]
    fn on_a_tick_a_step_ends_at_the_first_tick_after_its_work() {
        // Firefox on lavapipe: 96.6 MB at 6.3 GB/s (15.3 ms) + 153 × 22.7 µs (3.47 ms) of work,
        // completions on a 100 ms timer: each token takes one tick.
        let i = FloorInputs {
            bytes_per_token: 96.6e6,
            bandwidth_gb_s: 6.3,
            dispatches: 153,
            dispatch_us: 22.7,
            latency_ms: 101.0,
            tick_ms: Some(100.0),
            steps_per_submit: 1.0,
        };
        let f = i.floor().unwrap();
        assert!(close(f.step_s, 0.1));
        assert!(close(f.tok_s, 10.0));
        assert_eq!(f.limit, Limit::Completion);
        let s = i.sentence(&f);
        assert!(
            s.starts_with("The browser's completion tick sets this speed: this browser learns that the GPU has finished only when a 100 ms timer fires, so each token waits 81.2 ms after its 18.8 ms of work"),
            "{s}"
        );
        assert!(s.contains("another browser, the CPU engine"), "{s}");
        // 5.8 tok/s measured (Firefox 153, SmolLM2): some tokens took two ticks.
        let m = f.measured_sentence(5.8).unwrap();
        assert!(
            m.contains("1.72× the floor's 100 ms. The other 72.4 ms: ticks come whole"),
            "{m}"
        );
        // 150 ms of bytes + 3.47 ms of launches wait for the second tick: 200 ms a token.
        let big = FloorInputs {
            bytes_per_token: 0.15 * 6.3e9,
            ..i
        };
        let f = big.floor().unwrap();
        assert!(close(f.step_s, 0.2), "{}", f.step_s);
        assert_eq!(f.limit, Limit::Bytes);
        assert!(big.sentence(&f).starts_with("Bandwidth sets this speed:"));
    }

    #[test]
    fn measured_against_the_floor() {
        let f = small_on_big().floor().unwrap();
        // 1,000 tok/s = 1 ms a token: 1.20× the floor's 0.834 ms.
        assert!(close(f.measured_ratio(1000.0).unwrap(), 1e-3 / 834e-6));
        assert_eq!(
            f.measured_sentence(1000.0).unwrap(),
            "Measured: 1.00 ms a token, 1.20× the floor's 0.834 ms."
        );
        // 288 tok/s: 3.47 ms, 4.16× the floor; the rest is named.
        let s = f.measured_sentence(288.0).unwrap();
        assert!(s.contains("4.16× the floor's 0.834 ms. The other 2.64 ms"), "{s}");
        assert_eq!(f.measured_ratio(0.0), None);
        assert_eq!(f.measured_ratio(f64::NAN), None);
    }

    #[test]
    fn free_dispatches_leave_the_bytes() {
        let i = FloorInputs {
            dispatch_us: 0.0,
            latency_ms: 0.0,
            ..small_on_big()
        };
        let f = i.floor().unwrap();
        assert_eq!(f.limit, Limit::Bytes);
        assert!(f.ratio.is_infinite());
        assert!(close(f.step_s, f.bytes_s));
        assert!(i.sentence(&f).contains("∞× the rest"));
    }

    #[test]
    fn a_term_short_of_the_others_together_is_the_largest_part() {
        // 0.4 ms of bytes, 0.3 of launches, 0.3 of waiting.
        let i = FloorInputs {
            bytes_per_token: 1.6e6,
            bandwidth_gb_s: 4.0,
            dispatches: 100,
            dispatch_us: 3.0,
            latency_ms: 0.3,
            tick_ms: None,
            steps_per_submit: 1.0,
        };
        let f = i.floor().unwrap();
        assert_eq!(f.limit, Limit::Bytes);
        assert!(close(f.ratio, 0.4 / 0.6));
        assert!(
            i.sentence(&f)
                .starts_with("Bandwidth is the largest part of this speed: 0.400 ms")
        );
    }

    #[test]
    fn bad_figures_are_named() {
        let bad = |i: FloorInputs| i.floor().unwrap_err().field;
        assert_eq!(
            bad(FloorInputs {
                bandwidth_gb_s: 0.0,
                ..small_on_big()
            }),
            "bandwidth"
        );
        assert_eq!(
            bad(FloorInputs {
                bytes_per_token: f64::NAN,
                ..small_on_big()
            }),
            "bytes per token"
        );
        assert_eq!(
            bad(FloorInputs {
                dispatch_us: -1.0,
                ..small_on_big()
            }),
            "cost per dispatch"
        );
        assert_eq!(
            bad(FloorInputs {
                tick_ms: Some(0.0),
                steps_per_submit: 1.0,
                ..small_on_big()
            }),
            "completion tick"
        );
        assert_eq!(
            bad(FloorInputs {
                dispatches: 2_000_000,
                ..small_on_big()
            }),
            "dispatches"
        );
    }
}
