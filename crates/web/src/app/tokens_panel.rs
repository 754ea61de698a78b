//! The token view: a text as the model's tokenizer splits it, as alternating chips (id on hover
//! or focus, special tokens marked, byte-fallback pieces shown as bytes), with its counts, so a
//! reader sees what "tokens per second" counts and why it is not words per second. Tokenizing
//! happens in the worker, with the loaded model's tokenizer or, before any model is loaded (an
//! embed), with the vocabulary read from the front of the model's file by range requests.

use super::port::send;
use super::share::Share;
use super::state::State;
use crate::protocol::{ToWorker, TokenView};
use crate::route::Panel;
use leptos::prelude::*;
use tokscope_core::human;
use tokscope_core::text_stats::SAMPLES;
use tokscope_core::tokenizer::Piece;

/// The URL setting that holds the panel's text.
pub const TEXT_KEY: &str = "text";

/// Asks the worker for the tokens of the panel's text: the loaded model's tokenizer, else (the
/// embed) the one in the model setting's header (or the default model's).
pub fn tokenize(state: State) {
    let header_only = state.tokens.with_untracked(|t| t.header_only);
    if !state.alive.get_untracked() || (state.model.get_untracked().is_none() && !header_only) {
        return;
    }
    let text = state.tokens.with_untracked(|t| t.text.clone());
    let model = match state.model.get_untracked() {
        Some(_) => None,
        None => Some(
            state
                .settings
                .with_untracked(|s| s.model.clone())
                .unwrap_or_else(|| super::DEFAULT_MODEL.into()),
        ),
    };
    state.tokens.update(|t| {
        t.busy = true;
        t.error = None;
    });
    send(&ToWorker::Tokenize { text, model }, None);
}

/// What a chip shows: the piece's text with whitespace made visible, bytes as `<0xE4>`.
fn chip_text(p: &Piece) -> String {
    match &p.bytes {
        Some(b) => b.iter().map(|b| format!("<0x{b:02X}>")).collect(),
        None => p.text.replace('\n', "↵").replace('\t', "⇥"),
    }
}

fn chip_class(i: usize, p: &Piece) -> String {
    let kind = match (p.special, p.bytes.is_some()) {
        (true, _) => " special",
        (_, true) => " bytes",
        _ => "",
    };
    format!("tok t{}{kind}", i % 2)
}

/// Where the vocabulary came from, in words.
fn source_line(v: &TokenView) -> String {
    match (v.header_bytes, v.file_bytes) {
        (Some(read), Some(file)) => format!(
            "{}'s tokenizer, read from the first {} of its {} file (the weights were not downloaded).",
            v.tokenizer,
            human::bytes(read as f64),
            human::bytes(file as f64)
        ),
        (Some(read), None) => format!(
            "{}'s tokenizer, read from the first {} of its file.",
            v.tokenizer,
            human::bytes(read as f64)
        ),
        (None, _) => format!("{}'s tokenizer (the loaded model).", v.tokenizer),
    }
}

#[component]
pub fn TokensPanel(state: State) -> impl IntoView {
    // Tokenize once the worker listens, and again when a model arrives (its own tokenizer).
    Effect::new(move || {
        if state.alive.get() {
            state.model.track();
            tokenize(state);
        }
    });
    let view = move || state.tokens.with(|t| t.view.clone());
    let set_text = move |text: String| {
        state.tokens.update(|t| t.text = text);
        tokenize(state);
    };
    let pairs = Signal::derive(move || vec![(TEXT_KEY, state.tokens.with(|t| t.text.clone()))]);
    let last_run = move || {
        let prompt = state.settings.with(|s| s.prompt.clone());
        format!("{prompt}{}", state.output.get())
    };
    view! {
        <section class="card tokens" id="tokens" aria-labelledby="tokens-h">
            <h2 id="tokens-h">"Text as tokens"</h2>
            <p class="explain">"A model reads and writes tokens: pieces of words, whole words, single bytes. Rates count tokens, "
                "so the same speed means more or fewer words depending on the text and the tokenizer."</p>
            <label for="tok-input">"Text"</label>
            <textarea id="tok-input" data-testid="tok-input" rows="3"
                prop:value=move || state.tokens.with(|t| t.text.clone())
                on:change=move |ev| set_text(event_target_value(&ev))></textarea>
            <div class="samples" role="group" aria-label="sample texts">
                {SAMPLES.iter().enumerate().map(|(i, (label, text))| view! {
                    <button data-testid=format!("tok-sample-{i}") on:click=move |_| set_text((*text).into())>{*label}</button>
                }).collect_view()}
                <button data-testid="tok-last-run" disabled=move || state.output.with(String::is_empty)
                    on:click=move |_| set_text(last_run())>"The last run's prompt and output"</button>
            </div>
            <Show when=move || state.tokens.with(|t| t.error.is_some())>
                <p class="error" role="alert" data-testid="tok-error">{move || state.tokens.with(|t| t.error.clone().unwrap_or_default())}</p>
            </Show>
            <p class="caption" aria-live="polite" data-testid="tok-source">{move || match (state.tokens.with(|t| t.busy), view()) {
                (true, _) => "Tokenizing…".to_string(),
                (false, Some(v)) => source_line(&v),
                (false, None) => "Waiting for the model's tokenizer…".to_string(),
            }}</p>
            <ol class="chips" data-testid="tok-chips" aria-label="the text's tokens">
                {move || view().map(|v| v.pieces.iter().enumerate().map(|(i, p)| {
                    let label = match (&p.bytes, p.special) {
                        (Some(_), _) => format!("token {}: bytes {}", p.id, chip_text(p)),
                        (None, true) => format!("token {}: special {}", p.id, p.text),
                        (None, false) => format!("token {}: {:?}", p.id, p.text),
                    };
                    view! {
                        <li class=chip_class(i, p) tabindex="0" title=format!("id {}", p.id) aria-label=label
                            data-id=p.id.to_string()>{chip_text(p)}</li>
                    }
                }).collect_view())}
            </ol>
            <dl class="figures">
                <dt>"Tokens"</dt><dd data-testid="tok-count">{move || view().map(|v| v.stats.tokens.to_string()).unwrap_or_default()}</dd>
                <dt>"Words"</dt><dd data-testid="tok-words">{move || view().map(|v| v.stats.words.to_string()).unwrap_or_default()}</dd>
                <dt>"Characters"</dt><dd data-testid="tok-chars">{move || view().map(|v| v.stats.characters.to_string()).unwrap_or_default()}</dd>
                <dt>"Tokens per word"</dt><dd data-testid="tok-per-word">{move || view()
                    .map(|v| v.stats.tokens_per_word().map(|r| format!("{r:.2}")).unwrap_or_else(|| "– (no words)".into()))
                    .unwrap_or_default()}</dd>
            </dl>
            <p class="caption">"Words and characters by Unicode's text segmentation (UAX #29): each Chinese character counts as a word, "
                "an emoji with its skin tone as one character."</p>
            <Share panel=Panel::Tokens pairs/>
        </section>
    }
}
