//! qmd's `extractSnippet` (reference §5.8): pick the line that mentions the
//! most query terms and show it with one line before and two after, under a
//! diff-style `@@` header.
//!
//! Positions and lengths (the chunk window, `max_len`) are counted in
//! `char`s. qmd counts JavaScript UTF-16 code units; the two agree except
//! for characters outside the Basic Multilingual Plane (emoji, rare CJK).

use crate::analysis::substring_set::SubstringSet;
use crate::analysis::{is_js_whitespace, is_letter_or_number};

/// Weight of an intent term relative to a query term (1.0).
pub const INTENT_WEIGHT_SNIPPET: f64 = 0.3;

/// Chunk length assumed when a chunk position comes without a length
/// (qmd's `CHUNK_SIZE_CHARS`).
const DEFAULT_CHUNK_CHARS: usize = 3600;

/// Context added on both sides of a known chunk before searching it.
const CHUNK_PADDING_CHARS: usize = 100;

/// Words dropped from intent strings: function words and search noise.
const INTENT_STOP_WORDS: &[&str] = &[
    "am", "an", "as", "at", "be", "by", "do", "he", "if", "in", "is", "it", "me", "my", "no", "of", "on", "or", "so",
    "to", "up", "us", "we", "all", "and", "any", "are", "but", "can", "did", "for", "get", "has", "her", "him", "his",
    "how", "its", "let", "may", "not", "our", "out", "the", "too", "was", "who", "why", "you", "also", "does", "find",
    "from", "have", "into", "more", "need", "show", "some", "tell", "that", "them", "this", "want", "what", "when",
    "will", "with", "your", "about", "looking", "notes", "search", "where", "which",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// Absolute 1-based line of the best match.
    pub line: u32,
    /// The snippet lines, prefixed with the `@@` header line.
    pub text: String,
    /// A query term appears in the chosen line.
    pub matched: bool,
}

/// Builds the snippet of `body` for `query`. `chunk` is `(char position,
/// char length)` of the chunk that matched, if known; a length of 0 means
/// "unknown" and falls back to the maximum chunk size, as in qmd.
pub fn extract_snippet(
    body: &str,
    query: &str,
    max_len: usize,
    chunk: Option<(usize, usize)>,
    intent: Option<&str>,
) -> Snippet {
    let query: Vec<String> =
        query.to_lowercase().split(is_js_whitespace).filter(|t| !t.is_empty()).map(str::to_owned).collect();
    let intent = intent.map(extract_intent_terms).unwrap_or_default();
    let terms = &mut Terms(SubstringSet::new([&query[..], &intent[..]]));
    match chunk {
        Some((pos, len)) => {
            let len = if len == 0 { DEFAULT_CHUNK_CHARS } else { len };
            chunk_snippet(body, terms, max_len, pos, len)
        }
        None => body_snippet(body, terms, max_len),
    }
}

/// Lowercased query terms (weight 1.0) and intent terms (weight 0.3).
struct Terms(SubstringSet<2>);

impl Terms {
    /// The query terms a lowercased line holds, plus its intent terms at
    /// their weight.
    fn score(&mut self, lower: &str) -> f64 {
        let [query, intent] = self.0.count_in(lower);
        f64::from(query) + f64::from(intent) * INTENT_WEIGHT_SNIPPET
    }

    fn has_query_term(&mut self, lower: &str) -> bool {
        self.0.count_in(lower)[0] > 0
    }
}

fn body_snippet(body: &str, terms: &mut Terms, max_len: usize) -> Snippet {
    let lines: Vec<&str> = body.split('\n').collect();
    let (best, _) = best_line(&lines, terms);
    render(&lines, best, 0, count_lines(body), terms, max_len)
}

