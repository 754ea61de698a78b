//! The decode meter's figures: live and mean tok/s from per-token latencies, and the rate as
//! words per minute against a reading line. Pure, so the page's numbers are tested natively.

/// Non-fiction silent reading speed, words per minute: Brysbaert (2019), "How many words do we
/// read per minute? A review and meta-analysis of reading rate", J. Memory and Language 109
/// (190 studies, 18,573 participants).
pub const READING_WPM: f64 = 238.0;

/// English words per token for GPT-style BPE vocabularies ("1 token ≈ 0.75 words", OpenAI's
/// tokenizer guide). An approximation: other tokenizers and languages differ.
pub const WORDS_PER_TOKEN: f64 = 0.75;

/// Tokens generated per second that keep pace with a reader (≈5.3).
pub fn reading_tok_s() -> f64 {
    READING_WPM / 60.0 / WORDS_PER_TOKEN
}

/// Words per minute for a decode rate in tok/s, at `words_per_token` (measured on the text,
/// [`crate::text_stats::measured_words_per_token`], or [`WORDS_PER_TOKEN`]).
pub fn words_per_minute(tok_s: f64, words_per_token: f64) -> f64 {
    tok_s * words_per_token * 60.0
}

/// Latencies of decoded tokens (seconds each, after the first token), from which the meter's
/// rates come. The first token is timed apart, as time to first token (it includes prefill).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecodeMeter {
    latencies: Vec<f64>,
}

/// Tokens the "current" rate averages over: enough to smooth one slow token, few enough to
/// follow a change within a second at chat speeds.
pub const CURRENT_WINDOW: usize = 8;

impl DecodeMeter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one decoded token's latency. Non-finite or negative values are ignored.
    pub fn push(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds >= 0.0 {
            self.latencies.push(seconds);
        }
    }

    pub fn latencies(&self) -> &[f64] {
        &self.latencies
    }

    pub fn count(&self) -> usize {
        self.latencies.len()
    }

    /// Seconds spent on all decoded tokens.
    pub fn total_s(&self) -> f64 {
        self.latencies.iter().sum()
    }

    /// Tokens ÷ total time over all decoded tokens (not the mean of per-token rates, which
    /// overweights fast tokens).
    pub fn mean_tok_s(&self) -> Option<f64> {
        rate(&self.latencies)
    }

    /// The rate over the last [`CURRENT_WINDOW`] tokens.
    pub fn current_tok_s(&self) -> Option<f64> {
        let from = self.latencies.len().saturating_sub(CURRENT_WINDOW);
        rate(&self.latencies[from..])
    }
}

fn rate(latencies: &[f64]) -> Option<f64> {
    let total: f64 = latencies.iter().sum();
    (!latencies.is_empty() && total > 0.0).then(|| latencies.len() as f64 / total)
}

/// A download's figures as the progress bar shows them (MB = 10^6 bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub done_mb: f64,
    pub total_mb: Option<f64>,
    /// 0..=1 when the total is known.
    pub fraction: Option<f64>,
    pub mb_s: Option<f64>,
    /// Seconds left at the rate so far.
    pub eta_s: Option<f64>,
}

/// `done` of `total` bytes after `elapsed_s` seconds.
pub fn transfer(done: u64, total: Option<u64>, elapsed_s: f64) -> Transfer {
    let mb = |b: u64| b as f64 / 1e6;
    let mb_s = (elapsed_s > 0.0 && done > 0).then(|| mb(done) / elapsed_s);
    let total = total.filter(|&t| t > 0);
    Transfer {
        done_mb: mb(done),
        total_mb: total.map(mb),
        fraction: total.map(|t| (done as f64 / t as f64).min(1.0)),
        mb_s,
        eta_s: total.zip(mb_s).map(|(t, r)| mb(t.saturating_sub(done)) / r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_line_is_about_five_tokens_a_second() {
        // DESIGN.md: 238 wpm at 0.75 words per token ≈ 5.3 tok/s; 10 tok/s ≈ 450 wpm.
        assert!((reading_tok_s() - 5.2889).abs() < 1e-3);
        assert_eq!(words_per_minute(10.0, WORDS_PER_TOKEN), 450.0);
        assert_eq!(words_per_minute(10.0, 0.5), 300.0);
    }

    #[test]
    fn mean_is_tokens_over_time() {
        let mut m = DecodeMeter::new();
        assert_eq!(m.mean_tok_s(), None);
        for s in [0.1, 0.1, 0.3] {
            m.push(s);
        }
        // 3 tokens in 0.5 s, not the mean of 10, 10 and 3.33 tok/s.
        assert!((m.mean_tok_s().unwrap() - 6.0).abs() < 1e-12);
    }

    #[test]
    fn current_follows_the_last_window() {
        let mut m = DecodeMeter::new();
        for _ in 0..20 {
            m.push(0.5);
        }
        for _ in 0..CURRENT_WINDOW {
            m.push(0.01);
        }
        assert!((m.current_tok_s().unwrap() - 100.0).abs() < 1e-9);
        assert!(m.mean_tok_s().unwrap() < 3.0);
    }

    #[test]
    fn bad_samples_are_ignored() {
        let mut m = DecodeMeter::new();
        m.push(f64::NAN);
        m.push(-1.0);
        m.push(0.0);
        assert_eq!(m.count(), 1);
        assert_eq!(m.mean_tok_s(), None);
    }

    #[test]
    fn transfer_figures() {
        let t = transfer(25_000_000, Some(100_000_000), 2.0);
        assert_eq!((t.done_mb, t.total_mb, t.fraction), (25.0, Some(100.0), Some(0.25)));
        assert_eq!((t.mb_s, t.eta_s), (Some(12.5), Some(6.0)));
        let t = transfer(5, None, 0.0);
        assert_eq!((t.total_mb, t.fraction, t.mb_s, t.eta_s), (None, None, None, None));
        // More than announced (a wrong Content-Length) never shows past 100 %.
        assert_eq!(transfer(12, Some(10), 1.0).fraction, Some(1.0));
    }
}
