//! The model's tokenizer, with truncation to the model's window: a
//! Hugging Face `tokenizer.json`, or the vocabulary in a GGUF file
//! (WordPiece rebuilt as a `tokenizer.json`; llama.cpp's SentencePiece
//! algorithm, which `tokenizers` has no equivalent of, run as is).
//! Padding is done by the batcher, not here.

use tokenizers::{
    DecoderWrapper, Encoding, Model, ModelWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper, Token,
    TokenizerImpl, TruncationParams, TruncationStrategy,
};

use super::bounded_wordpiece::BoundedWordPiece;

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, SpmTokenizer, tokenizer_json};

pub struct TextTokenizer {
    backend: Implementation,
    /// Tokens per sequence, special tokens included.
    max_tokens: usize,
}

enum Implementation {
    /// A repository's `tokenizer.json`, as Hugging Face runs it.
    HuggingFace(Box<HuggingFace<ModelWrapper>>),
    /// A GGUF WordPiece vocabulary: the same pipeline, its model bounded.
    WordPiece(Box<HuggingFace<BoundedWordPiece>>),
    Spm(SpmTokenizer),
}

type Pipeline<M> = TokenizerImpl<M, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper>;

struct HuggingFace<M> {
    inner: Pipeline<M>,
    /// The same tokenizer without truncation, for counting.
    untruncated: Pipeline<M>,
}

impl<M: Model + Clone + serde::de::DeserializeOwned> HuggingFace<M> {
    fn parse(json: &[u8], max_tokens: usize) -> Result<Box<HuggingFace<M>>> {
        let mut inner = Pipeline::<M>::from_bytes(json).map_err(|e| Error::invalid(format!("tokenizer.json: {e}")))?;
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
        Ok(Box::new(HuggingFace { inner, untruncated }))
    }

    /// One text's encoding and its untruncated token count.
    fn encode_counted(&self, text: &str) -> Result<(Encoding, usize)> {
        let whole = self.untruncated.encode(text, false).map_err(tokenizer_error)?;
        let count = whole.len();
        Ok((self.inner.post_process(whole, None, true).map_err(tokenizer_error)?, count))
    }

    fn encode_pair(&self, query: &str, document: &str) -> Result<Encoding> {
        self.inner.encode((query, document), true).map_err(tokenizer_error)
    }

    fn vocabulary(&self) -> Vec<String> {
        let vocab = self.inner.get_vocab(true);
        let mut out = vec![String::new(); vocab.values().map(|&id| id as usize + 1).max().unwrap_or(0)];
        for (token, id) in vocab {
            out[id as usize] = token;
        }
        out
    }
}

fn tokenizer_error(e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("tokenizer: {e}"))
}

/// A text the tokenizer must take at load: words it has, and characters
/// few vocabularies hold, so a vocabulary that cannot map an unknown
/// character (a WordPiece model without `[UNK]`) fails at load, before an
/// `embed -f` changes anything, not on the first document.
const PROBE: &str = "qmd probe: Ünïcödé 東京 \u{1F9EA} \u{E000} 1234567890";

/// The most bytes of text read for each token the window holds: text past
/// `max_tokens × MAX_BYTES_PER_TOKEN` bytes cannot reach the model (no
/// vocabulary's tokens are that long on average: English averages about
/// 4 bytes a token, CJK 3), so it is never tokenized. One 15 MB string
/// tokenized whole cost 2.4 GB; cut, a request costs the same as one
/// that fills the window.
pub const MAX_BYTES_PER_TOKEN: usize = 32;

