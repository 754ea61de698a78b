//! `backend=auto` by measurement: where both engines can run, the page times a few decode steps
//! on each and runs the faster. Which one is faster is not a property of the adapter's kind: a
//! hardware GPU behind a browser that learns of finished work on a 100 ms timer decodes about 10
//! tokens a second (issue #32: Firefox 153), slower than the CPU engine in the same browser, and a
//! software adapter can beat a slow CPU engine where completions are prompt.

use crate::human::figure;
use serde::{Deserialize, Serialize};

/// Decode steps timed on the CPU engine (after one untimed step that warms it up): enough to
/// span several of a browser's completion ticks, few enough to cost a fraction of a second.
/// The GPU then decodes the same steps, but stops once it has taken as long as the CPU took for
/// all of them ([`gpu_may_stop`]): a software adapter that needs 0.35 s a step (SwiftShader)
/// would otherwise add seconds to every load.
pub const TRIAL_STEPS: usize = 8;

/// Whether the GPU's trial can stop after `steps` steps in `seconds`: it has at least one step
/// and has already used the CPU engine's whole time, so it cannot be the faster.
pub fn gpu_may_stop(steps: usize, seconds: f64, cpu_seconds: f64) -> bool {
    steps >= 1 && seconds >= cpu_seconds
}

/// Both engines' decode rates over the same greedy steps from the same prompt.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EngineTrial {
    pub gpu_tok_s: f64,
    pub cpu_tok_s: f64,
    /// Steps each rate is over.
    pub gpu_steps: usize,
    pub cpu_steps: usize,
}

impl EngineTrial {
    /// WebGPU unless the CPU engine was faster (a tie keeps the GPU: it leaves the CPU free).
    pub fn use_gpu(&self) -> bool {
        self.cpu_tok_s.partial_cmp(&self.gpu_tok_s) != Some(std::cmp::Ordering::Greater)
    }

    /// "WebGPU here: 8.70 tok/s over 2 steps; CPU engine: 29.0 tok/s over 8: using the CPU engine".
    pub fn describe(&self) -> String {
        format!(
            "WebGPU here: {} tok/s over {} step{}; CPU engine: {} tok/s over {}: using {}",
            figure(self.gpu_tok_s),
            self.gpu_steps,
            if self.gpu_steps == 1 { "" } else { "s" },
            figure(self.cpu_tok_s),
            self.cpu_steps,
            if self.use_gpu() { "WebGPU" } else { "the CPU engine" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_faster_engine_runs_and_the_sentence_gives_both_rates() {
        let slow_gpu = EngineTrial {
            gpu_tok_s: 8.7,
            cpu_tok_s: 29.0,
            gpu_steps: 2,
            cpu_steps: 8,
        };
        assert!(!slow_gpu.use_gpu());
        assert_eq!(
            slow_gpu.describe(),
            "WebGPU here: 8.70 tok/s over 2 steps; CPU engine: 29.0 tok/s over 8: using the CPU engine"
        );
        let fast_gpu = EngineTrial {
            gpu_tok_s: 250.0,
            gpu_steps: 1,
            ..slow_gpu
        };
        assert!(fast_gpu.use_gpu());
        assert!(fast_gpu.describe().starts_with("WebGPU here: 250 tok/s over 1 step; "));
        assert!(fast_gpu.describe().ends_with("using WebGPU"));
        // A tie, or a CPU rate that could not be measured, keeps the GPU.
        assert!(
            EngineTrial {
                cpu_tok_s: 8.7,
                ..slow_gpu
            }
            .use_gpu()
        );
        assert!(
            EngineTrial {
                cpu_tok_s: f64::NAN,
                ..slow_gpu
            }
            .use_gpu()
        );
    }

    #[test]
    fn a_gpu_stops_only_once_it_cannot_win() {
        // The CPU engine took 0.28 s for its 8 steps.
        assert!(!gpu_may_stop(0, 0.5, 0.28), "at least one step");
        assert!(!gpu_may_stop(3, 0.2, 0.28));
        assert!(gpu_may_stop(1, 0.35, 0.28));
    }
}
