//! Query documents (qmd's docs/SYNTAX.md): one plain or `expand:` line, or
//! typed `lex:`/`vec:`/`hyde:` lines with at most one `intent:` line. Error
//! texts are qmd's.

use crate::api::{SearchType, TypedSearch};
use crate::error::{Error, Result};

/// What a query string asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryDocument {
    /// A plain (or `expand:`) query: probe, expand, fuse.
    Expand(String),
    /// Typed searches, run as given.
    Structured { searches: Vec<TypedSearch>, intent: Option<String> },
}

/// Strips a case-insensitive `prefix:` and the spaces after it.
fn strip_prefix<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    // `get` keeps a multi-byte character after a short line intact.
    let name = line.get(..prefix.len())?;
    let rest = line[prefix.len()..].strip_prefix(':')?;
    name.eq_ignore_ascii_case(prefix).then(|| rest.trim_start())
}

fn search_type(line: &str) -> Option<(SearchType, &str)> {
    [("lex", SearchType::Lex), ("vec", SearchType::Vec), ("hyde", SearchType::Hyde)]
        .into_iter()
        .find_map(|(name, kind)| strip_prefix(line, name).map(|rest| (kind, rest)))
}

/// The type a search is named by (`lex`, `vec`, `hyde`), exactly.
pub fn type_named(name: &str) -> Option<SearchType> {
    [SearchType::Lex, SearchType::Vec, SearchType::Hyde].into_iter().find(|&kind| type_name(kind) == name)
}

pub fn type_name(kind: SearchType) -> &'static str {
    match kind {
        SearchType::Lex => "lex",
        SearchType::Vec => "vec",
        SearchType::Hyde => "hyde",
    }
}

/// qmd's `parseStructuredQuery` (CLI); `None` input lines are skipped.
pub fn parse_query_document(input: &str) -> Result<QueryDocument> {
    let lines: Vec<(usize, &str)> =
        input.split('\n').map(str::trim).enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.is_empty()).collect();
    let plain = || QueryDocument::Expand(input.trim().to_string());
    if lines.is_empty() {
        return Err(Error::invalid("Query must not be empty."));
    }
    let mut searches = Vec::new();
    let mut intent: Option<String> = None;
    for &(number, line) in &lines {
        if let Some(text) = strip_prefix(line, "expand") {
            if lines.len() > 1 {
                return Err(Error::invalid(format!(
                    "Line {number} starts with expand:, but query documents cannot mix expand with typed lines. Submit a single expand query instead."
                )));
            }
            let text = text.trim();
            if text.is_empty() {
                return Err(Error::invalid("expand: query must include text."));
            }
            return Ok(QueryDocument::Expand(text.to_string()));
        }
        if let Some(text) = strip_prefix(line, "intent") {
            if intent.is_some() {
                return Err(Error::invalid(format!(
                    "Line {number}: only one intent: line is allowed per query document."
                )));
            }
            if text.trim().is_empty() {
                return Err(Error::invalid(format!("Line {number}: intent: must include text.")));
            }
            intent = Some(text.trim().to_string());
            continue;
        }
        if let Some((kind, text)) = search_type(line) {
            let text = text.trim();
            if text.is_empty() {
                return Err(Error::invalid(format!("Line {number} ({}:) must include text.", type_name(kind))));
            }
            searches.push((number, TypedSearch { kind, query: text.to_string() }));
            continue;
        }
        if lines.len() == 1 {
            return Ok(plain());
        }
        return Err(Error::invalid(format!(
            "Line {number} is missing a lex:/vec:/hyde:/intent: prefix. Each line in a query document must start with one."
        )));
    }
    if searches.is_empty() {
        return Err(Error::invalid("intent: cannot appear alone. Add at least one lex:, vec:, or hyde: line."));
    }
    for (number, search) in &searches {
        validate_search(search, Some(*number))?;
    }
    Ok(QueryDocument::Structured { searches: searches.into_iter().map(|(_, s)| s).collect(), intent })
}

