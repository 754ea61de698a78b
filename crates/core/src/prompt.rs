//! Turning what a user typed into prompt tokens: raw completion (tokenized as given) or chat
//! (the model's own template, then tokenized with its special tokens parsed).

use crate::chat::{CHATML_TEMPLATE, ChatError, ChatTemplate, GEMMA_TEMPLATE, Message};
use crate::gguf::Gguf;
use crate::tokenizer::{Tokenizer, TokenizerError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PromptError {
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error("empty prompt: type something (or a chat message) first")]
    Empty,
}

/// The model's chat template; when the GGUF has none, Gemma's turns for a vocabulary with
/// `<start_of_turn>`, otherwise ChatML (llama.cpp's fallback).
pub fn chat_template<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<ChatTemplate, PromptError> {
    Ok(ChatTemplate::new(chat_template_source(g)?)?)
}

/// The source [`chat_template`] renders, and whether it came from the file.
pub fn chat_template_source<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<&str, PromptError> {
    if let Some(s) = g.opt_str("tokenizer.chat_template").map_err(TokenizerError::from)? {
        return Ok(s);
    }
    let gemma = g
        .get_str_array("tokenizer.ggml.tokens")
        .is_ok_and(|t| t.contains(&"<start_of_turn>"));
    Ok(if gemma { GEMMA_TEMPLATE } else { CHATML_TEMPLATE })
}

/// The prompt text that will be tokenized: as given, or one user turn rendered by `template`.
pub fn prompt_text(tok: &Tokenizer, template: Option<&ChatTemplate>, prompt: &str) -> Result<String, PromptError> {
    if prompt.is_empty() {
        return Err(PromptError::Empty);
    }
    let Some(template) = template else {
        return Ok(prompt.to_string());
    };
    let name = |id: Option<u32>| id.and_then(|i| tok.token_text(i)).unwrap_or_default();
    Ok(template.render(&[Message::user(prompt)], true, &name(tok.bos), &name(tok.eos))?)
}

pub fn prompt_tokens(tok: &Tokenizer, template: Option<&ChatTemplate>, prompt: &str) -> Result<Vec<u32>, PromptError> {
    let ids = tok.encode(&prompt_text(tok, template, prompt)?)?;
    if ids.is_empty() {
        return Err(PromptError::Empty);
    }
    Ok(ids)
}