/// Searches the padded chunk window first; qmd's fallbacks apply when the
/// window has no scoring line or yields only blank lines.
fn chunk_snippet(body: &str, terms: &mut Terms, max_len: usize, pos: usize, len: usize) -> Snippet {
    let body_chars = body.chars().count();
    let ctx_start = pos.saturating_sub(CHUNK_PADDING_CHARS).min(body_chars);
    let ctx_end = pos.saturating_add(len).saturating_add(CHUNK_PADDING_CHARS).min(body_chars).max(ctx_start);
    let window = char_slice(body, ctx_start, ctx_end);
    let line_offset = char_slice(body, 0, ctx_start).matches('\n').count();
    let lines: Vec<&str> = window.split('\n').collect();
    let (mut best, score) = best_line(&lines, terms);
    if score <= 0.0 {
        if pos == 0 {
            // Position 0 may just be the chunk selector's default: use the
            // whole body so a real match elsewhere is not missed.
            return body_snippet(body, terms, max_len);
        }
        // The chunk was picked on other grounds (semantic hit, reranker):
        // anchor on the chunk's first line.
        best = char_slice(window, 0, pos - ctx_start).matches('\n').count();
    }
    let (start, end) = snippet_range(best, lines.len());
    if pos > 0 && lines[start..end].iter().all(|l| l.chars().all(is_js_whitespace)) {
        return body_snippet(body, terms, max_len);
    }
    render(&lines, best, line_offset, count_lines(body), terms, max_len)
}

/// Index of the first line with the highest score, and that score.
fn best_line(lines: &[&str], terms: &mut Terms) -> (usize, f64) {
    let mut best = (0, -1.0);
    for (i, line) in lines.iter().enumerate() {
        let score = terms.score(&line.to_lowercase());
        if score > best.1 {
            best = (i, score);
        }
    }
    best
}

/// Lines `[best - 1, best + 3)`, clipped to the available lines.
fn snippet_range(best: usize, n_lines: usize) -> (usize, usize) {
    (best.saturating_sub(1), (best + 3).min(n_lines))
}

/// Formats the snippet around `best` (an index into `lines`, which start at
/// absolute line `line_offset + 1` of a body with `total_lines` lines).
fn render(
    lines: &[&str],
    best: usize,
    line_offset: usize,
    total_lines: usize,
    terms: &mut Terms,
    max_len: usize,
) -> Snippet {
    let (start, end) = snippet_range(best, lines.len());
    let mut text = lines[start..end].join("\n");
    if text.chars().count() > max_len {
        let cut = text.char_indices().nth(max_len.saturating_sub(3)).map_or(text.len(), |(i, _)| i);
        text.truncate(cut);
        text.push_str("...");
    }
    let count = end - start;
    let abs_start = line_offset + start + 1;
    let before = abs_start - 1;
    let after = total_lines.saturating_sub(abs_start + count - 1);
    Snippet {
        line: u32::try_from(line_offset + best + 1).unwrap_or(u32::MAX),
        text: format!("@@ -{abs_start},{count} @@ ({before} before, {after} after)\n{text}"),
        matched: terms.has_query_term(&lines[best].to_lowercase()),
    }
}

/// qmd's `extractIntentTerms`: lowercase, split on whitespace, trim
/// non-alphanumerics at both ends, keep terms longer than one UTF-16 unit
/// that are not stop words.
pub fn extract_intent_terms(intent: &str) -> Vec<String> {
    intent
        .to_lowercase()
        .split(is_js_whitespace)
        .map(|t| t.trim_matches(|c: char| !is_letter_or_number(c)))
        .filter(|t| t.encode_utf16().count() > 1 && !INTENT_STOP_WORDS.contains(t))
        .map(str::to_owned)
        .collect()
}

/// Number of lines as `body.split('\n').length` counts them.
fn count_lines(body: &str) -> usize {
    body.matches('\n').count() + 1
}

