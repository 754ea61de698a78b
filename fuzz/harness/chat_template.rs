//! A GGUF's `tokenizer.chat_template` is a program from whoever wrote the file: it must
//! compile or be refused, and render or fail, without a panic, a hang or a huge allocation.
//! Input: the template, then (after the first NUL) the messages' texts separated by NULs.

use tokscope_core::chat::{ChatTemplate, Message};

/// One input through the pipeline; panics on a bug.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let source = parts.next().unwrap_or_default();
    let Ok(template) = ChatTemplate::new(source) else {
        return;
    };
    let roles = ["system", "user", "assistant"];
    let messages: Vec<Message> = parts
        .enumerate()
        .map(|(i, content)| Message {
            role: roles[i % roles.len()].into(),
            content: content.into(),
        })
        .collect();
    for add_generation_prompt in [false, true] {
        let _ = template.render(&messages, add_generation_prompt, "<s>", "</s>");
    }
}
