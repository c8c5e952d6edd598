//! A chat model's prompt as qmd's runtime writes it. node-llama-cpp does
//! not render the GGUF's Jinja template: it recognises the template's
//! family and writes the turns with its own wrapper (as llama.cpp's
//! `llm_chat_detect_template` does), and `LlamaChatSession` starts every
//! chat with its default system prompt. qmd's expansion is one user turn,
//! so the prompt is the system turn, the user turn, and the opening of
//! the assistant's turn.

use crate::error::{Error, Result};
pub use crate::gguf::tokenizer::PromptPiece;
use crate::gguf::{GgufFile, Value};

/// node-llama-cpp's `defaultChatSystemPrompt`, which `LlamaChatSession`
/// uses when it is given none (qmd gives none).
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful, respectful and honest assistant. Always answer as \
     helpfully as possible.\nIf a question does not make any sense, or is not factually coherent, explain why \
     instead of answering something incorrectly. If you don't know the answer to a question, don't share false \
     information.";

/// The template families qmd's models use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatTemplate {
    /// `<|im_start|>role\n…<|im_end|>\n`: Qwen2/3 (qmd's expansion model),
    /// SmolLM2 (node-llama-cpp's `QwenChatWrapper` / `ChatMLChatWrapper`).
    ChatMl,
    /// `<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>`: Llama 3.
    Llama3,
}

impl ChatTemplate {
    /// The family of the file's `tokenizer.chat_template`; a file without
    /// one is ChatML when its vocabulary has `<|im_start|>` (llama.cpp's
    /// fallback for such vocabularies).
    pub fn detect(file: &GgufFile, has_token: impl Fn(&str) -> bool) -> Result<ChatTemplate> {
        let template = file.get("tokenizer.chat_template").and_then(Value::as_str);
        match template {
            Some(t) if t.contains("<|im_start|>") => Ok(ChatTemplate::ChatMl),
            Some(t) if t.contains("<|start_header_id|>") => Ok(ChatTemplate::Llama3),
            None if has_token("<|im_start|>") => Ok(ChatTemplate::ChatMl),
            Some(_) => Err(Error::invalid(format!(
                "{}: its chat template is neither ChatML (<|im_start|>) nor Llama 3 (<|start_header_id|>), \
                 the forms qmd's query expansion runs",
                file.name()
            ))),
            None => Err(Error::invalid(format!(
                "{}: no chat template (tokenizer.chat_template) and no <|im_start|> token",
                file.name()
            ))),
        }
    }

    /// The prompt for one user turn after the system prompt, up to where
    /// the assistant's answer starts: the template's special tokens apart
    /// from the text (adjacent texts joined, as they are tokenized).
    pub fn prompt(self, system: &str, user: &str) -> Vec<PromptPiece> {
        use PromptPiece::{Special, Text};
        match self {
            ChatTemplate::ChatMl => vec![
                Special("<|im_start|>"),
                Text(format!("system\n{system}")),
                Special("<|im_end|>"),
                Text("\n".into()),
                Special("<|im_start|>"),
                Text(format!("user\n{user}")),
                Special("<|im_end|>"),
                Text("\n".into()),
                Special("<|im_start|>"),
                Text("assistant\n".into()),
            ],
            ChatTemplate::Llama3 => vec![
                Special("<|start_header_id|>"),
                Text("system".into()),
                Special("<|end_header_id|>"),
                Text(format!("\n\n{system}")),
                Special("<|eot_id|>"),
                Special("<|start_header_id|>"),
                Text("user".into()),
                Special("<|end_header_id|>"),
                Text(format!("\n\n{user}")),
                Special("<|eot_id|>"),
                Special("<|start_header_id|>"),
                Text("assistant".into()),
                Special("<|end_header_id|>"),
                Text("\n\n".into()),
            ],
        }
    }

    /// The tokens that end the assistant's turn.
    pub fn end_tokens(self) -> &'static [&'static str] {
        match self {
            ChatTemplate::ChatMl => &["<|im_end|>", "<|endoftext|>"],
            ChatTemplate::Llama3 => &["<|eot_id|>", "<|end_of_text|>"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// qmd's expansion prompt on its Qwen3 model, as node-llama-cpp's
    /// `QwenChatWrapper` writes it for a new `LlamaChatSession`.
    #[test]
    fn chatml_prompt_is_node_llama_cpps() {
        let pieces = ChatTemplate::ChatMl.prompt(DEFAULT_SYSTEM_PROMPT, "/no_think Expand this search query: rust");
        let prompt: String = pieces
            .iter()
            .map(|p| match p {
                PromptPiece::Special(token) => token.to_string(),
                PromptPiece::Text(text) => text.clone(),
            })
            .collect();
        assert!(prompt.starts_with("<|im_start|>system\nYou are a helpful, respectful and honest assistant."));
        assert!(prompt.ends_with(
            "don't share false information.<|im_end|>\n<|im_start|>user\n/no_think Expand this search query: \
             rust<|im_end|>\n<|im_start|>assistant\n"
        ));
    }
}
