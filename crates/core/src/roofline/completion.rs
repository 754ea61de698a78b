//! The completion latency a page sees, and whether nudging the queue is worth it.
//!
//! Firefox's WebGPU (153) learns of finished work only when it polls the device: on a 100 ms
//! timer, or when the queue receives a submit. A token's read-back then waits for the next tick,
//! whatever the GPU took. An empty submit every few milliseconds while a map is pending makes it
//! poll sooner (tests/e2e/examples/completion_nudge.rs: a 4-byte map 97 → 3 ms in Firefox 153;
//! Chromium, whose maps take 0.5 ms, gains nothing). The engine measures both once per device
//! and keeps the nudge only where it is seen to pay (tokscope-gpu's `completion::settle`).

use super::probe::Latency;
use serde::{Deserialize, Serialize};

/// Milliseconds between nudges where they are on.
pub const NUDGE_MS: u32 = 2;
/// The nudge stays on only where it at least halves the median latency.
const WORTH: f64 = 0.5;

/// What the engine measured of its device's completions and chose.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Submit → mapped, nothing done to hasten it.
    pub plain: Latency,
    /// The same with an empty submit every [`NUDGE_MS`], where the plain latency was a tick.
    pub nudged: Option<Latency>,
    /// Whether reads on this device now nudge.
    pub nudging: bool,
}

impl Completion {
    /// One line for a reader: the latency, and what the nudge did where it was tried.
    pub fn describe(&self) -> String {
        match self.nudged {
            Some(n) if self.nudging => describe_nudged(&n, &self.plain),
            Some(n) => format!(
                "{} (an empty submit every {NUDGE_MS} ms did not help: {})",
                self.plain.describe(),
                n.describe()
            ),
            None => self.plain.describe(),
        }
    }
}

/// "3.10 ms (min …), nudged by an empty submit every 2 ms (without: 100 ms …: a timer's tick…)".
pub fn describe_nudged(nudged: &Latency, plain: &Latency) -> String {
    format!(
        "{}, nudged by an empty submit every {NUDGE_MS} ms (without: {})",
        nudged.describe(),
        plain.describe()
    )
}

/// Whether `nudged` is worth nudging for, against `plain`: it at least halves the median.
pub fn worth_nudging(plain: &Latency, nudged: &Latency) -> bool {
    nudged.median_ms <= WORTH * plain.median_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(ms: f64) -> Latency {
        Latency::from_samples(&[ms; 7]).unwrap()
    }

    #[test]
    fn the_nudge_is_kept_only_where_it_halves_the_latency() {
        assert!(worth_nudging(&lat(100.0), &lat(3.0)));
        assert!(worth_nudging(&lat(100.0), &lat(50.0)));
        assert!(!worth_nudging(&lat(100.0), &lat(60.0)));
    }

    #[test]
    fn the_sentence_says_what_the_nudge_did() {
        let (plain, nudged) = (lat(100.0), lat(3.0));
        let on = Completion {
            plain,
            nudged: Some(nudged),
            nudging: true,
        };
        assert_eq!(on.describe(), describe_nudged(&nudged, &plain));
        assert!(
            on.describe().starts_with(&nudged.describe())
                && on.describe().ends_with(&format!("(without: {})", plain.describe())),
            "{}",
            on.describe()
        );
        let off = Completion { nudging: false, ..on };
        assert!(off.describe().contains("did not help"), "{}", off.describe());
        let untried = Completion {
            plain: lat(0.5),
            nudged: None,
            nudging: false,
        };
        assert_eq!(untried.describe(), lat(0.5).describe());
    }
}
