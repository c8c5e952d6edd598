//! A generation model's query expansion read as qmd 2.8.3 reads it
//! (`LlamaCpp.expandQuery` and `store.expandQuery`): the output's lines
//! `type: text` with `type` one of `lex`, `vec`, `hyde` (exactly, after
//! trimming), kept only when the text shares a term with the query (the
//! query lower-cased, every character but `a-z`, `0-9` and white space
//! made a space, split on white space; a query without such terms keeps
//! every line), then stripped of texts equal to the query itself.

use crate::api::{SearchType, TypedSearch};
use crate::document::content_hash;
use crate::query::document::{type_name, type_named};

/// The searches in a model's `output` for `query`; `lexical` false drops
/// the `lex` lines (`vsearch` runs only vector searches). With no valid
/// line, qmd's fallback `hyde: Information about {query}`; lines that are
/// the query itself are dropped, so the list may be empty (qmd then runs
/// the query alone and caches nothing).
pub fn parse_expansion(output: &str, query: &str, lexical: bool) -> Vec<TypedSearch> {
    let terms = query_terms(query);
    let shares_a_term = |text: &str| {
        let lower = text.to_lowercase();
        terms.is_empty() || terms.iter().any(|t| lower.contains(t.as_str()))
    };
    let parsed: Vec<TypedSearch> = output
        .trim()
        .split('\n')
        .filter_map(|line| {
            let (kind, text) = line.split_once(':')?;
            let kind = type_named(kind.trim())?;
            let text = text.trim();
            shares_a_term(text).then(|| TypedSearch { kind, query: text.to_string() })
        })
        .filter(|s| lexical || s.kind != SearchType::Lex)
        .collect();
    // qmd falls back to `hyde: Information about {query}` (plus the query
    // itself as lex and vec, which the next step drops) when no line is left.
    let searches = if parsed.is_empty() {
        vec![TypedSearch { kind: SearchType::Hyde, query: format!("Information about {query}") }]
    } else {
        parsed
    };
    searches.into_iter().filter(|s| s.query != query).collect()
}

/// The query's terms as qmd matches them against expansion lines.
fn query_terms(query: &str) -> Vec<String> {
    let kept: String = query
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c.is_whitespace() { c } else { ' ' })
        .collect();
    kept.split_whitespace().map(str::to_string).collect()
}

/// A cached expansion's name: qmd's `llm_cache` key for `expandQuery`,
/// sha256 of `expandQuery` and `{"query":…,"model":…}`, in hex.
pub fn cache_key(query: &str, model: &str) -> String {
    let body = serde_json::json!({ "query": query, "model": model });
    content_hash(format!("expandQuery{body}").as_bytes())
}

/// A cache entry: the query and model it was made for, and the searches
/// in qmd's stored shape (`[{"type": "lex", "query": …}]`).
pub fn encode_cached(query: &str, model: &str, searches: &[TypedSearch]) -> Vec<u8> {
    let searches: Vec<serde_json::Value> =
        searches.iter().map(|s| serde_json::json!({ "type": type_name(s.kind), "query": s.query })).collect();
    serde_json::to_vec(&serde_json::json!({ "query": query, "model": model, "searches": searches }))
        .expect("JSON values serialize")
}