/// The start of `text` the model's window of `max_tokens` can use, cut
/// at a character boundary, and whether anything was cut.
pub fn window_prefix(text: &str, max_tokens: usize) -> (&str, bool) {
    let limit = max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN);
    if text.len() <= limit {
        return (text, false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

impl TextTokenizer {
    pub fn parse(json: &[u8], max_tokens: usize) -> Result<TextTokenizer> {
        TextTokenizer { backend: Implementation::HuggingFace(HuggingFace::parse(json, max_tokens)?), max_tokens }
            .checked()
    }

    /// The tokenizer, once it has taken [`PROBE`].
    fn checked(self) -> Result<TextTokenizer> {
        self.encode_counted(&[PROBE])?;
        Ok(self)
    }

    /// The tokenizer a GGUF file's `tokenizer.ggml.*` metadata describes.
    pub fn from_gguf(file: &GgufFile, max_tokens: usize) -> Result<TextTokenizer> {
        let tokenizer = match file.str("tokenizer.ggml.model")? {
            "llama" => {
                TextTokenizer { backend: Implementation::Spm(SpmTokenizer::from_gguf(file)?), max_tokens }.checked()
            }
            _ => {
                let backend = Implementation::WordPiece(HuggingFace::parse(&tokenizer_json(file)?, max_tokens)?);
                TextTokenizer { backend, max_tokens }.checked()
            }
        };
        // Errors name the file: the tokenizer's own do not.
        tokenizer.map_err(|e| match e.message.starts_with(file.name()) {
            true => e,
            false => Error::invalid(format!("{}: {}", file.name(), e.message)),
        })
    }

    /// Every token of the vocabulary, in id order (gaps as empty strings).
    pub fn vocabulary(&self) -> Vec<String> {
        match &self.backend {
            Implementation::HuggingFace(hf) => hf.vocabulary(),
            Implementation::WordPiece(hf) => hf.vocabulary(),
            Implementation::Spm(spm) => spm.pieces().to_vec(),
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
    ///
    /// Only the text's [`window_prefix`] is read: a text cut there counts
    /// as more tokens than the window (which it is).
    pub fn encode_counted(&self, texts: &[&str]) -> Result<Vec<(Encoding, usize)>> {
        crate::kernels::parallel::map(texts, |text| {
            let (text, cut) = window_prefix(text, self.max_tokens);
            let (encoding, count) = match &self.backend {
                Implementation::HuggingFace(hf) => hf.encode_counted(text)?,
                Implementation::WordPiece(hf) => hf.encode_counted(text)?,
                Implementation::Spm(spm) => {
                    let tokens = spm.encode(text);
                    let count = tokens.len();
                    (self.spm_sequence(spm, tokens), count)
                }
            };
            Ok((encoding, if cut { count.max(self.max_tokens + 1) } else { count }))
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
            Implementation::HuggingFace(_) | Implementation::WordPiece(_) => {
                let query = window_prefix(query, self.max_tokens).0;
                crate::kernels::parallel::map(documents, |document| {
                    let document = window_prefix(document, self.max_tokens).0;
                    match &self.backend {
                        Implementation::HuggingFace(hf) => hf.encode_pair(query, document),
                        Implementation::WordPiece(hf) => hf.encode_pair(query, document),
                        Implementation::Spm(_) => unreachable!("matched above"),
                    }
                })
            }
            Implementation::Spm(_) => Err(Error::invalid("a SentencePiece vocabulary has no pair encoding")),
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
            let Implementation::HuggingFace(hf) = &tokenizer.backend else { unreachable!() };
            let reference = hf.inner.encode(*text, true).unwrap();
            assert_eq!(encoding.get_ids(), reference.get_ids(), "{text:?}");
            assert_eq!(encoding.get_type_ids(), reference.get_type_ids(), "{text:?}");
            assert_eq!(encoding.get_attention_mask(), reference.get_attention_mask(), "{text:?}");
            assert_eq!(count, hf.untruncated.encode(*text, false).unwrap().len(), "{text:?}");
        }
        let (long, count) = &tokenizer.encode_counted(&["gamma gamma gamma gamma gamma gamma gamma"]).unwrap()[0];
        assert_eq!((long.len(), *count), (6, 7), "truncated to the window, counted whole");
    }

    /// Text past what the window can use is not read: a 4 MB word costs
    /// what the window's bytes cost, its tokens are the prefix's, and it
    /// counts as longer than the window.
    #[test]
    fn text_beyond_the_window_is_never_tokenized() {
        let tokenizer = tokenizer(6);
        let huge = format!("alpha beta {}", "é".repeat(2 << 20));
        let started = std::time::Instant::now();
        let (encoding, count) = &tokenizer.encode_counted(&[huge.as_str()]).unwrap()[0];
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
        assert_eq!(&encoding.get_ids()[..3], &[2, 4, 5], "[CLS] alpha beta");
        assert!(*count > 6, "counted as past the window: {count}");
        let (prefix, cut) = window_prefix(&huge, 6);
        assert!(cut && prefix.len() <= 6 * MAX_BYTES_PER_TOKEN && huge.starts_with(prefix));
        assert_eq!(window_prefix("alpha", 6), ("alpha", false));
    }

    /// A GGUF WordPiece vocabulary's bounded model splits as Hugging
    /// Face's WordPiece does with no word limit (llama.cpp's rule), ids,
    /// offsets and counts alike, and a word as long as the window can read
    /// costs its length (Hugging Face's took 13 s for 8,000 characters).
    #[test]
    fn the_bounded_wordpiece_splits_as_hugging_face_does() {
        let words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "una", "##ff", "##able", "##a", "##b", "b", "é", "##té"];
        let vocab: String = words.iter().enumerate().map(|(i, w)| format!("{w:?}: {i}")).collect::<Vec<_>>().join(", ");
        let json = format!(
            r###"{{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
              "normalizer": {{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                              "strip_accents": null, "lowercase": true}},
              "pre_tokenizer": {{"type": "BertPreTokenizer"}},
              "post_processor": {{"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}},
              "decoder": null,
              "model": {{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                         "max_input_chars_per_word": {}, "vocab": {{{vocab}}}}}}}"###,
            usize::MAX
        );
        let reference = HuggingFace::<ModelWrapper>::parse(json.as_bytes(), 16).unwrap();
        let bounded = HuggingFace::<BoundedWordPiece>::parse(json.as_bytes(), 16).unwrap();
        let long = format!("b{}", "ab".repeat(300));
        let texts = ["unaffable b", "Una-ffa", "étéb unx", "", "bbbbbbbbbbbbbbbbbbbbbbbb", long.as_str()];
        for text in texts {
            let (want, want_count) = reference.encode_counted(text).unwrap();
            let (got, got_count) = bounded.encode_counted(text).unwrap();
            assert_eq!(got.get_ids(), want.get_ids(), "{text:?}");
            assert_eq!(got.get_offsets(), want.get_offsets(), "{text:?}");
            assert_eq!(got_count, want_count, "{text:?}");
            let pair = |hf: &dyn Fn() -> Result<Encoding>| hf().unwrap().get_ids().to_vec();
            assert_eq!(pair(&|| bounded.encode_pair("una", text)), pair(&|| reference.encode_pair("una", text)));
        }
        assert_eq!(bounded.vocabulary(), reference.vocabulary());

        let tokenizer = TextTokenizer { backend: Implementation::WordPiece(bounded), max_tokens: 512 };
        let word = format!("b{}", "ab".repeat(8 << 10));
        let started = std::time::Instant::now();
        let (_, count) = &tokenizer.encode_counted(&[word.as_str()]).unwrap()[0];
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
        assert!(*count > 512, "{count}");
    }

    /// A vocabulary that cannot tokenize every text fails when it loads,
    /// not on the first document an `embed -f` reaches.
    #[test]
    fn a_wordpiece_without_unk_fails_at_load() {
        let json = r###"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
              "normalizer": null, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": null,
              "decoder": null, "model": {"type": "WordPiece", "unk_token": "[UNK]",
              "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": {"qmd": 0}}}"###;
        let error = TextTokenizer::parse(json.as_bytes(), 8).err().expect("refused at load");
        assert!(error.message.contains("UNK"), "{}", error.message);
    }
}
