//! BERT's uncased WordPiece tokenizer, small enough for the page's wasm:
//! basic splitting (control characters dropped, CJK characters alone,
//! lowercase, accents stripped, punctuation split off), then greedy
//! longest-match-first pieces with `##` continuations. The bundle's
//! documents and the page's queries both go through it, so the two always
//! agree; it matches Hugging Face's `BertTokenizer` for uncased models
//! (tested against it in the host).

use std::collections::HashMap;

use unicode_normalization::char::is_combining_mark;

use crate::analysis::{is_cjk, is_letter_or_number, normalize};

/// Words longer than this (in chars) become `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

pub struct WordPiece {
    ids: HashMap<String, u32>,
    unk: Option<u32>,
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || (!c.is_ascii() && !is_letter_or_number(c) && !c.is_whitespace() && !is_combining_mark(c))
}

impl WordPiece {
    /// From the vocabulary, one token per line in id order.
    pub fn from_lines(vocab: &str) -> WordPiece {
        let ids: HashMap<String, u32> = vocab.lines().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
        let unk = ids.get("[UNK]").copied();
        WordPiece { ids, unk }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Token ids of `text` (no `[CLS]`/`[SEP]`).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for word in basic_words(text) {
            self.pieces(&word, &mut out);
        }
        out
    }

    fn pieces(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > MAX_WORD_CHARS {
            out.extend(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        let mut candidate = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while end > start {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                candidate.clear();
                if start > 0 {
                    candidate.push_str("##");
                }
                candidate.push_str(&word[from..to]);
                if let Some(&id) = self.ids.get(&candidate) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => {
                    // One piece missing: the whole word is unknown.
                    out.truncate(start_len);
                    out.extend(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

/// BERT's basic tokenizer for uncased models: lowercased, accent-free words
/// and single punctuation or CJK characters.
pub fn basic_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if c.is_whitespace() {
            flush(&mut word, &mut words);
        } else if is_cjk(c) || is_punctuation(c) {
            flush(&mut word, &mut words);
            words.push(normalize(c.encode_utf8(&mut [0; 4])));
        } else if !is_combining_mark(c) {
            // The index's folding: lowercase, Latin accents removed.
            word.push_str(&normalize(c.encode_utf8(&mut [0; 4])));
        }
    }
    flush(&mut word, &mut words);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_pieces_and_unknown_words() {
        let vocab = "[PAD]\n[UNK]\nun\n##aff\n##able\naff\nthe\n.\n,\ncafe\n中";
        let wp = WordPiece::from_lines(vocab);
        assert_eq!(wp.tokenize("The unaffable, CAFÉ."), [6, 2, 3, 4, 8, 9, 7]);
        assert_eq!(wp.tokenize("unxyz 中文"), [1, 10, 1], "a word with a missing piece is [UNK]");
        assert_eq!(basic_words("a-b\tc\u{0007}d"), ["a", "-", "b", "cd"]);
    }
}
