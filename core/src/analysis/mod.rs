//! Text analysis: the one text → terms path shared by indexing and querying.
//!
//! qmd indexes with SQLite FTS5's `porter unicode61` tokenizer after spacing
//! out CJK characters; matching its results means producing the very same
//! terms, so both sides of the engine must go through this module.
//!
//! - [`tokenize`]: splitting, lowercasing, diacritic removal, CJK rule.
//! - [`stem`](mod@stem): the Porter stemmer as FTS5 implements it.
//! - [`longest_match`]: WordPiece's greedy split of one word.
//! - [`substring_set`]: which of many terms a text holds, in one pass.

pub use qmd_base::longest_match;
pub mod stem;
pub mod substring_set;
pub mod tokenize;

pub use stem::stem;
pub use tokenize::{Analyzer, Token, analyze, is_cjk, is_letter_or_number, normalize, words};

/// Whitespace as JavaScript's `\s` sees it. qmd splits queries with
/// `/\s+/`, which differs from `char::is_whitespace` (it includes U+FEFF and
/// excludes U+0085), so the query-side parsers use this to split the same way.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// `n` distinct made-up words of five or more letters (no stop words, no
/// word a prefix of another's stem), for tests of long queries.
#[cfg(test)]
pub(crate) fn made_up_words(n: usize) -> Vec<String> {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrstvwxz";
    (0..n)
        .map(|i| {
            let mut word = String::from("q");
            let mut rest = i + 20usize.pow(4);
            while rest > 0 {
                word.push(LETTERS[rest % 20] as char);
                rest /= 20;
            }
            word
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_whitespace_set() {
        for c in [' ', '\t', '\n', '\r', '\u{A0}', '\u{3000}', '\u{FEFF}'] {
            assert!(is_js_whitespace(c), "{c:?}");
        }
        for c in ['a', '_', '\u{85}', '\u{200B}'] {
            assert!(!is_js_whitespace(c), "{c:?}");
        }
    }
}
