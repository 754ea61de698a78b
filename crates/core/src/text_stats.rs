//! A text in tokens, words and characters: the token view's counts and the meter's measured
//! words per token, so that "tokens per second" can be read as words, for this text and this
//! tokenizer rather than a rule of thumb.

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

/// Counts of one text as a tokenizer split it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TextStats {
    pub tokens: usize,
    pub words: usize,
    /// User-perceived characters (extended grapheme clusters, UAX #29): "👍🏽" is one, not the
    /// two code points it is made of.
    pub characters: usize,
}

impl TextStats {
    /// `text` split into `tokens` tokens.
    pub fn new(text: &str, tokens: usize) -> Self {
        Self {
            tokens,
            words: count_words(text),
            characters: text.graphemes(true).count(),
        }
    }

    /// Tokens per word, or `None` for a text without words (only emoji or punctuation).
    pub fn tokens_per_word(&self) -> Option<f64> {
        (self.words > 0).then(|| self.tokens as f64 / self.words as f64)
    }

    /// Words per token, or `None` without tokens or words.
    pub fn words_per_token(&self) -> Option<f64> {
        (self.words > 0 && self.tokens > 0).then(|| self.words as f64 / self.tokens as f64)
    }
}

/// Words by Unicode's word boundaries (UAX #29, "Unicode Text Segmentation", as the
/// `unicode-segmentation` crate implements it): runs of letters, digits and joiners between
/// boundaries, so "don't" and "3.5" are one word each and punctuation is none. UAX #29 has no
/// dictionary, so each Han ideograph counts as a word: a Chinese text's "words" are its
/// characters, the unit its readers' reading speeds are usually given in.
pub fn count_words(text: &str) -> usize {
    text.unicode_words().count()
}

/// The words of a text that grows at its end (the output as it is generated), counted without
/// rescanning all of it for every token: a word never spans an ASCII space or line feed (UAX #29
/// breaks before and after both, WB3a/WB3b/WB999; WB3d only joins spaces to spaces), so the
/// text up to its last one is counted once, and only the rest is kept and counted again.
#[derive(Debug, Default)]
pub struct WordCounter {
    /// The text from its last space or line feed on.
    tail: String,
    /// The words before `tail`, counted for good.
    settled_words: usize,
}

impl WordCounter {
    /// Appends `piece`; the words of the whole text so far.
    pub fn push(&mut self, piece: &str) -> usize {
        self.tail.push_str(piece);
        if let Some(cut) = self.tail.rfind([' ', '\n']) {
            self.settled_words += count_words(&self.tail[..cut]);
            self.tail.drain(..cut);
        }
        self.settled_words + count_words(&self.tail)
    }
}

/// The fewest generated tokens from which the meter trusts a measured words-per-token ratio
/// (below it, one long word swings the ratio by a third).
pub const MIN_TOKENS_FOR_RATIO: usize = 16;

/// Words per token measured on a generated text of `words` words ([`count_words`]) in `tokens`
/// tokens, once it is long enough to mean something. The worker counts the words (it has the
/// segmentation tables already; the page's wasm stays 20 KB lighter without them).
pub fn measured_words_per_token(words: usize, tokens: usize) -> Option<f64> {
    (tokens >= MIN_TOKENS_FOR_RATIO && words > 0).then(|| words as f64 / tokens as f64)
}

/// Sample texts for the token view: the same idea in forms a tokenizer treats very differently.
/// Our own sentences; the point is their token counts, measured live with the loaded model's
/// tokenizer, not any figure written here.
pub const SAMPLES: [(&str, &str); 5] = [
    (
        "English prose",
        "The quick brown fox jumps over the lazy dog, then naps in the afternoon sun.",
    ),
    (
        "Code",
        "fn main() {\n    let total: u64 = (1..=10).map(|n| n * n).sum();\n    println!(\"{total}\");\n}",
    ),
    (
        "German",
        "Die Geschwindigkeitsbegrenzung auf der Autobahn wird regelmäßig diskutiert.",
    ),
    ("Chinese", "内存带宽决定了语言模型生成文本的速度。"),
    ("Emoji", "Great job! 🎉👍🏽 See you tomorrow 🌅☕"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_unicode_boundaries() {
        assert_eq!(count_words("The quick brown fox."), 4);
        assert_eq!(count_words("don't stop at 3.5 km"), 5);
        assert_eq!(count_words("… — !?"), 0);
        // Han ideographs: one word each.
        assert_eq!(count_words("内存带宽"), 4);
        assert_eq!(count_words("Autobahn-Geschwindigkeit"), 2);
    }

    /// Pieces of every kind a tokenizer emits (half words, spaces, line breaks, joiners,
    /// combining marks, emoji, ideographs, punctuation inside words), pushed in random orders:
    /// the running count always equals a count of the whole text.
    #[test]
    fn the_running_count_equals_a_fresh_count() {
        use rand_core::RngCore;
        let pieces = [
            " ",
            "  ",
            "\n",
            "\r\n",
            "The",
            " qu",
            "ick",
            "'",
            "t",
            " don",
            "'t",
            "3",
            ".",
            "5",
            " km",
            "\u{301}",
            "\u{200d}",
            "👍",
            "🏽",
            "内存",
            "带宽",
            "-",
            "Geschwindigkeit",
            "…",
            " —",
            "\t",
            "ok.",
            "\u{a0}",
        ];
        let mut rng = rand_pcg::Pcg32::new(7, 11);
        for _ in 0..400 {
            let mut counter = WordCounter::default();
            let mut text = String::new();
            for _ in 0..rng.next_u32() % 40 {
                let piece = pieces[rng.next_u32() as usize % pieces.len()];
                text.push_str(piece);
                assert_eq!(counter.push(piece), count_words(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn characters_are_what_a_reader_sees() {
        let s = TextStats::new("👍🏽 ok", 5);
        assert_eq!(s.characters, 4);
        assert_eq!(s.words, 1);
        assert_eq!(s.tokens_per_word(), Some(5.0));
        assert_eq!(s.words_per_token(), Some(0.2));
    }

    #[test]
    fn no_words_no_ratio() {
        let s = TextStats::new("🎉🎉", 4);
        assert_eq!(s.tokens_per_word(), None);
        assert_eq!(s.words_per_token(), None);
        assert_eq!(TextStats::new("", 0).words_per_token(), None);
    }

    #[test]
    fn the_measured_ratio_needs_enough_tokens() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let words = count_words(text);
        assert_eq!(words, 12);
        assert_eq!(measured_words_per_token(words, MIN_TOKENS_FOR_RATIO - 1), None);
        assert_eq!(measured_words_per_token(words, 24), Some(0.5));
        assert_eq!(measured_words_per_token(0, 24), None, "only emoji or punctuation");
    }
}