/// The searches of a cache entry if it is whole and was made for this
/// query and model. Anything else (a file cut short, bytes of another
/// entry, a type or text no expansion could have) is a miss, so a damaged
/// cache costs one generation and never a wrong or failed query.
pub fn decode_cached(bytes: &[u8], query: &str, model: &str) -> Option<Vec<TypedSearch>> {
    let entry: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if entry.get("query")?.as_str()? != query || entry.get("model")?.as_str()? != model {
        return None;
    }
    let searches = entry.get("searches")?.as_array()?;
    let parsed = searches
        .iter()
        .map(|s| {
            let kind = type_named(s.get("type")?.as_str()?)?;
            let text = s.get("query")?.as_str()?;
            let plausible = !text.trim().is_empty() && !text.contains('\n') && text != query;
            plausible.then(|| TypedSearch { kind, query: text.to_string() })
        })
        .collect::<Option<Vec<TypedSearch>>>()?;
    (!parsed.is_empty()).then_some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn searches(output: &str, query: &str, lexical: bool) -> Vec<(SearchType, String)> {
        parse_expansion(output, query, lexical).into_iter().map(|s| (s.kind, s.query)).collect()
    }

    /// Recorded generations (the shape of qmd's fine-tune's outputs) read
    /// by qmd's rules.
    #[test]
    fn lines_are_kept_by_qmds_rules() {
        let query = "rotate API keys";
        let output = "\n lex: rotate api keys\nvec: how do I rotate API keys safely\nhyde: Use: new keys first\n\
                      lex: rotate API keys\nlex: credential rotation\nVec: api rotation\n vec : keys vault\n\
                      hyde api keys\nlexical: api\n";
        let want = [
            (SearchType::Lex, "rotate api keys"),
            (SearchType::Vec, "how do I rotate API keys safely"),
            // The first colon ends the type.
            (SearchType::Hyde, "Use: new keys first"),
            // `lex: rotate API keys` is the query itself; `credential
            // rotation` shares no term ("rotation" does not hold
            // "rotate"); `Vec` is not a type; the type is trimmed; a line
            // without a colon and an unknown type are dropped.
            (SearchType::Vec, "keys vault"),
        ];
        let want: Vec<(SearchType, String)> = want.iter().map(|(k, t)| (*k, t.to_string())).collect();
        assert_eq!(searches(output, query, true), want);
        // vsearch: vector searches only.
        let vector_only: Vec<_> = want.into_iter().filter(|(k, _)| *k != SearchType::Lex).collect();
        assert_eq!(searches(output, query, false), vector_only);
    }

    #[test]
    fn nothing_valid_falls_back_to_a_hypothetical_document() {
        let hyde = |q: &str| vec![(SearchType::Hyde, format!("Information about {q}"))];
        assert_eq!(searches("lex: unrelated words\n", "rotate keys", true), hyde("rotate keys"));
        assert_eq!(searches("", "rotate keys", true), hyde("rotate keys"));
        // Lines that only repeat the query leave nothing either, and then
        // not even the fallback: qmd's store drops texts equal to the query
        // after the fallback was chosen.
        assert_eq!(searches("lex: rotate keys\nvec: rotate keys\n", "rotate keys", true), vec![]);
    }

    /// Terms are ASCII letters and digits: punctuation splits them, and a
    /// query with none keeps every line.
    #[test]
    fn query_terms_are_ascii_words() {
        assert_eq!(query_terms("C++ build, v2.0?"), ["c", "build", "v2", "0"]);
        assert_eq!(query_terms("Caf\u{e9} \u{65e5}\u{672c}"), ["caf"]);
        let kept = searches("vec: \u{6771}\u{4eac}\nlex: anything\n", "\u{65e5}\u{672c}", true);
        assert_eq!(kept.len(), 2, "{kept:?}");
    }

    #[test]
    fn cache_entries_hit_only_their_query_and_model() {
        let searches = parse_expansion("lex: rotate keys safely\nhyde: Keys rotate yearly.\n", "rotate keys", true);
        let bytes = encode_cached("rotate keys", "m.gguf", &searches);
        assert_eq!(decode_cached(&bytes, "rotate keys", "m.gguf"), Some(searches));
        assert_eq!(decode_cached(&bytes, "rotate keys ", "m.gguf"), None);
        assert_eq!(decode_cached(&bytes, "rotate keys", "other.gguf"), None);
        assert_ne!(cache_key("rotate keys", "m.gguf"), cache_key("rotate keys", "other.gguf"));
        assert_eq!(cache_key("q", "m").len(), 64);
    }

    /// Every damage a file can take reads as a miss, never as searches.
    #[test]
    fn damaged_cache_entries_are_misses() {
        let good = encode_cached("q x", "m", &[TypedSearch { kind: SearchType::Lex, query: "x y".into() }]);
        for cut in 0..good.len() {
            assert_eq!(decode_cached(&good[..cut], "q x", "m"), None, "cut at {cut}");
        }
        let damaged = [
            r#"{"query":"q x","model":"m","searches":[]}"#,
            r#"{"query":"q x","model":"m","searches":[{"type":"lexx","query":"x"}]}"#,
            r#"{"query":"q x","model":"m","searches":[{"type":"lex","query":""}]}"#,
            r#"{"query":"q x","model":"m","searches":[{"type":"lex","query":"a\nb"}]}"#,
            r#"{"query":"q x","model":"m","searches":[{"type":"lex","query":"q x"}]}"#,
            r#"{"query":"q x","model":"m","searches":{"type":"lex"}}"#,
            r#"{"query":"q x","model":"m"}"#,
            r#"[{"type":"lex","query":"x"}]"#,
            "\u{0}\u{0}\u{0}",
        ];
        for bytes in damaged {
            assert_eq!(decode_cached(bytes.as_bytes(), "q x", "m"), None, "{bytes}");
        }
    }
}
