//! The model's tokenizer (`tokenizer.json`), with truncation to the
//! model's window. Padding is done by the batcher, not here.

use tokenizers::{Encoding, Tokenizer, TruncationParams, TruncationStrategy};

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

    /// Every token of the vocabulary, in id order (gaps as empty strings).
    pub fn vocabulary(&self) -> Vec<String> {
        let vocab = self.inner.get_vocab(true);
        let mut out = vec![String::new(); vocab.values().map(|&id| id as usize + 1).max().unwrap_or(0)];
        for (token, id) in vocab {
            out[id as usize] = token;
        }
        out
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Encodes single texts, truncated to the window, each with its token
    /// count before truncation (special tokens excluded: what the token
    /// chunker measures). Each text is tokenized once: the untruncated
    /// encoding is counted, then truncated and given its special tokens
    /// exactly as a truncating `encode` would.
    pub fn encode_counted(&self, texts: &[&str]) -> Result<Vec<(Encoding, usize)>> {
        crate::model::parallel::map(texts, |text| {
            let whole = self.untruncated.encode(*text, false).map_err(tokenizer_error)?;
            let count = whole.len();
            Ok((self.inner.post_process(whole, None, true).map_err(tokenizer_error)?, count))
        })
    }

    /// Encodes (query, document) pairs, truncated to the window.
    pub fn encode_pairs(&self, query: &str, documents: &[&str]) -> Result<Vec<Encoding>> {
        crate::model::parallel::map(documents, |document| {
            self.inner.encode((query, *document), true).map_err(tokenizer_error)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WordPiece tokenizer with BERT's post-processor, small enough to
    /// write out: every text here is a run of known words.
    fn tokenizer(max_tokens: usize) -> TextTokenizer {
        let words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "alpha", "beta", "gamma", "##s", "."];
        let vocab: String = words.iter().enumerate().map(|(i, w)| format!("{w:?}: {i}")).collect::<Vec<_>>().join(", ");
        let json = format!(
            r###"{{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
              "normalizer": {{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                              "strip_accents": null, "lowercase": true}},
              "pre_tokenizer": {{"type": "BertPreTokenizer"}},
              "post_processor": {{"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}},
              "decoder": null,
              "model": {{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                         "max_input_chars_per_word": 100, "vocab": {{{vocab}}}}}}}"###
        );
        TextTokenizer::parse(json.as_bytes(), max_tokens).unwrap()
    }

    /// Tokenizing once gives what a truncating encode plus a separate
    /// untruncated count gave (the two passes this replaced).
    #[test]
    fn one_pass_matches_a_truncating_encode_and_a_count() {
        let tokenizer = tokenizer(6);
        let texts = ["", "alpha", "alpha betas gamma.", "gamma gamma gamma gamma gamma gamma gamma", "zeta alphas"];
        for (text, (encoding, count)) in texts.iter().zip(tokenizer.encode_counted(&texts).unwrap()) {
            let reference = tokenizer.inner.encode(*text, true).unwrap();
            assert_eq!(encoding.get_ids(), reference.get_ids(), "{text:?}");
            assert_eq!(encoding.get_type_ids(), reference.get_type_ids(), "{text:?}");
            assert_eq!(encoding.get_attention_mask(), reference.get_attention_mask(), "{text:?}");
            assert_eq!(count, tokenizer.untruncated.encode(*text, false).unwrap().len(), "{text:?}");
        }
        let (long, count) = &tokenizer.encode_counted(&["gamma gamma gamma gamma gamma gamma gamma"]).unwrap()[0];
        assert_eq!((long.len(), *count), (6, 7), "truncated to the window, counted whole");
    }
}
