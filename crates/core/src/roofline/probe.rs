//! The arithmetic of the bandwidth probe (tokscope-gpu's `probe`), kept here so that every figure
//! it shows is a tested pure function.
//!
//! A wall clock around one submit measures the work *plus* the time the host takes to learn that
//! the work is done (the completion latency). That latency is small natively (≈ 0.1 ms on
//! lavapipe) and in Chrome (0.45 ms for a submit + map on an M1 Max), but Firefox drives WebGPU
//! completion from a 100 ms timer (`POLL_TIME_MS` in `WebGPUParent.cpp`; Mozilla bug 1870699,
//! "Don't poll WebGPU from a timer"; jax-js pull request 124 measured 103 ms for an empty
//! submit). So the probe never divides by one submit's time: it times a submit of 1 and of n
//! dispatches and divides the *extra* work by the *extra* time, with n grown until that
//! difference dwarfs the latency ([`needed_difference`]). The latency itself is reported as a
//! figure of its own ([`Latency`]), and named as a tick when it is one.

use crate::stats::median;
use serde::{Deserialize, Serialize};

/// The least difference between the short and the long submit, seconds: far above any
/// clock's resolution (browsers coarsen `performance.now()` to 5–100 µs), and long enough to
/// average a CPU adapter's dispatch cost, which moves by a third from one 0.1 s to the next on
/// a shared machine (lavapipe wakes its thread pool for each dispatch).
pub const MIN_DIFFERENCE_S: f64 = 0.25;
/// The difference must also be this many completion latencies, so that a latency that varies
/// (or rounds every completion up to a tick) moves a figure by at most 1 ÷ 20 = 5 %.
pub const LATENCY_MULTIPLE: f64 = 20.0;

/// The time difference the probe needs for a latency of `latency_s`: at least 250 ms and 20×.
pub fn needed_difference(latency_s: f64) -> f64 {
    MIN_DIFFERENCE_S.max(LATENCY_MULTIPLE * latency_s.max(0.0))
}

/// The next dispatch count after `n` dispatches made a difference of `difference_s` where
/// `needed_s` is needed: enough for the need with a quarter to spare at the rate seen so far,
/// at least double (a difference lost in the noise says little about the rate) and at most 16×
/// (a first difference made of noise must not ask for hours), never over `max`.
pub fn next_count(n: u32, difference_s: f64, needed_s: f64, max: u32) -> u32 {
    let n = n.max(1);
    let per = if difference_s > 0.0 && n > 1 {
        difference_s / (n - 1) as f64
    } else {
        0.0
    };
    let wanted = if per > 0.0 {
        1.0 + 1.25 * needed_s / per
    } else {
        f64::INFINITY
    };
    let lo = n as f64 * 2.0;
    let hi = n as f64 * 16.0;
    (wanted.clamp(lo, hi).ceil() as u64).min(max as u64) as u32
}

/// The cost of one more unit of work (a dispatch, or a dispatch's bytes) from a submit of one
/// unit taking `one_s` and of `n` units taking `many_s`: `(many − one) ÷ (n − 1)`. `None`
/// where nothing was added or the long submit was not the longer.
pub fn per_extra(one_s: f64, many_s: f64, n: u32) -> Option<f64> {
    let d = many_s - one_s;
    (n > 1 && d > 0.0 && d.is_finite()).then(|| d / (n - 1) as f64)
}

/// Below this, a steady latency is the GPU and the driver answering, not a timer.
const TICK_MIN_MS: f64 = 10.0;
/// A tick's median sits within this share of its minimum: a timer fires at its period or late
/// (Firefox's now and then 13 ms late), never early; a GPU finishing work varies both ways.
const TICK_SPREAD: f64 = 0.1;

/// How long the host takes to learn that submitted work has finished: a submit of one empty
/// dispatch and a 4-byte read-back, timed from submit until the data is mapped — what each
/// decoded token pays once when the engine waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub min_ms: f64,
    pub median_ms: f64,
    pub max_ms: f64,
    /// The period of the timer that completions wait for, where the samples show one: every
    /// sample at least 10 ms and the median within 10 % of the least. No GPU takes 10 ms to run
    /// an empty dispatch, and none takes the same 10+ ms every time: a host-side timer does
    /// (Firefox's WebGPU, 100 ms).
    pub tick_ms: Option<f64>,
}

