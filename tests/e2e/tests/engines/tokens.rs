//! The token view: its tokens of fixed strings equal `tokscope tokenize --json` (special and
//! byte-fallback tokens included), and its embed reads only the GGUF's header by range requests.

use serde_json::Value;
use std::time::Duration;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::server::Server;
use tokscope_e2e::site::{MODEL, TOKENIZED, present, screenshot_path, tokscope, url_encode};

const WAIT: Duration = Duration::from_secs(120);

const GEMMA: &str = "models/gemma-3-270m-q4_k_m.gguf";

/// The chips as `tokscope tokenize --json` predicts them: (id, shown text).
fn cli_chips(model: &str, text: &str) -> (Vec<(u64, String)>, Value) {
    let out = tokscope(
        &["tokenize", "--model", &format!("public/{model}"), text, "--json"],
        None,
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let chips = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let shown = match t["bytes"].as_array() {
                Some(b) => b.iter().map(|b| format!("<0x{:02X}>", b.as_u64().unwrap())).collect(),
                None => t["text"].as_str().unwrap().replace('\n', "↵").replace('\t', "⇥"),
            };
            (t["id"].as_u64().unwrap(), shown)
        })
        .collect();
    (chips, v)
}

async fn page_chips(b: &Browser) -> Vec<(u64, String)> {
    let v = b
        .eval(
            "return Array.from(document.querySelectorAll('[data-testid=tok-chips] li'))\
             .map(li => [Number(li.dataset.id), li.textContent]);",
        )
        .await;
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_u64().unwrap(), c[1].as_str().unwrap().to_string()))
        .collect()
}

async fn classes(b: &Browser) -> Vec<String> {
    let v = b
        .eval("return Array.from(document.querySelectorAll('[data-testid=tok-chips] li')).map(li => li.className);")
        .await;
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

/// The token view's embed tokenizes like `tokscope tokenize`, for both served models (a
/// byte-level BPE and a SentencePiece vocabulary), reading only the file's header by ranges;
/// a vocabulary that cannot be read shows in the token view, not as the page's error.
pub async fn the_embed_tokenizes_like_the_cli_from_the_header_alone(b: &Browser, server: &Server) {
    // The default model (byte-level BPE: an emoji is byte pieces) with a special token.
    let cases = [
        (MODEL, "<|im_start|>user\nGrüße, 内存带宽! 🎉 fn main() {}"),
        // Gemma 3 (SentencePiece with byte fallback) with its turn marker and a rare script.
        (GEMMA, "<start_of_turn>user\nTokens aren't words: 𓀀𓀁 ☕"),
    ];
    for (model, text) in cases {
        let (expected, cli) = cli_chips(model, text);
        // This server may have sent the whole model earlier in the session: count from here.
        let (requests_before, ranges_before) = (server.log.count(model), server.log.ranges(model).len());
        let url = format!(
            "index.html#/embed/tokens?text={}&model={}",
            url_encode(text),
            url_encode(model)
        );
        b.goto(&server.url(&url)).await;
        b.wait_for(TOKENIZED, WAIT).await.unwrap();
        let chips = page_chips(b).await;
        println!("{model}: {} tokens: {chips:?}", chips.len());
        assert_eq!(chips, expected, "{model}: the page's tokens differ from the CLI's");
        let kinds = classes(b).await;
        assert!(
            kinds.iter().any(|c| c.contains("special")),
            "{model}: a special token is marked"
        );
        assert!(
            kinds.iter().any(|c| c.contains("bytes")),
            "{model}: byte pieces are marked"
        );
        assert_eq!(b.text("tok-count").await, expected.len().to_string());
        assert_eq!(b.text("tok-words").await, cli["words"].to_string());
        assert_eq!(b.text("tok-chars").await, cli["characters"].to_string());
        assert_eq!(
            b.text("tok-per-word").await,
            format!("{:.2}", cli["tokens_per_word"].as_f64().unwrap())
        );
        let source = b.text("tok-source").await;
        assert!(source.contains("the weights were not downloaded"), "{source}");
        // Only ranges of the file's front were asked for, never the whole model (the browser's
        // cache may ask for just the part of a longer range it lacks, or answer by itself).
        let ranges = server.log.ranges(model).split_off(ranges_before);
        assert_eq!(
            ranges.len(),
            server.log.count(model) - requests_before,
            "every request was a range: {ranges:?}"
        );
        let file_len = std::fs::metadata(tokscope_e2e::site::dist().join(model)).unwrap().len();
        let end = |r: &String| r.rsplit('-').next().and_then(|e| e.parse::<u64>().ok());
        let furthest = ranges
            .iter()
            .map(|r| end(r).expect("a closed range"))
            .max()
            .unwrap_or(0);
        println!("{model}: ranges {ranges:?} of {file_len} bytes");
        assert!(furthest < file_len / 4, "{ranges:?} of {file_len} bytes");
    }
    // A sample button re-tokenizes with the same vocabulary (no new request).
    let before = server.log.count(GEMMA);
    b.click("tok-sample-3").await;
    b.wait_for(
        "document.querySelector('[data-testid=tok-input]').value.startsWith('内存')",
        WAIT,
    )
    .await
    .unwrap();
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    assert_eq!(server.log.count(GEMMA), before);
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path(&format!(
        "embed-tokens-{}.png",
        b.engine.name().to_lowercase()
    )))
    .await
    .unwrap();

    // A vocabulary that cannot be read: the worker's error names its request (Tokenize), so it
    // shows in the token view, not as the page's error.
    b.goto(&server.url("index.html#/embed/tokens?text=hi&model=models/missing.gguf"))
        .await;
    b.wait_for(&present("tok-error"), WAIT).await.unwrap();
    let shown = b.text("tok-error").await;
    assert!(shown.contains("missing.gguf"), "{shown}");
    assert!(
        b.eval("return document.querySelector('[data-testid=error]') === null;")
            .await
            == true,
        "the page showed the token view's error as its own"
    );
}
