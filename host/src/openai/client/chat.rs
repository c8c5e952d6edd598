//! Query expansion on a server: `POST <base URL>/chat/completions` with
//! qmd's system and user messages and sampling (temperature 0.7, top-p
//! 0.8, presence penalty 0.5, at most 600 tokens). A server cannot be held
//! to qmd's grammar in a portable way, so the answer is read by qmd's
//! rules as a local one is: lines outside `lex|vec|hyde: …` are dropped,
//! and an answer with none left falls back.

use qmd_core::generate::chat::DEFAULT_SYSTEM_PROMPT;
use qmd_core::generate::expander::{MAX_EXPANSION_TOKENS, user_message};
use serde_json::{Value, json};

use super::{Connection, Endpoint};

pub struct RemoteGenerator {
    server: Connection,
}

impl RemoteGenerator {
    pub fn new(endpoint: Endpoint) -> RemoteGenerator {
        RemoteGenerator { server: Connection::new(endpoint) }
    }

    /// The model's text for `query` (a thinking block, if any, removed).
    pub fn expand(&self, query: &str) -> Result<String, String> {
        let body = json!({
            "model": self.server.endpoint.model,
            "messages": [
                {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
                {"role": "user", "content": user_message(query)},
            ],
            "temperature": 0.7,
            "top_p": 0.8,
            "presence_penalty": 0.5,
            "max_tokens": MAX_EXPANSION_TOKENS,
        });
        self.server.request("query-expansion", "chat/completions", &body, content)
    }
}

/// `choices[0].message.content`, without a `<think>…</think>` block.
fn content(answer: &Value) -> Result<String, String> {
    let text = answer["choices"][0]["message"]["content"]
        .as_str()
        .ok_or("the answer has no choices[0].message.content text")?;
    Ok(match (text.find("<think>"), text.find("</think>")) {
        (Some(open), Some(close)) if open < close => format!("{}{}", &text[..open], &text[close + "</think>".len()..]),
        _ => text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_without_thinking() {
        let answer = json!({"choices": [{"message": {"content": "<think>\n\n</think>\n\nlex: a\nvec: b\n"}}]});
        assert_eq!(content(&answer).unwrap(), "\n\nlex: a\nvec: b\n");
        let plain = json!({"choices": [{"message": {"content": "hyde: c\n"}}]});
        assert_eq!(content(&plain).unwrap(), "hyde: c\n");
        assert!(content(&json!({"choices": []})).unwrap_err().contains("content"));
    }
}
