//! BERT's uncased WordPiece tokenizer, small enough for the page's wasm:
//! basic splitting (control characters dropped, CJK characters alone,
//! lowercase, accents stripped, punctuation split off), then greedy
//! longest-match-first pieces with `##` continuations. The bundle's
//! documents and the page's queries both go through it, so the two always
//! agree; it matches Hugging Face's `BertTokenizer` for uncased models
//! (tested against it in the host).

use std::collections::HashMap;

use unicode_normalization::char::is_combining_mark;

use crate::analysis::longest_match::longest_match_first;
use crate::analysis::{is_cjk, is_letter_or_number, normalize};

/// Words longer than this (in chars) become `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

pub struct WordPiece {
    ids: HashMap<String, u32>,
    unk: Option<u32>,
    /// The longest token in bytes: no candidate piece is longer.
    longest: usize,
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || (!c.is_ascii() && !is_letter_or_number(c) && !c.is_whitespace() && !is_combining_mark(c))
}

/// The vocabulary shard a piece lives in: a word's first piece by its
/// first two characters' classes (`a`–`z`, `0`–`9`, `_` for any other; a
/// one-character piece by its one), a `##` continuation by its first
/// character's class, `-`-prefixed. A query loads only the shards its
/// words can match ([`shard_keys`]): splitting word starts by two
/// characters made the `s` shard's 12 KB (gzipped) a few hundred bytes
/// per pair, where continuations, many of them one or two characters
/// long, are kept whole by one (about 1 KB each).
pub fn shard_key(piece: &str) -> String {
    match piece.strip_prefix("##") {
        Some(rest) => continuation_key(rest.chars().next().unwrap_or('_')),
        None => {
            let mut chars = piece.chars();
            word_start_key(chars.next().unwrap_or('_'), chars.next())
        }
    }
}

fn class(c: char) -> char {
    if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' }
}

fn word_start_key(first: char, second: Option<char>) -> String {
    [Some(first), second].into_iter().flatten().map(class).collect()
}

fn continuation_key(first: char) -> String {
    format!("-{}", class(first))
}

/// Every shard key a vocabulary can have.
pub fn all_shard_keys() -> Vec<String> {
    let classes: Vec<char> = ('a'..='z').chain('0'..='9').chain(['_']).collect();
    let pairs = classes.iter().flat_map(|&a| classes.iter().map(move |&b| word_start_key(a, Some(b))));
    let singles = classes.iter().flat_map(|&c| [word_start_key(c, None), continuation_key(c)]);
    singles.chain(pairs).collect()
}

/// The vocabulary shards tokenizing `text` can touch: a word starts with a
/// piece of its first character or keyed by its first two, and continues
/// with pieces keyed by any later character.
pub fn shard_keys(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for word in basic_words(text) {
        if word.chars().count() > MAX_WORD_CHARS {
            continue;
        }
        let mut chars = word.chars();
        let first = chars.next().expect("words are not empty");
        keys.push(word_start_key(first, None));
        if let Some(second) = chars.next() {
            keys.push(word_start_key(first, Some(second)));
        }
        keys.extend(word.chars().skip(1).map(continuation_key));
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

impl WordPiece {
    /// From the vocabulary, one token per line in id order.
    pub fn from_lines(vocab: &str) -> WordPiece {
        let ids: HashMap<String, u32> = vocab.lines().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
        let unk = ids.get("[UNK]").copied();
        let longest = ids.keys().map(String::len).max().unwrap_or(0);
        WordPiece { ids, unk, longest }
    }

    /// An empty vocabulary, filled shard by shard with [`Self::insert`].
    pub fn with_unknown(unk: Option<u32>) -> WordPiece {
        WordPiece { ids: HashMap::new(), unk, longest: 0 }
    }

    pub fn insert(&mut self, token: String, id: u32) {
        self.longest = self.longest.max(token.len());
        self.ids.insert(token, id);
    }

    /// The id of `[UNK]`, when the vocabulary has one.
    pub fn unknown(&self) -> Option<u32> {
        self.unk
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
        if word.chars().count() > MAX_WORD_CHARS {
            out.extend(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        match longest_match_first(word, "##", self.longest, |piece| self.ids.get(piece).copied(), &mut pieces) {
            true => out.extend(pieces.iter().map(|piece| piece.0)),
            // One piece missing: the whole word is unknown.
            false => out.extend(self.unk),
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

    #[test]
    fn a_query_loads_only_the_shards_its_words_can_match() {
        let vocab = "[PAD]\n[UNK]\nun\n##aff\n##able\naff\nthe\n.\n,\ncafe\n中";
        let full = WordPiece::from_lines(vocab);
        let keys = shard_keys("Unaffable café.");
        assert_eq!(keys, ["-a", "-b", "-e", "-f", "-l", "-n", "_", "c", "ca", "u", "un"]);
        // Only the tokens of those shards, and the same ids come out.
        let mut partial = WordPiece::with_unknown(full.unknown());
        for (id, token) in vocab.lines().enumerate() {
            if keys.contains(&shard_key(token)) {
                partial.insert(token.to_string(), id as u32);
            }
        }
        assert!(partial.len() < full.len());
        assert_eq!(partial.tokenize("Unaffable café."), full.tokenize("Unaffable café."));
        assert_eq!(shard_key("##Ab"), "-_");
        assert_eq!((shard_key("un"), shard_key("u"), shard_key("Éa")), ("un".into(), "u".into(), "_a".into()));
        // Each key once: 37 one-character classes, word start and
        // continuation, and 37² pairs.
        let all = all_shard_keys();
        assert_eq!(all.iter().collect::<std::collections::HashSet<_>>().len(), 74 + 37 * 37);
        assert!(keys.iter().all(|k| all.contains(k)));
    }
}