impl Latency {
    /// The figures of a set of samples, milliseconds; `None` for no usable sample.
    pub fn from_samples(ms: &[f64]) -> Option<Latency> {
        let v: Vec<f64> = ms.iter().copied().filter(|x| x.is_finite() && *x >= 0.0).collect();
        if v.is_empty() {
            return None;
        }
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(0.0, f64::max);
        let med = median(&v);
        let tick = (v.len() >= 3 && min >= TICK_MIN_MS && med <= (1.0 + TICK_SPREAD) * min).then_some(med);
        Some(Latency {
            min_ms: min,
            median_ms: med,
            max_ms: max,
            tick_ms: tick,
        })
    }

    /// "0.103 ms (0.095–0.140)", and for a tick "100 ms (99.8–103): a timer's tick".
    pub fn describe(&self) -> String {
        use crate::human::figure;
        let range = format!(
            "{} ms (min {}, max {})",
            figure(self.median_ms),
            figure(self.min_ms),
            figure(self.max_ms)
        );
        match self.tick_ms {
            Some(_) => format!("{range}: a timer's tick, not the GPU"),
            None => range,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_needed_is_250_ms_or_20_latencies() {
        assert_eq!(needed_difference(0.0001), 0.25);
        assert_eq!(needed_difference(0.005), 0.25);
        assert!((needed_difference(0.103) - 2.06).abs() < 1e-12);
        assert_eq!(needed_difference(f64::NAN), 0.25);
    }

    #[test]
    fn counts_grow_to_the_need_within_bounds() {
        // 1 → 2 dispatches made 10 ms: 100 ms needs 1 + 1.25 × 10 = 13.5 → 14.
        assert_eq!(next_count(2, 0.010, 0.1, 1 << 20), 14);
        // A difference of nothing asks for the most, 16×.
        assert_eq!(next_count(2, 0.0, 0.1, 1 << 20), 32);
        // Nearly there still at least doubles.
        assert_eq!(next_count(40, 0.099, 0.1, 1 << 20), 80);
        // Never past the cap.
        assert_eq!(next_count(1000, 0.001, 2.0, 4096), 4096);
        // From one dispatch (no difference yet): 16×.
        assert_eq!(next_count(1, 0.0, 0.1, 1 << 20), 16);
    }

    #[test]
    fn a_unit_costs_the_extra_time_over_the_extra_units() {
        // 1 dispatch in 100 ms (a tick), 41 in 2.1 s: 50 ms each.
        assert!((per_extra(0.1, 2.1, 41).unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(per_extra(0.1, 0.1, 41), None);
        assert_eq!(per_extra(0.2, 0.1, 41), None);
        assert_eq!(per_extra(0.1, 2.1, 1), None);
        assert_eq!(per_extra(0.1, f64::INFINITY, 3), None);
    }

    #[test]
    fn a_steady_latency_over_10_ms_is_a_tick() {
        // Firefox 153: every completion on its 100 ms timer, one of them late.
        let ff = Latency::from_samples(&[103.4, 100.2, 101.0, 113.0, 100.8]).unwrap();
        assert_eq!(ff.tick_ms, Some(101.0));
        assert_eq!((ff.min_ms, ff.median_ms, ff.max_ms), (100.2, 101.0, 113.0));
        assert!(
            ff.describe().ends_with("a timer's tick, not the GPU"),
            "{}",
            ff.describe()
        );
        // Chrome: sub-millisecond, whatever its spread.
        let chrome = Latency::from_samples(&[0.45, 0.47, 0.44]).unwrap();
        assert_eq!(chrome.tick_ms, None);
        assert_eq!(chrome.describe(), "0.450 ms (min 0.440, max 0.470)");
        // 5–15 ms that varies (gpuweb issue 4432): slow, but the GPU's, not a timer's.
        assert_eq!(Latency::from_samples(&[5.0, 9.0, 15.0]).unwrap().tick_ms, None);
        assert_eq!(Latency::from_samples(&[12.0, 15.0, 18.0]).unwrap().tick_ms, None);
        // Too few samples to call it steady.
        assert_eq!(Latency::from_samples(&[100.0, 100.0]).unwrap().tick_ms, None);
        assert_eq!(Latency::from_samples(&[]), None);
        assert_eq!(Latency::from_samples(&[f64::NAN]), None);
    }
}
