//! A `bert` (WordPiece) vocabulary rebuilt as a Hugging Face
//! `tokenizers` pipeline (the crate the safetensors models already use),
//! so the same encoder code serves both. llama.cpp's converter writes
//! word-start pieces with a leading `▁` and continuations bare (`##ing` →
//! `ing`); the WordPiece vocabulary is that mapping undone. llama.cpp
//! splits words of any length into pieces (Hugging Face gives `[UNK]` past
//! 100 characters); so does this tokenizer, whose model
//! (`model::bounded_wordpiece`) keeps that linear in the word's length.

use serde_json::{Value as Json, json};

use super::token_type::CONTROL;
use super::{GgufFile, Value, pieces};
use crate::error::{Error, Result};

/// The `tokenizer.json` equivalent of the file's tokenizer.
pub fn tokenizer_json(file: &GgufFile) -> Result<Vec<u8>> {
    let model = file.str("tokenizer.ggml.model")?;
    let json = match model {
        "bert" => wordpiece(file)?,
        other => {
            return Err(Error::invalid(format!("{}: tokenizer model '{other}' is not supported yet", file.name())));
        }
    };
    Ok(json.to_string().into_bytes())
}

fn special(file: &GgufFile, key: &str, tokens: &[String]) -> Result<(String, u64)> {
    let id = file.usize(&format!("tokenizer.ggml.{key}"))?;
    let token = tokens.get(id).ok_or_else(|| file.missing(&format!("tokenizer.ggml.{key}"), "a token id"))?;
    Ok((token.to_string(), id as u64))
}

fn wordpiece(file: &GgufFile) -> Result<Json> {
    let tokens = pieces(file)?;
    let types = file.get("tokenizer.ggml.token_type").and_then(Value::as_array);
    let mut vocab = serde_json::Map::with_capacity(tokens.len());
    let mut added = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        let piece = if let Some(word) = token.strip_prefix('\u{2581}') {
            word.to_string()
        } else if token.starts_with('[') && token.ends_with(']') {
            token.to_string()
        } else {
            format!("##{token}")
        };
        if types.and_then(|t| t.get(id)).and_then(Value::as_u64) == Some(CONTROL) {
            added.push(json!({"id": id, "content": piece, "single_word": false, "lstrip": false,
                              "rstrip": false, "normalized": false, "special": true}));
        }
        vocab.entry(piece).or_insert(json!(id));
    }
    let cls = special(file, "bos_token_id", &tokens)?;
    let sep = special(file, "seperator_token_id", &tokens).or_else(|_| special(file, "eos_token_id", &tokens))?;
    let unk = special(file, "unknown_token_id", &tokens)?;
    let lowercase = file.get("tokenizer.ggml.normalizer.lowercase").and_then(Value::as_bool).unwrap_or(true);
    Ok(json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": [sep.0, sep.1], "cls": [cls.0, cls.1]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": unk.0, "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": usize::MAX, "vocab": vocab}
    }))
}
