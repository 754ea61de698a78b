//! How many decode steps one submit chains (tokscope-gpu's `chain`): enough that the host's
//! share of a token is small, few enough that Stop answers quickly.
//!
//! A chunk of K steps takes about T(K) = a + b·K: b a step's work, a what the chunk costs the
//! host beside it (the completion latency: 0.4–3 ms in Chromium, Firefox 153's 100 ms tick
//! un-nudged; see `completion`; and the host's own cost of recording, submitting and mapping,
//! which a 4-byte round trip leaves out: in Firefox it set the speed). The host's share of a
//! token is h(K) = (a/K) / (b + a/K). Growing K by [`GROWTH`]× removes (1 − 1/GROWTH) of a/K, so
//! the time a token takes falls by that share of h(K): where a growth gains less than
//! (1 − 1/GROWTH) · [`HOST_SHARE`], the host's share was already under [`HOST_SHARE`] at the
//! smaller K, which is the one kept ([`Growth`]). Growing 4× a time reaches the longest chunk in
//! three chunks (4, 16, 64): a 64-token reply is over before doubling would get there.
//! So K is measured, not modelled: no figure for a or b is needed. The reasoning about a round
//! trip per step is the jax-js WebGPU backend's (≈ 0.45 ms a submit + map on an M1 Max, pull
//! request 124); WebLLM avoids the read-back between steps altogether.
//!
//! Measured (`cargo run -p tokscope-e2e --example gpu_decode -- 2 firefox tiny K`, Firefox 153 on
//! lavapipe, the tiny model, 64 tokens): fixed K = 16: 594 tok/s; K = 48: 984 tok/s, where a
//! K sized from the 3 ms round trip alone (≈ 14) gave 414–481.

use serde::{Deserialize, Serialize};

/// The most steps one submit chains (the engine's buffers hold this many).
pub const MAX_CHAIN: usize = 64;
/// The host's share of a token a chunk's length aims under.
pub const HOST_SHARE: f64 = 0.1;
/// A chunk lasts at most about this long, so Stop answers within it (seconds).
pub const STOP_WITHIN_S: f64 = 0.25;
/// Steps in the first chunks, before a step has been timed.
pub const FIRST_CHUNK: usize = 4;
/// How much a chunk grows at a time while growing pays.
pub const GROWTH: usize = 4;

/// How a GPU decode submits its steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Chain {
    /// One step a submit, the host reading each token back (`--chain 0`, `chain=0`).
    Off,
    /// Steps a submit fixed.
    Fixed(usize),
    /// Chosen from the measured round trip and step time ([`Growth`]).
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

/// The most steps a chunk may take at `per_token_s` a step: Stop answers within
/// [`STOP_WITHIN_S`] (at least one step), and the engine holds [`MAX_CHAIN`].
pub fn stop_cap(per_token_s: f64) -> usize {
    if !(per_token_s > 0.0 && per_token_s.is_finite()) {
        return FIRST_CHUNK;
    }
    ((STOP_WITHIN_S / per_token_s).floor() as usize).clamp(1, MAX_CHAIN)
}

/// The host's share of a token for chunks of `k` steps taking `a + b·k` seconds.
pub fn host_share(a: f64, b: f64, k: usize) -> f64 {
    (a / k as f64) / (b + a / k as f64)
}

/// A chained decode's chunk length, grown while it pays (see the module's text).
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    /// Steps the next chunks take.
    pub k: usize,
    /// The last chunk timed at the length before `k`: (steps, seconds a step).
    last: Option<(usize, f64)>,
    /// Doubling stopped paying: `k` stays (Stop's bound still applies).
    pub settled: bool,
}

impl Default for Growth {
    fn default() -> Self {
        Self {
            k: FIRST_CHUNK,
            last: None,
            settled: false,
        }
    }
}

