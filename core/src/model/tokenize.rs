//! The model's tokenizer (`tokenizer.json`), with truncation to the
//! model's window. Padding is done by the batcher, not here.

use tokenizers::{EncodeInput, Encoding, Tokenizer, TruncationParams, TruncationStrategy};

use crate::error::{Error, Result};

pub struct TextTokenizer {
    inner: Tokenizer,
    /// The same tokenizer without truncation, for counting.
    untruncated: Tokenizer,
    /// Tokens per sequence, special tokens included.
    max_tokens: usize,
}

fn tokenizer_error(e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("tokenizer: {e}"))
}

impl TextTokenizer {
    pub fn parse(json: &[u8], max_tokens: usize) -> Result<TextTokenizer> {
        let mut inner = Tokenizer::from_bytes(json).map_err(|e| Error::invalid(format!("tokenizer.json: {e}")))?;
        let mut untruncated = inner.clone();
        untruncated.with_truncation(None).map_err(tokenizer_error)?.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                ..Default::default()
            }))
            .map_err(tokenizer_error)?;
        inner.with_padding(None);
        Ok(TextTokenizer { inner, untruncated, max_tokens })
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Encodes single texts, truncated to the window.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Encoding>> {
        let inputs: Vec<EncodeInput> = texts.iter().map(|t| EncodeInput::Single((*t).into())).collect();
        self.inner.encode_batch(inputs, true).map_err(tokenizer_error)
    }

    /// Encodes (query, document) pairs, truncated to the window.
    pub fn encode_pairs(&self, query: &str, documents: &[&str]) -> Result<Vec<Encoding>> {
        let inputs: Vec<EncodeInput> = documents.iter().map(|d| EncodeInput::Dual(query.into(), (*d).into())).collect();
        self.inner.encode_batch(inputs, true).map_err(tokenizer_error)
    }

    /// Tokens each text would take without truncation and without special
    /// tokens: what the token chunker measures.
    pub fn count(&self, texts: &[&str]) -> Result<Vec<usize>> {
        let inputs: Vec<EncodeInput> = texts.iter().map(|t| EncodeInput::Single((*t).into())).collect();
        let encodings = self.untruncated.encode_batch(inputs, false).map_err(tokenizer_error)?;
        Ok(encodings.iter().map(Encoding::len).collect())
    }
}
