//! The lex query syntax (qmd's `buildFTS5Query`, reference §6.1) parsed into
//! a small AST instead of an FTS5 query string.
//!
//! qmd sanitises each piece of the query, wraps it in FTS5 quotes and lets
//! FTS5's `porter unicode61` tokenizer split it again. We run that second
//! split through [`crate::analysis`] here, so every clause already holds the
//! index terms it must match.

use crate::analysis::{is_cjk, is_js_whitespace, is_letter_or_number, stem, words};

/// A parsed lex query: positives are ANDed, negatives excluded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LexQuery {
    pub clauses: Vec<Clause>,
}

/// One clause; `negated` clauses come from a leading `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub negated: bool,
    pub kind: ClauseKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClauseKind {
    /// A plain word: matches its stemmed term exactly, and (when `prefix`)
    /// index terms starting with the normalised word. `word` is normalised
    /// (lowercase, no diacritics), `stemmed` its Porter stem.
    ///
    /// Note: FTS5 runs a prefix query token through the porter stemmer too,
    /// so qmd's `"performance"*` really matches index terms starting with
    /// `stemmed` (`perform…`); a matcher wanting FTS5's results uses
    /// `stemmed` as the prefix.
    Term { word: String, stemmed: String, prefix: bool },
    /// Consecutive terms (already stemmed), matched as a phrase.
    Phrase(Vec<String>),
    /// An unquoted word that splits into several terms (`multi-agent`,
    /// `foo_bar`). qmd turns it into a phrase; for ranking, its parts count
    /// as optional terms (a required phrase filtered out most relevant
    /// documents of hyphen-heavy queries). Negated, it is a phrase.
    Compound(Vec<String>),
    /// Dotted version `2026.4.10`: every part must occur (each part a prefix
    /// term as in §6.1).
    AllOf(Vec<ClauseKind>),
}

impl LexQuery {
    /// FTS5's NOT is binary: a query without positives returns nothing.
    pub fn has_positive(&self) -> bool {
        self.clauses.iter().any(|c| !c.negated)
    }

    /// Distinct normalised words of positive clauses, for snippets and
    /// highlighting, in query order. Phrases only keep their stemmed terms,
    /// so for them the stem is returned (a prefix of the word in most cases).
    pub fn positive_words(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for clause in self.clauses.iter().filter(|c| !c.negated) {
            collect_words(&clause.kind, &mut out);
        }
        out
    }
}

fn collect_words(kind: &ClauseKind, out: &mut Vec<String>) {
    let mut add = |w: &str| {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_owned());
        }
    };
    match kind {
        ClauseKind::Term { word, .. } => add(word),
        ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) => terms.iter().for_each(|t| add(t)),
        ClauseKind::AllOf(parts) => parts.iter().for_each(|p| collect_words(p, out)),
    }
}

/// Parses lex syntax: scan left to right; a leading `-` negates; `"…"` is a
/// phrase up to the next `"` or the end; anything else is a term running to
/// whitespace or `"`. Pieces that sanitise to nothing are dropped.
pub fn parse_lex(input: &str) -> LexQuery {
    let chars: Vec<char> = input.chars().collect();
    let mut clauses = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && is_js_whitespace(chars[i]) {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let negated = chars[i] == '-';
        if negated {
            i += 1;
        }
        let kind = if chars.get(i) == Some(&'"') {
            let start = i + 1;
            i = start;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            let phrase: String = chars[start..i].iter().collect();
            i += 1; // the closing quote (or past the end)
            quoted_phrase(&phrase)
        } else {
            let start = i;
            while i < chars.len() && !is_js_whitespace(chars[i]) && chars[i] != '"' {
                i += 1;
            }
            let term: String = chars[start..i].iter().collect();
            plain_term(&term)
        };
        if let Some(kind) = kind {
            clauses.push(Clause { negated, kind });
        }
    }
    LexQuery { clauses }
}

/// One unquoted term, by qmd's precedence: hyphenated, dotted, CJK, plain.
fn plain_term(term: &str) -> Option<ClauseKind> {
    if is_hyphenated(term) {
        let joined: Vec<String> = term.split('-').map(sanitize).filter(|p| !p.is_empty()).collect();
        match phrase_of(&joined.join(" ")) {
            Some(ClauseKind::Phrase(terms)) if terms.len() > 1 => Some(ClauseKind::Compound(terms)),
            other => other,
        }
    } else if is_dotted(term) {
        let parts: Vec<ClauseKind> = term.split('.').filter_map(|p| prefix_term(&sanitize(p))).collect();
        match parts.len() {
            0 => None,
            1 => parts.into_iter().next(),
            _ => Some(ClauseKind::AllOf(parts)),
        }
    } else if term.chars().any(is_cjk) {
        quoted_phrase(term)
    } else {
        prefix_term(&sanitize(term))
    }
}

