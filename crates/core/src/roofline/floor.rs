//! The floor model of one decode step on a GPU: the time to stream the step's bytes at the
//! probed bandwidth, plus the platform's fixed cost per token — every dispatch's launch (the
//! probe's empty dispatch) and one submit + read-back round trip:
//!
//! `floor = bytes ÷ probed bandwidth + dispatches × probed cost per dispatch + round trip`.
//!
//! It is the `time per token ≈ bytes ÷ bandwidth + dispatches × cost per dispatch + sync` model
//! of DESIGN.md with every term measured on the device (tokscope's probe), so a measured step
//! can be read against it: a small model on a big GPU is latency-bound (the fixed cost sets its
//! speed, whatever the bandwidth), a big model bandwidth-bound. Sources: Williams, Waterman &
//! Patterson, "Roofline" (CACM 2009) for the bandwidth term; the fixed term is the launch
//! overhead the roofline leaves out (NVIDIA's CUDA Graphs notes make the same point: "for
//! short-running kernels, launch overheads can be a significant fraction of the overall time").

use super::{GB, InputError, check};
use crate::human::{bytes, count};
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
    /// The probe's submit + read-back round trip, ms (once per token).
    pub round_trip_ms: f64,
}

/// Which term sets the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Streaming the bytes takes longer than the fixed cost: bandwidth-bound.
    Bytes,
    /// Launches and the round trip take longer than the bytes: latency-bound.
    FixedCost,
}

/// The floor model's prediction for one token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Floor {
    /// bytes ÷ bandwidth, seconds.
    pub bytes_s: f64,
    /// dispatches × cost per dispatch, seconds.
    pub dispatch_s: f64,
    /// The submit + read-back round trip, seconds.
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
    /// The larger term ÷ the smaller (≥ 1): by how much the limit dominates.
    pub ratio: f64,
}

const MAX_BYTES: f64 = 1e15;
const MAX_DISPATCHES: u32 = 1_000_000;

impl FloorInputs {
    /// The prediction; each bad figure is named.
    pub fn floor(&self) -> Result<Floor, InputError> {
        check("bytes per token", self.bytes_per_token, false, MAX_BYTES, "bytes")?;
        check("bandwidth", self.bandwidth_gb_s, false, 1e6, "GB/s")?;
        check("cost per dispatch", self.dispatch_us, true, 1e6, "µs")?;
        check("round trip", self.round_trip_ms, true, 1e5, "ms")?;
        if self.dispatches > MAX_DISPATCHES {
            return Err(InputError {
                field: "dispatches",
                message: format!("at most {MAX_DISPATCHES}, got {}", self.dispatches),
            });
        }
        let bytes_s = self.bytes_per_token / (self.bandwidth_gb_s * GB);
        let dispatch_s = self.dispatches as f64 * self.dispatch_us * 1e-6;
        let sync_s = self.round_trip_ms * 1e-3;
        let fixed_s = dispatch_s + sync_s;
        let step_s = bytes_s + fixed_s;
        let (limit, ratio) = if bytes_s >= fixed_s {
            (Limit::Bytes, ratio(bytes_s, fixed_s))
        } else {
            (Limit::FixedCost, ratio(fixed_s, bytes_s))
        };
        Ok(Floor {
            bytes_s,
            dispatch_s,
            sync_s,
            fixed_s,
            step_s,
            tok_s: 1.0 / step_s,
            ceiling_tok_s: 1.0 / bytes_s,
            limit,
            ratio,
        })
    }

    /// One sentence for the reader: which term sets this device's speed for this model, and by
    /// how much, with the terms spelled out.
    pub fn sentence(&self, f: &Floor) -> String {
        let fixed = format!(
            "{} dispatches × {} µs + {} of submit and read-back = {}",
            count(self.dispatches as u64),
            figure(self.dispatch_us),
            ms(f.sync_s),
            ms(f.fixed_s)
        );
        let read = format!(
            "{} to read {} at {} GB/s",
            ms(f.bytes_s),
            bytes(self.bytes_per_token),
            figure(self.bandwidth_gb_s)
        );
        match f.limit {
            Limit::FixedCost => format!(
                "The fixed cost per token sets this speed: {fixed}, {}× the {read}. A small model \
                 on a fast GPU is latency-bound: the GPU waits on launches and synchronisation, \
                 not on memory, so more bandwidth would not make it faster.",
                figure(f.ratio)
            ),
            Limit::Bytes => format!(
                "Bandwidth sets this speed: {read}, {}× the fixed cost per token ({fixed}).",
                figure(f.ratio)
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
        if r > 1.5 {
            s.push_str(&format!(
                " The other {} are the kernels' own work beyond streaming the bytes: arithmetic \
                 (on a CPU-backed adapter the kernels are compute-bound), and waits where a \
                 kernel leaves most of the GPU's cores idle.",
                ms(step - self.step_s)
            ));
        }
        Some(s)
    }
}

fn ratio(big: f64, small: f64) -> f64 {
    if small > 0.0 { big / small } else { f64::INFINITY }
}

/// Three significant figures, no exponent: 29.5, 0.612, 1,520.
fn figure(x: f64) -> String {
    if !x.is_finite() {
        return "∞".into();
    }
    if x >= 1000.0 {
        return count(x.round() as u64);
    }
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else if x >= 1.0 {
        2
    } else {
        3
    };
    format!("{x:.digits$}")
}

/// Seconds as milliseconds, three significant figures: "4.70 ms", "0.612 ms".
fn ms(seconds: f64) -> String {
    format!("{} ms", figure(seconds * 1e3))
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
            round_trip_ms: 0.05,
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
        assert_eq!(f.limit, Limit::FixedCost);
        assert!(close(f.ratio, 810.0 / 24.0));
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
        assert!(s.starts_with("Bandwidth sets this speed: 1.13 ms to read 4.52 GB at 4,000 GB/s, 1.40× the fixed cost per token (152 dispatches × 5.00 µs + 0.050 ms of submit and read-back = 0.810 ms)."), "{s}");
    }

    #[test]
    fn the_sentence_names_the_fixed_cost_and_the_factor() {
        let i = small_on_big();
        let f = i.floor().unwrap();
        let s = i.sentence(&f);
        assert!(
            s.starts_with("The fixed cost per token sets this speed: 152 dispatches × 5.00 µs + 0.050 ms of submit and read-back = 0.810 ms, 33.8× the 0.024 ms to read 96.00 MB at 4,000 GB/s."),
            "{s}"
        );
        assert!(s.contains("latency-bound"));
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
            round_trip_ms: 0.0,
            ..small_on_big()
        };
        let f = i.floor().unwrap();
        assert_eq!(f.limit, Limit::Bytes);
        assert!(f.ratio.is_infinite());
        assert!(close(f.step_s, f.bytes_s));
        assert!(i.sentence(&f).contains("∞× the fixed cost"));
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
                dispatches: 2_000_000,
                ..small_on_big()
            }),
            "dispatches"
        );
    }
}
