//! The tokenizers a GGUF file describes in its `tokenizer.ggml.*`
//! metadata, each as llama.cpp runs it, so token ids match the runtime qmd
//! uses:
//!
//! - [`wordpiece`] (`bert`): rebuilt as a Hugging Face `tokenizer.json`;
//! - [`spm`] (`llama`: Gemma, Llama 2): pieces merged by score;
//! - [`bpe`] (`gpt2`: Qwen, SmolLM2, Llama 3): byte-level BPE merged by
//!   rank after the vocabulary's pre-tokenizer ([`pretokenize`]).
//!
//! All of them cut special tokens out of the text first ([`special`]);
//! SentencePiece and BPE merge pairs the same way ([`merge`]).

mod bpe;
mod merge;
mod pretokenize;
mod special;
mod spm;
mod wordpiece;

pub use bpe::BpeTokenizer;
pub use special::{Fragment, PromptPiece, SpecialTokens};
pub use spm::SpmTokenizer;
pub use wordpiece::tokenizer_json;

use super::{GgufFile, Value};
use crate::error::{Error, Result};

/// `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`).
pub mod token_type {
    pub const NORMAL: u64 = 1;
    pub const UNKNOWN: u64 = 2;
    pub const CONTROL: u64 = 3;
    pub const USER_DEFINED: u64 = 4;
}

/// `tokenizer.ggml.tokens`, in id order.
fn pieces(file: &GgufFile) -> Result<Vec<String>> {
    let key = "tokenizer.ggml.tokens";
    let tokens = file.get(key).and_then(Value::as_array).ok_or_else(|| file.missing(key, "an array"))?;
    tokens.iter().map(|t| t.as_str().map(str::to_string).ok_or_else(|| file.missing(key, "strings"))).collect()
}

/// `tokenizer.ggml.token_type`, one per token (normal where absent).
fn token_types(file: &GgufFile, count: usize) -> Vec<u64> {
    let mut types: Vec<u64> = match file.get("tokenizer.ggml.token_type").and_then(Value::as_array) {
        Some(values) => values.iter().map(|v| v.as_u64().unwrap_or(token_type::NORMAL)).collect(),
        None => Vec::new(),
    };
    types.resize(count, token_type::NORMAL);
    types
}

/// A special token's id (`tokenizer.ggml.bos_token_id` …), checked
/// against the vocabulary's size.
fn special_id(file: &GgufFile, key: &str, count: usize) -> Result<Option<u32>> {
    match file.get(key).and_then(Value::as_u64) {
        None => Ok(None),
        Some(id) if (id as usize) < count => Ok(Some(id as u32)),
        Some(id) => Err(Error::invalid(format!("{}: {key} is {id}, past the {count} tokens", file.name()))),
    }
}

fn flag(file: &GgufFile, key: &str) -> Option<bool> {
    file.get(key).and_then(Value::as_bool)
}
