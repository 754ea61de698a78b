//! Chat prompts: the GGUF's own `tokenizer.chat_template` rendered by a real Jinja engine
//! (minijinja, with Python-style string methods), so ChatML, Llama 3 and other templates work
//! as the model was trained.

use minijinja::{Environment, Error as JinjaError, ErrorKind, context};
use serde::Serialize;
use thiserror::Error;

/// Used when a GGUF has no template (llama.cpp falls back to ChatML too).
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Gemma's turn format (Gemma 3's tokenizer_config.json template, system text folded into the
/// first user turn as it does; the assistant's role is "model"), for Gemma GGUFs written
/// without a template: their vocabulary has no ChatML tokens.
pub const GEMMA_TEMPLATE: &str = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{ '<start_of_turn>' + role + '\n' + (first if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}";

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn user(content: &str) -> Self {
        Self {
            role: "user".into(),
            content: content.into(),
        }
    }
}

#[derive(Debug, Error)]
#[error("chat template: {0}")]
pub struct ChatError(String);

pub struct ChatTemplate {
    env: Environment<'static>,
}

impl ChatTemplate {
    pub fn new(source: &str) -> Result<Self, ChatError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> Result<String, JinjaError> {
            Err(JinjaError::new(ErrorKind::InvalidOperation, msg))
        });
        // Templates that print today's date (Llama 3.1) get a fixed one: output stays reproducible.
        env.add_function("strftime_now", |_fmt: String| "26 Jul 2024".to_string());
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| ChatError(e.to_string()))?;
        Ok(Self { env })
    }

    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        bos: &str,
        eos: &str,
    ) -> Result<String, ChatError> {
        let tmpl = self.env.get_template("chat").map_err(|e| ChatError(e.to_string()))?;
        tmpl.render(context! {
            messages => messages.iter().map(|m| minijinja::Value::from_pairs([("role", m.role.as_str()), ("content", m.content.as_str())])).collect::<Vec<_>>(),
            add_generation_prompt => add_generation_prompt,
            bos_token => bos,
            eos_token => eos,
        })
        .map_err(|e| ChatError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_renders_with_generation_prompt() {
        let t = ChatTemplate::new(CHATML_TEMPLATE).unwrap();
        let s = t.render(&[Message::user("Hi")], true, "", "").unwrap();
        assert_eq!(s, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }

    /// Llama 3's template (as shipped in Meta-Llama-3-8B-Instruct's tokenizer_config.json).
    #[test]
    fn llama3_template_renders() {
        let src = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
        let t = ChatTemplate::new(src).unwrap();
        let s = t
            .render(&[Message::user(" Hi ")], true, "<|begin_of_text|>", "<|eot_id|>")
            .unwrap();
        assert_eq!(
            s,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        );
    }

    #[test]
    fn gemma_fallback_renders_turns() {
        let t = ChatTemplate::new(GEMMA_TEMPLATE).unwrap();
        let msgs = [
            Message {
                role: "system".into(),
                content: "Be brief.".into(),
            },
            Message::user(" Hi "),
        ];
        let s = t.render(&msgs, true, "<bos>", "<eos>").unwrap();
        assert_eq!(
            s,
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn python_methods_and_raise_exception() {
        let t = ChatTemplate::new("{{ messages[0]['content'].strip().upper() }}").unwrap();
        assert_eq!(t.render(&[Message::user("  a b ")], false, "", "").unwrap(), "A B");
        let t = ChatTemplate::new("{{ raise_exception('roles must alternate') }}").unwrap();
        let e = t.render(&[], false, "", "").unwrap_err();
        assert!(e.to_string().contains("roles must alternate"));
        assert!(ChatTemplate::new("{% for %}").is_err());
    }
}
