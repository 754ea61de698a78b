//! How many decode steps one submit chains (tokscope-gpu's `chain`): enough that the host's
//! round trip is a small share of a token, few enough that Stop answers quickly.
//!
//! A chunk of K steps costs the GPU K·s and the host one completion latency L (submit → result
//! mapped: 0.4–3 ms in Chromium, a 100 ms timer's tick in Firefox 153 un-nudged; see
//! `completion`). Without overlap the host's share of a token is L / (L + K·s); it stays under
//! [`HOST_SHARE`] from K = ⌈(1 − h)/h · L/s⌉ on. With two chunks in flight the GPU idles only
//! where the host's L exceeds a chunk's work, so the same K also hides it. The measure is the
//! one the jax-js WebGPU backend reasons with (a submit + map round trip of ≈ 0.45 ms on an M1
//! Max, pull request 124), and what WebLLM avoids by not reading back between steps at all.

use serde::{Deserialize, Serialize};

/// The most steps one submit chains (the engine's buffers hold this many).
pub const MAX_CHAIN: usize = 64;
/// The host's share of a token a chunk's length aims under.
pub const HOST_SHARE: f64 = 0.1;
/// A chunk lasts at most about this long, so Stop answers within it (seconds).
pub const STOP_WITHIN_S: f64 = 0.25;
/// Steps in the first chunk, before a step has been timed, and the fewest a chunk takes where
/// Stop allows: the measured round trip (a 4-byte read) leaves out a submit's own cost on the
/// host (recording, mapping, callbacks): natively on lavapipe the tiny model decoded at 0.68–0.81k
/// tok/s a step a submit, 0.90–0.93k at 4 steps, while the round trip alone asked for 1.
pub const FIRST_CHUNK: usize = 4;

/// How a GPU decode submits its steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Chain {
    /// One step a submit, the host reading each token back (`--chain 0`, `chain=0`).
    Off,
    /// Steps a submit fixed.
    Fixed(usize),
    /// Chosen from the measured round trip and step time ([`chain_len`]).
    #[default]
    Auto,
}

impl Chain {
    /// The value [`Chain::parse`] reads back.
    pub fn to_param(self) -> String {
        match self {
            Chain::Off => "0".into(),
            Chain::Fixed(k) => k.to_string(),
            Chain::Auto => "auto".into(),
        }
    }

    /// `--chain`'s and the page's `chain=` value: `auto`, or steps a submit (0: off).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Chain::Auto),
            _ => match s.parse::<usize>() {
                Ok(0) => Ok(Chain::Off),
                Ok(k) if k <= MAX_CHAIN => Ok(Chain::Fixed(k)),
                _ => Err(format!(
                    "chain: `auto` or steps a submit from 0 (one step, read back each) to {}, got {s:?}",
                    MAX_CHAIN
                )),
            },
        }
    }
}

/// Steps for the next chunk, given the completion latency and a GPU step's time (seconds).
pub fn chain_len(latency_s: f64, step_s: f64) -> usize {
    if !(step_s > 0.0 && step_s.is_finite() && latency_s.is_finite()) {
        return FIRST_CHUNK;
    }
    let wanted = ((1.0 - HOST_SHARE) / HOST_SHARE * latency_s.max(0.0) / step_s).ceil();
    let stop_cap = (STOP_WITHIN_S / step_s).floor().clamp(1.0, MAX_CHAIN as f64);
    wanted.max(FIRST_CHUNK as f64).min(stop_cap) as usize
}

/// A GPU step's time from a chunk of `k` steps that took `seconds` from its submit to its
/// result, of which `latency_s` was the round trip: what remains, per step (at least a
/// microsecond: a chunk can come back faster than the median round trip).
pub fn step_time(seconds: f64, latency_s: f64, k: usize) -> f64 {
    ((seconds - latency_s) / k.max(1) as f64).max(1e-6)
}

/// The host's share of a token for chunks of `k` steps of `step_s` each behind a round trip of
/// `latency_s`, without overlap (what [`chain_len`] bounds).
pub fn host_share(latency_s: f64, step_s: f64, k: usize) -> f64 {
    latency_s / (latency_s + k as f64 * step_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_is_long_enough_to_hide_the_round_trip() {
        // Firefox's tick (100 ms) behind SmolLM2 on lavapipe (80 ms a step): 12 steps would be
        // 1 s a chunk; Stop caps it at 3.
        assert_eq!(chain_len(0.100, 0.080), 3);
        // Chromium on a fast GPU: 0.45 ms round trip, 0.24 ms a step → 17 steps, 9.6 % host.
        let k = chain_len(0.000_45, 0.000_24);
        assert_eq!(k, 17);
        assert!(host_share(0.000_45, 0.000_24, k) < HOST_SHARE);
        assert!(host_share(0.000_45, 0.000_24, k - 1) >= HOST_SHARE);
        // The tiny model in Firefox nudged: 3 ms round trip, 1.3 ms a step.
        assert_eq!(chain_len(0.003, 0.0013), 21);
        // A fast round trip next to a slow step: the fewest steps a chunk takes, unless Stop
        // would wait longer than it should.
        assert_eq!(chain_len(0.000_1, 0.01), FIRST_CHUNK);
        assert_eq!(chain_len(0.000_1, 0.1), 2);
        assert_eq!(chain_len(0.000_1, 1.0), 1);
        // Never past the engine's buffers.
        assert_eq!(chain_len(0.1, 0.000_01), MAX_CHAIN);
    }

    #[test]
    fn chain_settings_read_back() {
        for c in [Chain::Off, Chain::Fixed(1), Chain::Fixed(MAX_CHAIN), Chain::Auto] {
            assert_eq!(Chain::parse(&c.to_param()), Ok(c));
        }
        assert!(Chain::parse("65").unwrap_err().contains("to 64"));
        assert!(Chain::parse("-1").is_err());
    }

    #[test]
    fn nothing_measured_means_the_first_chunk() {
        assert_eq!(chain_len(0.001, 0.0), FIRST_CHUNK);
        assert_eq!(chain_len(f64::NAN, 0.001), FIRST_CHUNK);
        assert_eq!(chain_len(0.001, f64::INFINITY), FIRST_CHUNK);
    }

    #[test]
    fn a_step_is_what_the_chunk_took_past_the_round_trip() {
        assert!((step_time(0.05, 0.01, 4) - 0.01).abs() < 1e-12);
        assert_eq!(step_time(0.001, 0.003, 4), 1e-6);
    }
}