/// qmd's `"<sanitized>"*`: one FTS5 token → prefix term; several (`foo_bar`,
/// `don't`) → phrase, since FTS5 re-tokenises the quoted string (§6.2).
/// FTS5 would keep the prefix on the phrase's last token; the AST has no
/// place for that, so such phrases match exactly.
fn prefix_term(sanitized: &str) -> Option<ClauseKind> {
    let mut ws = words(sanitized);
    match ws.len() {
        0 => None,
        1 => {
            let word = ws.pop().unwrap_or_default();
            let stemmed = stem(&word).into_owned();
            Some(ClauseKind::Term { word, stemmed, prefix: true })
        }
        _ => Some(ClauseKind::Compound(stem_all(&ws))),
    }
}

/// qmd's `sanitizeFTS5Phrase`: space out CJK, split on whitespace, split
/// dotted words into their parts, sanitise each word; then FTS5's split.
fn quoted_phrase(phrase: &str) -> Option<ClauseKind> {
    let mut spaced = String::with_capacity(phrase.len());
    for c in phrase.chars() {
        if is_cjk(c) {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    let mut pieces: Vec<String> = Vec::new();
    for word in spaced.split(is_js_whitespace) {
        if is_dotted(word) {
            pieces.extend(word.split('.').map(sanitize));
        } else {
            pieces.push(sanitize(word));
        }
    }
    pieces.retain(|p| !p.is_empty());
    phrase_of(&pieces.join(" "))
}

/// The stemmed FTS5 terms of a sanitised phrase string; `None` when empty.
fn phrase_of(sanitized: &str) -> Option<ClauseKind> {
    let ws = words(sanitized);
    (!ws.is_empty()).then(|| ClauseKind::Phrase(stem_all(&ws)))
}

fn stem_all(ws: &[String]) -> Vec<String> {
    ws.iter().map(|w| stem(w).into_owned()).collect()
}

/// qmd's `sanitizeFTS5Term`: keep letters, numbers, `'` and `_`, lowercase.
/// Dropping other characters joins their neighbours (`hello!world` →
/// `helloworld`), unlike the tokenizer, which would split there. Combining
/// marks are dropped too, as qmd does (so Hindi `आदेश` queries `आदश`).
fn sanitize(term: &str) -> String {
    term.chars().filter(|&c| is_letter_or_number(c) || c == '\'' || c == '_').flat_map(char::to_lowercase).collect()
}

/// `[\p{L}\p{N}]`, as in qmd's regexes.
fn is_word_char(c: char) -> bool {
    is_letter_or_number(c)
}

/// `^[\p{L}\p{N}][\p{L}\p{N}'-]*-[\p{L}\p{N}][\p{L}\p{N}'-]*$`: starts with a
/// word char, holds only word chars, `'` and `-`, and some `-` is followed
/// by a word char.
fn is_hyphenated(token: &str) -> bool {
    let chars: Vec<char> = token.chars().collect();
    let allowed = |c: char| is_word_char(c) || c == '\'' || c == '-';
    chars.first().is_some_and(|&c| is_word_char(c))
        && chars.iter().all(|&c| allowed(c))
        && chars.windows(2).skip(1).any(|w| w[0] == '-' && is_word_char(w[1]))
}

/// At least two dot-separated parts, each non-empty and made of word chars
/// or `_` (`2026.4.10`, `v1.2`), so leading/trailing dots do not qualify.
fn is_dotted(token: &str) -> bool {
    let mut parts = 0;
    for part in token.split('.') {
        if part.is_empty() || !part.chars().all(|c| is_word_char(c) || c == '_') {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(word: &str, stemmed: &str) -> ClauseKind {
        ClauseKind::Term { word: word.into(), stemmed: stemmed.into(), prefix: true }
    }
    fn phrase(terms: &[&str]) -> ClauseKind {
        ClauseKind::Phrase(terms.iter().map(|t| t.to_string()).collect())
    }
    fn compound(terms: &[&str]) -> ClauseKind {
        ClauseKind::Compound(terms.iter().map(|t| t.to_string()).collect())
    }
    fn pos(kind: ClauseKind) -> Clause {
        Clause { negated: false, kind }
    }
    fn neg(kind: ClauseKind) -> Clause {
        Clause { negated: true, kind }
    }

    #[test]
    fn plain_words_are_prefix_terms() {
        let q = parse_lex("foo bar");
        assert_eq!(q.clauses, [pos(term("foo", "foo")), pos(term("bar", "bar"))]);
        assert!(q.has_positive());
    }

    #[test]
    fn negation() {
        let q = parse_lex("performance -sports -athlete");
        assert_eq!(
            q.clauses,
            [pos(term("performance", "perform")), neg(term("sports", "sport")), neg(term("athlete", "athlet"))]
        );
        assert_eq!(q.positive_words(), ["performance"]);
    }

    #[test]
    fn quoted_phrase_is_sanitised_and_stemmed() {
        assert_eq!(parse_lex("\"C++ performance\"").clauses, [pos(phrase(&["c", "perform"]))]);
        assert_eq!(parse_lex("-\"machine learning\" x").clauses[0], neg(phrase(&["machin", "learn"])));
        // Dotted words inside a phrase split into parts.
        assert_eq!(parse_lex("\"release 1.0.21\"").clauses, [pos(phrase(&["releas", "1", "0", "21"]))]);
    }

    #[test]
    fn hyphenated_words_are_compounds_of_optional_parts() {
        assert_eq!(
            parse_lex("multi-agent memory").clauses,
            [pos(compound(&["multi", "agent"])), pos(term("memory", "memori"))]
        );
        assert_eq!(
            parse_lex("performance -multi-agent").clauses,
            [pos(term("performance", "perform")), neg(compound(&["multi", "agent"]))]
        );
        assert_eq!(parse_lex("DEC-0054").clauses, [pos(compound(&["dec", "0054"]))]);
        assert_eq!(parse_lex("gpt-4").clauses, [pos(compound(&["gpt", "4"]))]);
        // A trailing hyphen alone is not a compound: plain term.
        assert_eq!(parse_lex("foo-").clauses, [pos(term("foo", "foo"))]);
    }

    #[test]
    fn dotted_versions_need_every_part() {
        let want = ClauseKind::AllOf(vec![term("2026", "2026"), term("4", "4"), term("10", "10")]);
        assert_eq!(parse_lex("2026.4.10").clauses, [pos(want.clone())]);
        assert_eq!(parse_lex("x -2026.4.10").clauses[1], neg(want));
        // Leading/trailing dots are not versions: sanitised as one word.
        assert_eq!(parse_lex(".foo").clauses, [pos(term("foo", "foo"))]);
        assert_eq!(parse_lex("a.b!").clauses, [pos(term("ab", "ab"))]);
    }

    #[test]
    fn cjk_becomes_a_character_phrase() {
        assert_eq!(parse_lex("東京タワー").clauses, [pos(phrase(&["東", "京", "タ", "ワ", "ー"]))]);
        assert_eq!(parse_lex("検索engines").clauses, [pos(phrase(&["検", "索", "engin"]))]);
        assert_eq!(parse_lex("-한국").clauses, [neg(phrase(&["한", "국"]))]);
    }

    #[test]
    fn words_that_tokenise_to_several_terms_become_phrases() {
        assert_eq!(parse_lex("foo_bar").clauses, [pos(compound(&["foo", "bar"]))]);
        assert_eq!(parse_lex("don't").clauses, [pos(compound(&["don", "t"]))]);
        assert_eq!(parse_lex("hello!world").clauses, [pos(term("helloworld", "helloworld"))]);
        assert_eq!(parse_lex("Café").clauses, [pos(term("cafe", "cafe"))]);
    }

    #[test]
    fn negation_only_has_no_positive() {
        let q = parse_lex("-foo -\"bar baz\"");
        assert_eq!(q.clauses.len(), 2);
        assert!(!q.has_positive());
        assert!(q.positive_words().is_empty());
    }

    #[test]
    fn unbalanced_quote_runs_to_end() {
        assert_eq!(parse_lex("x \"unclosed phrase").clauses, [pos(term("x", "x")), pos(phrase(&["unclos", "phrase"]))]);
        // A quote ends a plain term and opens a phrase.
        assert_eq!(parse_lex("foo\"bar baz\"").clauses, [pos(term("foo", "foo")), pos(phrase(&["bar", "baz"]))]);
    }

    #[test]
    fn empty_pieces_are_dropped() {
        assert!(parse_lex("").clauses.is_empty());
        assert!(parse_lex("   ").clauses.is_empty());
        assert!(parse_lex("-").clauses.is_empty());
        assert!(parse_lex("\"!!\"").clauses.is_empty());
        assert!(parse_lex("\"\" !!! _").clauses.is_empty());
        assert_eq!(parse_lex("- foo").clauses, [pos(term("foo", "foo"))]);
        assert_eq!(parse_lex("--foo").clauses, [neg(term("foo", "foo"))]);
    }

    #[test]
    fn positive_words_are_distinct_and_ordered() {
        let q = parse_lex("Memory foo memory multi-agent -bar 2026.4");
        assert_eq!(q.positive_words(), ["memory", "foo", "multi", "agent", "2026", "4"]);
    }
}