impl Growth {
    /// A chunk of `k` steps came back at `per_token_s` a step (its time ÷ its steps): the
    /// next chunks' length.
    pub fn observe(&mut self, k: usize, per_token_s: f64) -> usize {
        let cap = stop_cap(per_token_s);
        if !self.settled && k == self.k {
            match self.last {
                // A growth from k0 to k that gained less than its share (1 − k0/k) of the host's
                // share aimed under: the share was under it at k0; keep that one.
                Some((k0, t0)) if k > k0 && per_token_s > t0 * (1.0 - (1.0 - k0 as f64 / k as f64) * HOST_SHARE) => {
                    self.k = k0;
                    self.settled = true;
                }
                // Grow, as far as Stop allows (a chunk's time shrinks per token as it grows,
                // so Stop's bound grows with it); where it allows no more, stay.
                _ => {
                    self.last = Some((k, per_token_s));
                    self.k = (GROWTH * k).min(cap);
                    self.settled = self.k <= k;
                }
            }
        }
        self.k = self.k.min(cap).max(1);
        self.k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunk lengths a decode grows through where a chunk of k steps takes a + b·k seconds.
    fn grown(a: f64, b: f64) -> (usize, Vec<usize>) {
        let mut g = Growth::default();
        let mut seen = vec![g.k];
        for _ in 0..12 {
            let k = g.k;
            g.observe(k, (a + b * k as f64) / k as f64);
            seen.push(g.k);
        }
        (g.k, seen)
    }

    #[test]
    fn the_chunk_grows_until_the_hosts_share_is_under_a_tenth() {
        // 0.5 ms of host cost a chunk, 1 ms a step: 4, 16 (8.3 % faster a token), then 64
        // gains 2.3 % (under three quarters of a tenth), so 16 stays: the smallest length grown
        // to whose host share is under 10 %.
        let (k, seen) = grown(0.000_5, 0.001);
        assert_eq!(k, 16, "{seen:?}");
        assert!(host_share(0.000_5, 0.001, k) < HOST_SHARE, "{seen:?}");
        assert!(host_share(0.000_5, 0.001, k / GROWTH) >= HOST_SHARE, "{seen:?}");
        // 2 ms a chunk: 16 still leaves the host 11 %; 64 is reached.
        assert_eq!(grown(0.002, 0.001).0, MAX_CHAIN);
        // A host costing 25 ms a chunk (Firefox's, the tiny model): as long as the engine holds.
        assert_eq!(grown(0.025, 0.001).0, MAX_CHAIN);
        // Behind a 100 ms tick: Stop's bound first (9 steps), growing with the chunk: 64.
        let (k, seen) = grown(0.1, 0.001);
        assert_eq!(k, MAX_CHAIN, "{seen:?}");
        assert_eq!(seen[..3], [FIRST_CHUNK, 9, 20], "{seen:?}");
        // A cheap host beside a slow step: the first length holds.
        assert_eq!(grown(0.000_1, 0.01).0, FIRST_CHUNK);
        // Stop's bound: 80 ms a step (SmolLM2 in Firefox, nudged) caps a chunk at 3 steps;
        // behind a 100 ms tick a chunk of 2 would last 260 ms: one step.
        assert_eq!(grown(0.01, 0.08).0, 3);
        assert_eq!(grown(0.1, 0.08).0, 1);
        // Never past the engine's buffers.
        assert!(grown(1.0, 0.000_01).0 <= MAX_CHAIN);
    }

    #[test]
    fn stop_bounds_a_chunk() {
        assert_eq!(stop_cap(0.1), 2);
        assert_eq!(stop_cap(1.0), 1);
        assert_eq!(stop_cap(1e-6), MAX_CHAIN);
        assert_eq!(stop_cap(f64::NAN), FIRST_CHUNK);
    }

    #[test]
    fn chain_settings_read_back() {
        for c in [Chain::Off, Chain::Fixed(1), Chain::Fixed(MAX_CHAIN), Chain::Auto] {
            assert_eq!(Chain::parse(&c.to_param()), Ok(c));
        }
        assert!(Chain::parse("65").unwrap_err().contains("to 64"));
        assert!(Chain::parse("-1").is_err());
    }
}
