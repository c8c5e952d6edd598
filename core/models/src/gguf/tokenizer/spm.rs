//! llama.cpp's SentencePiece-style tokenizer (`tokenizer.ggml.model =
//! llama`, Gemma's and Llama 2's vocabularies): pieces with scores, merged
//! pairwise by score, bytes for what no piece covers. This is not
//! SentencePiece's own algorithm but llama.cpp's (`llm_tokenizer_spm`), so
//! token ids match the runtime qmd uses, ties and all.
//!
//! - Special tokens are cut out of the text first ([`SpecialTokens`]);
//!   embedding parses none, so only user-defined ones.
//! - Each remaining fragment gets a `▁` in front when the vocabulary asks
//!   (`add_space_prefix`) and it starts the text or follows a special
//!   token; spaces become `▁`.
//! - Characters start as symbols; the adjacent pair whose concatenation is
//!   the piece with the highest score merges first (the leftmost on a tie),
//!   until no pair is a piece. A symbol that is not a piece becomes its
//!   bytes' `<0xXX>` tokens.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::merge::merge_pairs;
use super::special::{Fragment, SpecialTokens};
use super::{GgufFile, Value, flag, pieces, special_id, token_type, token_types};
use crate::error::{Error, Result};

pub struct SpmTokenizer {
    pieces: Vec<String>,
    scores: Vec<f32>,
    ids: HashMap<String, u32>,
    special: SpecialTokens,
    unknown: Option<u32>,
    add_space_prefix: bool,
    /// The tokens a sequence starts and ends with, when the vocabulary adds them.
    pub bos: Option<u32>,
    pub eos: Option<u32>,
}

impl SpmTokenizer {
    pub fn from_gguf(file: &GgufFile) -> Result<SpmTokenizer> {
        let name = file.name();
        let pieces = pieces(file)?;
        let scores = match file.get("tokenizer.ggml.scores").and_then(Value::as_array) {
            Some(values) if values.len() == pieces.len() => values
                .iter()
                .map(|v| match v {
                    Value::F32(s) => Ok(*s),
                    _ => Err(file.missing("tokenizer.ggml.scores", "f32 values")),
                })
                .collect::<Result<Vec<f32>>>()?,
            Some(values) => {
                return Err(Error::invalid(format!(
                    "{name}: {} token scores for {} tokens",
                    values.len(),
                    pieces.len()
                )));
            }
            None => vec![0.0; pieces.len()],
        };
        let types = token_types(file, pieces.len());
        let special = |key: &str| special_id(file, key, pieces.len());
        let unknown = special("tokenizer.ggml.unknown_token_id")?;
        let bos = special("tokenizer.ggml.bos_token_id")?
            .filter(|_| flag(file, "tokenizer.ggml.add_bos_token").unwrap_or(true));
        let eos = special("tokenizer.ggml.eos_token_id")?
            .filter(|_| flag(file, "tokenizer.ggml.add_eos_token").unwrap_or(false));
        let add_space_prefix = flag(file, "tokenizer.ggml.add_space_prefix").unwrap_or(true);
        Ok(SpmTokenizer::new(pieces, scores, &types, unknown, (bos, eos), add_space_prefix))
    }

    /// `added`: the BOS and EOS a sequence gets, where the vocabulary adds them.
    fn new(
        pieces: Vec<String>,
        scores: Vec<f32>,
        types: &[u64],
        unknown: Option<u32>,
        added: (Option<u32>, Option<u32>),
        add_space_prefix: bool,
    ) -> SpmTokenizer {
        // The later of two equal pieces wins, as in llama.cpp's map.
        let ids: HashMap<String, u32> = pieces.iter().enumerate().map(|(i, p)| (p.clone(), i as u32)).collect();
        let special = SpecialTokens::new(&pieces, types);
        let unknown = unknown.or_else(|| types.iter().position(|&t| t == token_type::UNKNOWN).map(|i| i as u32));
        SpmTokenizer { pieces, scores, ids, special, unknown, add_space_prefix, bos: added.0, eos: added.1 }
    }

    /// Every piece, in id order.
    pub fn pieces(&self) -> &[String] {
        &self.pieces
    }

    /// The text's tokens, without BOS/EOS (llama.cpp's `tokenize` with
    /// `add_special` and `parse_special` off).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut previous_special = true;
        for fragment in self.special.partition(text, false) {
            match fragment {
                Fragment::Token(id) => {
                    out.push(id);
                    previous_special = true;
                }
                Fragment::Text(text) => {
                    let prefix = if self.add_space_prefix && previous_special { " " } else { "" };
                    self.merge(&format!("{prefix}{text}").replace(' ', "\u{2581}"), &mut out);
                    previous_special = false;
                }
            }
        }
        out
    }

    /// One fragment's pieces: `llm_tokenizer_spm_session::tokenize`,
    /// pairs merged by the score of the piece they make.
    fn merge(&self, text: &str, out: &mut Vec<u32>) {
        let score = |_: &str, _: &str, joined: &str| {
            let id = *self.ids.get(joined)?;
            Some(Score(self.scores[id as usize]))
        };
        for range in merge_pairs(text, score) {
            let piece = &text[range];
            match self.ids.get(piece) {
                Some(&id) => out.push(id),
                None => out.extend(piece.bytes().map(|b| self.byte_token(b))),
            }
        }
    }

    /// `<0xAB>`, else an ASCII byte as a one-character piece, else unknown.
    fn byte_token(&self, byte: u8) -> u32 {
        self.ids
            .get(&format!("<0x{byte:02X}>"))
            .or_else(|| byte.is_ascii().then(|| self.ids.get(&char::from(byte).to_string())).flatten())
            .copied()
            .or(self.unknown)
            .unwrap_or(0)
    }
}