/// `s[from..to]` in chars, clamped to `s`.
fn char_slice(s: &str, from: usize, to: usize) -> &str {
    let byte_at = |n: usize| s.char_indices().nth(n).map_or(s.len(), |(i, _)| i);
    let start = byte_at(from);
    let end = byte_at(to).max(start);
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "# Title\nintro line\nsetup steps\nthe deploy script runs\nafter deploy\nmore text\nlast line";

    #[test]
    fn best_line_in_the_middle() {
        let s = extract_snippet(BODY, "deploy script", 500, None, None);
        assert_eq!(s.line, 4);
        assert!(s.matched);
        assert_eq!(
            s.text,
            "@@ -3,4 @@ (2 before, 1 after)\nsetup steps\nthe deploy script runs\nafter deploy\nmore text"
        );
    }

    #[test]
    fn first_max_wins_and_matching_is_case_insensitive_substring() {
        // "deploy" alone scores 1 on lines 4 and 5; the first one wins.
        let s = extract_snippet(BODY, "DEPLOY", 500, None, None);
        assert_eq!(s.line, 4);
        // Substring: "ep" is inside "deploy" and "steps".
        let s = extract_snippet(BODY, "ep", 500, None, None);
        assert_eq!(s.line, 3);
    }

    #[test]
    fn first_line() {
        let s = extract_snippet(BODY, "title", 500, None, None);
        assert_eq!(s.line, 1);
        assert_eq!(s.text, "@@ -1,3 @@ (0 before, 4 after)\n# Title\nintro line\nsetup steps");
    }

    #[test]
    fn last_line() {
        let s = extract_snippet(BODY, "last", 500, None, None);
        assert_eq!(s.line, 7);
        assert_eq!(s.text, "@@ -6,2 @@ (5 before, 0 after)\nmore text\nlast line");
    }

    #[test]
    fn no_match_falls_on_line_one() {
        let s = extract_snippet(BODY, "zebra", 500, None, None);
        assert_eq!(s.line, 1);
        assert!(!s.matched);
        assert!(s.text.starts_with("@@ -1,3 @@ (0 before, 4 after)\n# Title"));
        // An empty query behaves the same.
        assert_eq!(extract_snippet(BODY, "   ", 500, None, None).line, 1);
    }

    #[test]
    fn intent_terms_weigh_less_but_break_ties() {
        let body = "alpha one\nalpha two kubernetes\nbeta";
        assert_eq!(extract_snippet(body, "alpha", 500, None, None).line, 1);
        let s = extract_snippet(body, "alpha", 500, None, Some("Kubernetes deployment"));
        assert_eq!(s.line, 2);
        assert!(s.matched);
        // Intent alone (0.3) never beats one query hit (1.0).
        let body = "kubernetes cluster pods\nalpha";
        assert_eq!(extract_snippet(body, "alpha", 500, None, Some("kubernetes cluster pods")).line, 2);
        // Intent can pick a line even when the query matches nowhere.
        let s = extract_snippet(body, "zebra", 500, None, Some("pods"));
        assert_eq!(s.line, 1);
        assert!(!s.matched);
    }

    #[test]
    fn intent_terms_filtering() {
        assert_eq!(
            extract_intent_terms("  Looking for the (API) notes, about SQL-injection; a C b2 "),
            ["api", "sql-injection", "b2"]
        );
        // Stop words only: no terms, so no effect.
        assert!(extract_intent_terms("what is this about").is_empty());
    }

    #[test]
    fn long_lines_are_truncated() {
        let body = format!("short\n{} needle\nend", "x".repeat(100));
        let s = extract_snippet(&body, "needle", 20, None, None);
        assert_eq!(s.line, 2);
        assert_eq!(s.text, "@@ -1,3 @@ (0 before, 0 after)\nshort\nxxxxxxxxxxx...");
        assert_eq!(s.text.lines().nth(1).map(str::len), Some(5));
        // Exactly max_len is kept whole.
        let s = extract_snippet("abcde", "abc", 5, None, None);
        assert!(s.text.ends_with("\nabcde"));
        // Tiny max_len never panics.
        assert!(extract_snippet("abcdef", "abc", 1, None, None).text.ends_with("\n..."));
    }

    #[test]
    fn multibyte_text_truncates_on_char_boundaries() {
        let body = "前置き\n日本語のテキスト検索エンジン\n終わり";
        let s = extract_snippet(body, "検索", 10, None, None);
        assert_eq!(s.line, 2);
        assert_eq!(s.text, "@@ -1,3 @@ (0 before, 0 after)\n前置き\n日本語...");
        let s = extract_snippet("ÉCOLE été\nautre", "école", 500, None, None);
        assert_eq!(s.line, 1);
        assert!(s.matched);
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i:02}")).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn chunk_window_limits_the_search() {
        // 30 lines of 7 chars + '\n' = 8 chars each; line k starts at 8*(k-1).
        let mut lines: Vec<String> = (1..=30).map(|i| format!("line {i:02}")).collect();
        lines[2] = "match 1".into(); // line 3
        lines[20] = "match 2".into(); // line 21
        let body = lines.join("\n");
        // Chunk at line 20 (pos 152), 40 chars: the window is chars 52..239,
        // from the middle of line 7 to the end.
        let s = extract_snippet(&body, "match", 500, Some((152, 40)), None);
        assert_eq!(s.line, 21);
        assert_eq!(s.text, "@@ -20,4 @@ (19 before, 7 after)\nline 20\nmatch 2\nline 22\nline 23");
        // Without a chunk the first match wins.
        assert_eq!(extract_snippet(&body, "match", 500, None, None).line, 3);
    }

    #[test]
    fn chunk_without_match_anchors_on_chunk_start() {
        let body = numbered(30);
        // Chunk starts at line 21 (pos 160).
        let s = extract_snippet(&body, "zebra", 500, Some((160, 40)), None);
        assert_eq!(s.line, 21);
        assert!(!s.matched);
        assert!(s.text.starts_with("@@ -20,4 @@ (19 before, 7 after)\nline 20\nline 21"));
    }

    #[test]
    fn chunk_at_zero_without_match_retries_whole_body() {
        // The window [0, 140) holds lines 1..=18; the match is on line 25.
        let mut lines: Vec<String> = (1..=30).map(|i| format!("line {i:02}")).collect();
        lines[24] = "needle!".into();
        let body = lines.join("\n");
        let s = extract_snippet(&body, "needle", 500, Some((0, 40)), None);
        assert_eq!(s.line, 25);
        assert!(s.matched);
    }

    #[test]
    fn blank_chunk_window_falls_back_to_whole_body() {
        let body = format!("needle here\n{}", "\n".repeat(400));
        let s = extract_snippet(&body, "zebra", 500, Some((300, 10)), None);
        assert_eq!(s.line, 1);
        assert!(s.text.starts_with("@@ -1,3 @@ (0 before, 399 after)\nneedle here"));
        // A chunk past the end of the body behaves the same way.
        assert_eq!(extract_snippet("a\nb", "zebra", 500, Some((500, 10)), None).line, 1);
    }

    #[test]
    fn zero_chunk_len_means_default_chunk_size() {
        let body = format!("{}needle", "x\n".repeat(2000));
        // pos 500: default 3600-char window covers the needle at char 4000.
        let s = extract_snippet(&body, "needle", 500, Some((500, 0)), None);
        assert_eq!(s.line, 2001);
        // An explicit short length does not reach it: anchors at the chunk.
        let s = extract_snippet(&body, "needle", 500, Some((500, 10)), None);
        assert_eq!(s.line, 251);
    }

    /// The line scan is one pass whatever the query's length: 1,200
    /// distinct terms over a 3 MB note of short lines cost about what one
    /// term does (asked one term at a time, 60 times more).
    #[test]
    fn long_queries_over_long_notes_cost_one_pass() {
        let words = crate::analysis::made_up_words(1200);
        let lines = format!("{}\n", words[..10].join("\n")).repeat(45_000);
        let body = format!("{lines}the {} and {} here\n", words[1199], words[600]);
        assert!(body.len() > 3_000_000);
        let timed = |query: &str| {
            let started = std::time::Instant::now();
            (extract_snippet(&body, query, 500, None, None).line, started.elapsed())
        };
        let (one, one_took) = timed(&words[3]);
        let (all, all_took) = timed(&words.join(" "));
        assert_eq!((one, all), (4, 450_001), "the first line with the term; the line with two terms");
        let bound = one_took * 10 + std::time::Duration::from_millis(200);
        assert!(all_took < bound, "1,200 terms took {all_took:?}, one term {one_took:?}");
    }
}
