//! The token view in headless Chromium: its tokens of fixed strings equal `tokscope tokenize
//! --json` (special and byte-fallback tokens included), its embed reads only the GGUF's header
//! by range requests, and the decode meter's words per minute uses the ratio measured on the
//! generated text.

use serde_json::Value;
use std::time::Duration;
use tokio::sync::Mutex;
use tokscope_core::text_stats::{count_words, measured_words_per_token};
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, MODEL, present, screenshot_path, serve_dist, tokscope, url_encode};

const WAIT: Duration = Duration::from_secs(120);
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

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

const TOKENIZED: &str = "document.querySelector('[data-testid=tok-chips] li') !== null \
     && !document.querySelector('[data-testid=tok-source]').textContent.startsWith('Tokenizing')";

#[tokio::test]
async fn the_embed_tokenizes_like_the_cli_from_the_header_alone() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 900, 900).await.unwrap();
    // The default model (byte-level BPE: an emoji is byte pieces) with a special token.
    let cases = [
        (MODEL, "<|im_start|>user\nGrüße, 内存带宽! 🎉 fn main() {}"),
        // Gemma 3 (SentencePiece with byte fallback) with its turn marker and a rare script.
        (GEMMA, "<start_of_turn>user\nTokens aren't words: 𓀀𓀁 ☕"),
    ];
    for (model, text) in cases {
        let (expected, cli) = cli_chips(model, text);
        let url = format!(
            "index.html#/embed/tokens?text={}&model={}",
            url_encode(text),
            url_encode(model)
        );
        b.client.goto(&server.url(&url)).await.unwrap();
        b.wait_for(TOKENIZED, WAIT).await.unwrap();
        let chips = page_chips(&b).await;
        println!("{model}: {} tokens: {chips:?}", chips.len());
        assert_eq!(chips, expected, "{model}: the page's tokens differ from the CLI's");
        let kinds = classes(&b).await;
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
        // cache may ask for just the part of a longer range it lacks).
        let ranges = server.log.ranges(model);
        assert_eq!(
            ranges.len(),
            server.log.count(model),
            "every request was a range: {ranges:?}"
        );
        let file_len = std::fs::metadata(tokscope_e2e::site::dist().join(model)).unwrap().len();
        let end = |r: &String| r.rsplit('-').next().and_then(|e| e.parse::<u64>().ok());
        let furthest = ranges.iter().map(|r| end(r).expect("a closed range")).max().unwrap();
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
    b.screenshot(&screenshot_path("embed-tokens.png")).await.unwrap();

    // A vocabulary that cannot be read: the worker's error names its request (Tokenize), so it
    // shows in the token view, not as the page's error.
    b.client
        .goto(&server.url("index.html#/embed/tokens?text=hi&model=models/missing.gguf"))
        .await
        .unwrap();
    b.wait_for(&present("tok-error"), WAIT).await.unwrap();
    let shown = b.text("tok-error").await;
    assert!(shown.contains("missing.gguf"), "{shown}");
    assert!(
        b.eval("return document.querySelector('[data-testid=error]') === null;")
            .await
            == true,
        "the page showed the token view's error as its own"
    );
    b.close().await;
}

#[tokio::test]
async fn the_meter_reads_words_per_minute_at_the_measured_ratio() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 1000).await.unwrap();
    let url =
        server.url("index.html?prompt=Write%20about%20the%20sea.&max_tokens=40&temperature=0&backend=cpu&autorun=1");
    b.client.goto(&url).await.unwrap();
    b.wait_for(DONE, Duration::from_secs(240)).await.unwrap();
    let output = b.text("output").await;
    let generated: usize = b.text("generated").await.parse().unwrap();
    let ratio = measured_words_per_token(count_words(&output), generated).expect("40 tokens are enough to measure");
    let line = b.text("wpm-ratio").await;
    println!("{generated} tokens, {output:?}: {line}");
    assert_eq!(line, format!(" at {ratio:.2} words a token, measured on this text."));
    // The whole page's token view uses the loaded model's tokenizer, and shows the last run.
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    assert!(b.text("tok-source").await.contains("(the loaded model)"));
    b.click("tok-last-run").await;
    b.wait_for(
        "document.querySelector('[data-testid=tok-input]').value.startsWith('Write about the sea.')",
        WAIT,
    )
    .await
    .unwrap();
    b.wait_for(TOKENIZED, WAIT).await.unwrap();
    let count: usize = b.text("tok-count").await.parse().unwrap();
    assert!(
        count > generated,
        "prompt and output: {count} tokens, {generated} generated"
    );
    assert_eq!(
        server.log.count(".gguf"),
        1,
        "the model once, no header reads beside it"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.screenshot(&screenshot_path("tokens-after-run.png")).await.unwrap();
    b.close().await;
}
