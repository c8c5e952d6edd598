//! The model's tokenizer, with truncation to the model's window: a
//! Hugging Face `tokenizer.json`, or the vocabulary in a GGUF file
//! (WordPiece rebuilt as a `tokenizer.json`; llama.cpp's SentencePiece
//! algorithm, which `tokenizers` has no equivalent of, run as is).
//! Padding is done by the batcher, not here.

use tokenizers::{Encoding, Token, Tokenizer, TruncationParams, TruncationStrategy};

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, SpmTokenizer, tokenizer_json};

pub struct TextTokenizer {
    backend: Backend,
    /// Tokens per sequence, special tokens included.
    max_tokens: usize,
}

enum Backend {
    HuggingFace(Box<HuggingFace>),
    Spm(SpmTokenizer),
}

struct HuggingFace {
    inner: Tokenizer,
    /// The same tokenizer without truncation, for counting.
    untruncated: Tokenizer,
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
        Ok(TextTokenizer { backend: Backend::HuggingFace(Box::new(HuggingFace { inner, untruncated })), max_tokens })
    }

    /// The tokenizer a GGUF file's `tokenizer.ggml.*` metadata describes.
    pub fn from_gguf(file: &GgufFile, max_tokens: usize) -> Result<TextTokenizer> {
        match file.str("tokenizer.ggml.model")? {
            "llama" => Ok(TextTokenizer { backend: Backend::Spm(SpmTokenizer::from_gguf(file)?), max_tokens }),
            _ => TextTokenizer::parse(&tokenizer_json(file)?, max_tokens),
        }
    }

    /// Every token of the vocabulary, in id order (gaps as empty strings).
    pub fn vocabulary(&self) -> Vec<String> {
        match &self.backend {
            Backend::HuggingFace(hf) => {
                let vocab = hf.inner.get_vocab(true);
                let mut out = vec![String::new(); vocab.values().map(|&id| id as usize + 1).max().unwrap_or(0)];
                for (token, id) in vocab {
                    out[id as usize] = token;
                }
                out
            }
            Backend::Spm(spm) => spm.pieces().to_vec(),
        }
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
        crate::model::parallel::map(texts, |text| match &self.backend {
            Backend::HuggingFace(hf) => {
                let whole = hf.untruncated.encode(*text, false).map_err(tokenizer_error)?;
                let count = whole.len();
                Ok((hf.inner.post_process(whole, None, true).map_err(tokenizer_error)?, count))
            }
            Backend::Spm(spm) => {
                let tokens = spm.encode(text);
                Ok((self.spm_sequence(spm, tokens.clone()), tokens.len()))
            }
        })
    }

    /// A text's tokens as llama.cpp's embedding context evaluates them
    /// (node-llama-cpp's `getEmbeddingFor`): cut to the window, BOS in
    /// front and EOS at the end where the vocabulary adds them and they are
    /// not there already.
    fn spm_sequence(&self, spm: &SpmTokenizer, mut tokens: Vec<u32>) -> Encoding {
        let specials = usize::from(spm.bos.is_some()) + usize::from(spm.eos.is_some());
        tokens.truncate(self.max_tokens.saturating_sub(specials));
        if let Some(bos) = spm.bos.filter(|&b| tokens.first() != Some(&b)) {
            tokens.insert(0, bos);
        }
        if let Some(eos) = spm.eos.filter(|&e| tokens.last() != Some(&e)) {
            tokens.push(eos);
        }
        let pieces = spm.pieces();
        Encoding::from_tokens(
            tokens.into_iter().map(|id| Token::new(id, pieces[id as usize].clone(), (0, 0))).collect(),
            0,
        )
    }

    /// Encodes (query, document) pairs, truncated to the window.
    pub fn encode_pairs(&self, query: &str, documents: &[&str]) -> Result<Vec<Encoding>> {
        match &self.backend {
            Backend::HuggingFace(hf) => crate::model::parallel::map(documents, |document| {
                hf.inner.encode((query, *document), true).map_err(tokenizer_error)
            }),
            Backend::Spm(_) => Err(Error::invalid("a SentencePiece vocabulary has no pair encoding")),
        }
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
            let Backend::HuggingFace(hf) = &tokenizer.backend else { unreachable!() };
            let reference = hf.inner.encode(*text, true).unwrap();
            assert_eq!(encoding.get_ids(), reference.get_ids(), "{text:?}");
            assert_eq!(encoding.get_type_ids(), reference.get_type_ids(), "{text:?}");
            assert_eq!(encoding.get_attention_mask(), reference.get_attention_mask(), "{text:?}");
            assert_eq!(count, hf.untruncated.encode(*text, false).unwrap().len(), "{text:?}");
        }
        let (long, count) = &tokenizer.encode_counted(&["gamma gamma gamma gamma gamma gamma gamma"]).unwrap()[0];
        assert_eq!((long.len(), *count), (6, 7), "truncated to the window, counted whole");
    }
}
