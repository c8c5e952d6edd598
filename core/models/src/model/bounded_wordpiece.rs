//! The WordPiece model for GGUF vocabularies, inside the Hugging Face
//! pipeline (its normalizer, pre-tokenizer and post-processor stay).
//! `tokenizers`' own WordPiece tries every end of a word from its last
//! character, which is cubic in the word's length once words of any length
//! are split (llama.cpp's rule, which GGUF models follow): one query of an
//! 8,000-character word took 13 s. This one splits the same pieces
//! ([`longest_match_first`]) at a cost linear in the word.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::models::wordpiece::WordPieceTrainer;
use tokenizers::{Model, Token};

use qmd_base::longest_match::longest_match_first;

/// The fields of a `tokenizer.json` WordPiece model this one reads.
#[derive(Deserialize)]
struct Fields {
    vocab: HashMap<String, u32>,
    unk_token: String,
    continuing_subword_prefix: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(from = "Fields")]
pub struct BoundedWordPiece {
    vocab: HashMap<String, u32>,
    tokens: Vec<Option<String>>,
    unk_token: String,
    prefix: String,
    /// The longest token in bytes: no candidate is longer.
    longest: usize,
}

impl From<Fields> for BoundedWordPiece {
    fn from(fields: Fields) -> BoundedWordPiece {
        let size = fields.vocab.values().map(|&id| id as usize + 1).max().unwrap_or(0);
        let mut tokens = vec![None; size];
        for (token, &id) in &fields.vocab {
            tokens[id as usize] = Some(token.clone());
        }
        let longest = fields.vocab.keys().map(String::len).max().unwrap_or(0);
        BoundedWordPiece {
            vocab: fields.vocab,
            tokens,
            unk_token: fields.unk_token,
            prefix: fields.continuing_subword_prefix,
            longest,
        }
    }
}

impl Model for BoundedWordPiece {
    type Trainer = WordPieceTrainer;

    fn tokenize(&self, word: &str) -> tokenizers::Result<Vec<Token>> {
        let mut pieces = Vec::new();
        if longest_match_first(word, &self.prefix, self.longest, |p| self.vocab.get(p).copied(), &mut pieces) {
            let token = |&(id, start, end): &(u32, usize, usize)| {
                let value = self.tokens[id as usize].clone().unwrap_or_default();
                Token::new(id, value, (start, end))
            };
            return Ok(pieces.iter().map(token).collect());
        }
        let unk = self.vocab.get(&self.unk_token).ok_or("WordPiece: the vocabulary has no unknown token (UNK)")?;
        Ok(vec![Token::new(*unk, self.unk_token.clone(), (0, word.len()))])
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.tokens.get(id as usize).cloned().flatten()
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        self.vocab.clone()
    }

    fn get_vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("a GGUF vocabulary is not saved as tokenizer files".into())
    }

    fn get_trainer(&self) -> WordPieceTrainer {
        WordPieceTrainer::builder().build()
    }
}
