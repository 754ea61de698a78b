//! Untrusted text and a page safe to embed (issue #22): markup in the prompt, in the model's
//! output, in GGUF strings and in the URL is shown as text and never runs, and a `javascript:`
//! model address is refused by name while the other URL parameters apply. (The
//! Content-Security-Policy is checked in every engine: engines/bad_input.rs.)

use std::time::Duration;
use tokscope_core::gguf::Value;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;
use tokscope_e2e::browser::Browser;
use tokscope_e2e::site::{DONE, READY, root, screenshot_path, serve_dist, url_encode};

const WAIT: Duration = Duration::from_secs(120);

/// Each payload sets `window.__xss` if it ever runs.
const IN_NAME: &str = "<img src=x onerror=\"window.__xss='name'\">";
const IN_OUTPUT_A: &str = "<img src=x onerror=window.__xss='out'>";
const IN_OUTPUT_B: &str = "<script>window.__xss='out'</script>";
const IN_PROMPT: &str = "<script>window.__xss='prompt'</script><img src=x onerror=\"window.__xss='prompt'\">";

/// Markup that ran, elements it left, and every error the page recorded (CSP violations too).
const INJECTED: &str = "return [String(window.__xss), \
     document.querySelectorAll('[onerror], img, iframe, object, body script:not([src])').length];";

/// The tiny test model made to write markup: its name is a payload, two merge tokens are
/// replaced by payloads, and its untied output head scores only those two (opposite signs on
/// one dimension, the only one the final norm keeps), so greedy decoding writes one of them at
/// every step whatever the prompt.
fn markup_model() -> Vec<u8> {
    let spec = TinyLlama {
        tied_output: false,
        ..Default::default()
    };
    let vocab = tokscope_core::synthetic::vocab();
    let (a, b) = (vocab.len() - 2, vocab.len() - 1);
    // GPT-2's byte-level alphabet writes a space as 'Ġ'.
    let byte_level = |s: &str| s.replace(' ', "Ġ");
    let mut w = spec.writer();
    *w.meta_mut("general.name").unwrap() = Value::String(IN_NAME.into());
    let Some(Value::Array(_, tokens)) = w.meta_mut("tokenizer.ggml.tokens") else {
        panic!("tokens")
    };
    tokens[a] = Value::String(byte_level(IN_OUTPUT_A));
    tokens[b] = Value::String(byte_level(IN_OUTPUT_B));
    // The merges that made those two tokens go with them.
    let Some(Value::Array(_, merges)) = w.meta_mut("tokenizer.ggml.merges") else {
        panic!("merges")
    };
    merges.truncate(merges.len() - 2);
    let d = spec.d_model;
    let f32s = |v: Vec<f32>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut g = vec![0f32; d];
    g[0] = 1.0;
    w.tensor_mut("output_norm.weight").unwrap().data = f32s(g);
    let mut head = vec![0f32; vocab.len() * d];
    head[a * d] = 100.0;
    head[b * d] = -100.0;
    let t = w.tensor_mut("output.weight").unwrap();
    t.ty = GgmlType::F32;
    t.data = f32s(head);
    w.to_bytes()
}

#[tokio::test]
async fn markup_in_the_prompt_output_metadata_and_url_stays_text() {
    let path = root().join("target/e2e/markup.gguf");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, markup_model()).unwrap();
    let server = serve_dist();
    let b = Browser::launch(false, 1280, 900).await.unwrap();
    // The prompt from the URL, a `javascript:` model address refused, the rest applied; a
    // payload in the fragment too.
    let prompt: String = url_encode(IN_PROMPT);
    let url = format!(
        "index.html?backend=cpu&prompt={prompt}&max_tokens=6&temperature=0&model=javascript:window.__xss='model'\
         #/run?x=%3Cimg%20src%3Dx%20onerror%3Dwindow.__xss%3D1%3E"
    );
    b.client.goto(&server.url(&url)).await.unwrap();
    b.wait_for(
        &format!("{READY} || document.querySelector('[data-testid=error]')?.textContent"),
        WAIT,
    )
    .await
    .unwrap();
    let notice = b.text("notice").await;
    assert!(
        notice.contains("URL parameter model") && notice.contains("javascript:"),
        "{notice}"
    );
    assert_eq!(b.value("prompt").await, IN_PROMPT, "the prompt parameter still applies");
    b.pick_file(&path).await;
    b.wait_for(
        &format!("{READY} && document.querySelector('[data-testid=model-info]').textContent.includes('onerror')"),
        WAIT,
    )
    .await
    .unwrap();
    assert!(b.text("model-info").await.contains(IN_NAME));
    b.client
        .find(fantoccini::Locator::Css("[data-testid=generate]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.wait_for(DONE, WAIT).await.unwrap();
    let output = b.text("output").await;
    assert!(
        output.contains(IN_OUTPUT_A) || output.contains(IN_OUTPUT_B),
        "the model wrote markup: {output:?}"
    );
    b.screenshot(&screenshot_path("markup-as-text.png")).await.unwrap();
    let injected = b.eval(INJECTED).await;
    assert_eq!(
        injected,
        serde_json::json!(["undefined", 0]),
        "markup ran or was inserted"
    );
    assert_eq!(b.page_errors().await, Vec::<String>::new());
    b.close().await;
}