/// A piece's score, ordered as f32's total order.
#[derive(PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NORMAL: u64 = 1;

    /// A vocabulary of (piece, score, type), ids in order.
    fn tokenizer(vocab: &[(&str, f32, u64)], add_space_prefix: bool) -> SpmTokenizer {
        let mut pieces: Vec<String> = vocab.iter().map(|v| v.0.to_string()).collect();
        let mut scores: Vec<f32> = vocab.iter().map(|v| v.1).collect();
        let mut types: Vec<u64> = vocab.iter().map(|v| v.2).collect();
        for b in 0..=255u8 {
            pieces.push(format!("<0x{b:02X}>"));
            scores.push(0.0);
            types.push(6);
        }
        SpmTokenizer::new(pieces, scores, &types, None, (None, None), add_space_prefix)
    }

    fn pieces(t: &SpmTokenizer, text: &str) -> Vec<String> {
        t.encode(text).into_iter().map(|id| t.pieces[id as usize].clone()).collect()
    }

    #[test]
    fn pairs_merge_by_the_score_of_what_they_make() {
        let vocab =
            [("a", 0.0, NORMAL), ("b", 0.0, NORMAL), ("c", 0.0, NORMAL), ("ab", -5.0, NORMAL), ("bc", -1.0, NORMAL)];
        let t = tokenizer(&vocab, false);
        // "bc" scores higher than "ab", so it is made first and "ab" never is.
        assert_eq!(pieces(&t, "abc"), ["a", "bc"]);
        let vocab =
            [("a", 0.0, NORMAL), ("b", 0.0, NORMAL), ("c", 0.0, NORMAL), ("ab", -1.0, NORMAL), ("bc", -5.0, NORMAL)];
        assert_eq!(pieces(&tokenizer(&vocab, false), "abc"), ["ab", "c"]);
    }

    #[test]
    fn equal_scores_merge_the_leftmost_pair_first() {
        let vocab = [("a", 0.0, NORMAL), ("aa", -1.0, NORMAL)];
        assert_eq!(pieces(&tokenizer(&vocab, false), "aaa"), ["aa", "a"]);
        let vocab = [("a", 0.0, NORMAL), ("aa", -1.0, NORMAL), ("aaaa", -2.0, NORMAL)];
        assert_eq!(pieces(&tokenizer(&vocab, false), "aaaaa"), ["aaaa", "a"]);
    }

    #[test]
    fn spaces_become_the_word_marker_and_the_prefix_is_optional() {
        let vocab = [
            ("\u{2581}", 0.0, NORMAL),
            ("h", 0.0, NORMAL),
            ("i", 0.0, NORMAL),
            ("\u{2581}hi", -1.0, NORMAL),
            ("\u{2581}h", -2.0, NORMAL),
            ("hi", -3.0, NORMAL),
        ];
        assert_eq!(pieces(&tokenizer(&vocab, true), "hi hi"), ["\u{2581}hi", "\u{2581}hi"]);
        assert_eq!(pieces(&tokenizer(&vocab, false), "hi hi"), ["hi", "\u{2581}hi"]);
    }

    #[test]
    fn characters_without_a_piece_fall_back_to_bytes() {
        let t = tokenizer(&[("a", 0.0, NORMAL)], false);
        assert_eq!(pieces(&t, "aé"), ["a", "<0xC3>", "<0xA9>"]);
    }

    #[test]
    fn user_defined_pieces_are_cut_out_first_longest_first() {
        let vocab = [("<b>", 0.0, 4), ("<b><b>", 0.0, 4), ("x", 0.0, NORMAL), ("<", 0.0, NORMAL), ("<ctl>", 0.0, 3)];
        let t = tokenizer(&vocab, true);
        // Control tokens are not parsed from text; user-defined ones are,
        // and text after one gets the space prefix again (llama.cpp's
        // `is_prev_special`); "▁" has no piece here, so it is bytes.
        let space = ["<0xE2>", "<0x96>", "<0x81>"];
        let expected = [&space[..], &["x", "<b><b>", "<b>"], &space[..], &["x"]].concat();
        assert_eq!(pieces(&t, "x<b><b><b>x"), expected);
        assert!(!t.encode("<ctl>").contains(&4));
    }
}
