//! `tokscope tokenize`: a text as the model's tokens, without loading the weights (the
//! tokenizer is in the GGUF's header), so a reader sees what "tokens per second" counts.

use crate::CliResult;
use crate::args::TokenizeArgs;
use crate::model_file::open;
use serde::Serialize;
use tokscope_core::prompt::{chat_template, prompt_text};
use tokscope_core::text_stats::TextStats;
use tokscope_core::tokenizer::{Piece, Tokenizer};

/// What `--json` prints; the page's token view shows the same pieces and counts.
#[derive(Serialize)]
struct Report {
    text: String,
    tokens: Vec<Piece>,
    words: usize,
    characters: usize,
    tokens_per_word: Option<f64>,
}

pub fn run(a: TokenizeArgs) -> CliResult {
    let gguf = open(&a.model)?;
    let shown = a.model.display();
    let tok = Tokenizer::from_gguf(&gguf).map_err(|e| format!("{shown}: {e}"))?;
    let template = match a.chat {
        true => Some(chat_template(&gguf).map_err(|e| e.to_string())?),
        false => None,
    };
    let text = prompt_text(&tok, template.as_ref(), &a.text).map_err(|e| e.to_string())?;
    let ids = tok
        .encode_with_bos(&text, tok.add_bos && !a.no_bos)
        .map_err(|e| e.to_string())?;
    let stats = TextStats::new(&text, ids.len());
    let report = Report {
        tokens_per_word: stats.tokens_per_word(),
        words: stats.words,
        characters: stats.characters,
        tokens: tok.pieces(&ids),
        text,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
        return Ok(());
    }
    for p in &report.tokens {
        match (&p.bytes, p.special) {
            (Some(b), _) => println!("{:>7}  bytes {}", p.id, hex(b)),
            (None, true) => println!("{:>7}  {} (special)", p.id, p.text),
            (None, false) => println!("{:>7}  {:?}", p.id, p.text),
        }
    }
    let per_word = report
        .tokens_per_word
        .map(|r| format!(", {r:.2} tokens a word"))
        .unwrap_or_default();
    let TextStats {
        tokens,
        words,
        characters,
    } = stats;
    println!("{tokens} tokens, {words} words, {characters} characters{per_word}");
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
}