/// qmd's checks before a structured search runs (`line` names the query
/// document line; MCP and REST searches have none).
pub fn validate_search(search: &TypedSearch, line: Option<usize>) -> Result<()> {
    let location = line.map_or_else(|| "Structured search".to_string(), |n| format!("Line {n}"));
    let kind = type_name(search.kind);
    let fail = |message: &str| Err(Error::invalid(format!("{location} ({kind}): {message}")));
    if search.query.contains(['\r', '\n']) {
        return fail("queries must be single-line. Remove newline characters.");
    }
    match search.kind {
        SearchType::Lex if search.query.matches('"').count() % 2 == 1 => {
            fail("Lex query has an unmatched double quote (\"). Add the closing quote or remove it.")
        }
        SearchType::Vec | SearchType::Hyde if has_negation(&search.query) => {
            fail("Negation (-term) is not supported in vec/hyde queries. Use lex for exclusions.")
        }
        _ => Ok(()),
    }
}

/// `-word` or `-"phrase"` at a token boundary (`real-time` is fine).
fn has_negation(query: &str) -> bool {
    let chars: Vec<char> = query.chars().collect();
    chars.iter().enumerate().any(|(i, &c)| {
        c == '-'
            && (i == 0 || chars[i - 1].is_whitespace())
            && chars.get(i + 1).is_some_and(|&n| n == '"' || n == '_' || n.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structured(input: &str) -> (Vec<(SearchType, String)>, Option<String>) {
        match parse_query_document(input).unwrap() {
            QueryDocument::Structured { searches, intent } => {
                (searches.into_iter().map(|s| (s.kind, s.query)).collect(), intent)
            }
            other => panic!("not structured: {other:?}"),
        }
    }

    fn error(input: &str) -> String {
        parse_query_document(input).unwrap_err().message
    }

    #[test]
    fn plain_and_expand_lines() {
        assert_eq!(
            parse_query_document("  how does auth work ").unwrap(),
            QueryDocument::Expand("how does auth work".into())
        );
        assert_eq!(parse_query_document("EXPAND: auth").unwrap(), QueryDocument::Expand("auth".into()));
        assert_eq!(error("expand:   "), "expand: query must include text.");
    }

    #[test]
    fn typed_lines_with_intent() {
        let (searches, intent) = structured("intent: web perf\n\nLEX: performance\nvec: how to speed up pages");
        assert_eq!(
            searches,
            vec![(SearchType::Lex, "performance".into()), (SearchType::Vec, "how to speed up pages".into())]
        );
        assert_eq!(intent.as_deref(), Some("web perf"));
    }

    /// Found by fuzzing: a multi-byte character where `lex:`'s colon would
    /// be panicked on a char boundary.
    #[test]
    fn short_lines_with_wide_characters_are_plain_text() {
        for input in ["v\u{fffd}\u{fffd}", "le\u{fffd}", "i\u{fffd}", "en\u{fffd}\u{5aa}"] {
            assert_eq!(parse_query_document(input).unwrap(), QueryDocument::Expand(input.to_string()));
        }
    }

    #[test]
    fn qmd_error_texts() {
        assert_eq!(
            error("lex: a\nexpand: b"),
            "Line 2 starts with expand:, but query documents cannot mix expand with typed lines. Submit a single expand query instead."
        );
        assert_eq!(
            error("intent: a\nlex: b\nintent: c"),
            "Line 3: only one intent: line is allowed per query document."
        );
        assert_eq!(error("intent: a"), "intent: cannot appear alone. Add at least one lex:, vec:, or hyde: line.");
        assert_eq!(
            error("lex: a\nplain"),
            "Line 2 is missing a lex:/vec:/hyde:/intent: prefix. Each line in a query document must start with one."
        );
        assert_eq!(error("lex:\nvec: b"), "Line 1 (lex:) must include text.");
        assert_eq!(
            error("lex: \"open"),
            "Line 1 (lex): Lex query has an unmatched double quote (\"). Add the closing quote or remove it."
        );
        assert_eq!(
            error("vec: cats -dogs"),
            "Line 1 (vec): Negation (-term) is not supported in vec/hyde queries. Use lex for exclusions."
        );
    }

    #[test]
    fn negation_only_at_token_boundaries() {
        assert!(has_negation("-dogs"));
        assert!(has_negation("cats -\"big dogs\""));
        assert!(!has_negation("real-time write-ahead"));
        assert!(!has_negation("a - b"));
        let search = TypedSearch { kind: SearchType::Hyde, query: "x\ny".into() };
        assert_eq!(
            validate_search(&search, None).unwrap_err().message,
            "Structured search (hyde): queries must be single-line. Remove newline characters."
        );
    }
}
