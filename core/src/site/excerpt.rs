//! Excerpts for shown results: a window of the page's words around the
//! query's best cluster of matches, with each match's byte range, for the
//! page as a whole and for each heading's section (sub-results).
//!
//! Matching goes through the same analysis as the index, so a highlighted
//! word is exactly a word the query matched (stem and prefix included).

use std::ops::Range;

use crate::analysis::analyze;
use crate::query::lex::parse_lex;
use crate::search::lex::{Bm25Params, LexPlan, TermNeed};

/// A window of text with the byte ranges (into `text`) to highlight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    /// The section's index in the anchors, `None` for the whole page.
    pub anchor: Option<usize>,
    pub text: String,
    pub marks: Vec<Range<usize>>,
    /// Distinct query terms matched in the section.
    pub matched: usize,
}

struct Word {
    range: Range<usize>,
    /// Which query term it matches.
    term: Option<usize>,
}

fn matches(needs: &[TermNeed], term: &str) -> Option<usize> {
    needs.iter().position(|n| n.term == term || (n.prefix && term.starts_with(n.term.as_str())))
}

/// The page excerpt, then up to `max_sections` sub-results (sections that
/// match, most distinct terms first, shown in page order). `anchors_at` are
/// the byte offsets where headed sections start, ascending.
pub fn excerpts(query: &str, text: &str, anchors_at: &[usize], words: usize, max_sections: usize) -> Vec<Excerpt> {
    let needs = LexPlan::new(&parse_lex(query)).highlight_terms(&Bm25Params::default());
    let mut all = Vec::new();
    analyze(text, |t| all.push(Word { range: t.start..t.end, term: matches(&needs, t.term) }));
    let words = words.max(1);

    let mut out = vec![window(None, text, &all, words)];
    let mut sections: Vec<Excerpt> = anchors_at
        .iter()
        .enumerate()
        .filter_map(|(i, &at)| {
            let end = anchors_at.get(i + 1).copied().unwrap_or(text.len());
            let from = all.partition_point(|w| w.range.start < at);
            let to = all.partition_point(|w| w.range.start < end);
            let section = &all[from..to];
            section.iter().any(|w| w.term.is_some()).then(|| window(Some(i), text, section, words))
        })
        .collect();
    sections.sort_by_key(|s| std::cmp::Reverse(s.matched));
    sections.truncate(max_sections);
    sections.sort_by_key(|s| s.anchor);
    out.extend(sections);
    out
}

/// Distinct terms and total matches in `words`.
fn weight(words: &[Word]) -> (usize, usize) {
    let mut seen: Vec<usize> = words.iter().filter_map(|w| w.term).collect();
    let hits = seen.len();
    seen.sort_unstable();
    seen.dedup();
    (seen.len(), hits)
}

/// The best window of `size` words: most distinct terms, then most matches,
/// then earliest.
fn window(anchor: Option<usize>, text: &str, section: &[Word], size: usize) -> Excerpt {
    if section.is_empty() {
        return Excerpt { anchor, text: String::new(), marks: Vec::new(), matched: 0 };
    }
    let mut best = (0usize, weight(&section[..size.min(section.len())]));
    for start in 1..section.len().saturating_sub(size - 1) {
        let w = weight(&section[start..start + size]);
        if w > best.1 {
            best = (start, w);
        }
    }
    // Start the window a few words before the first match, for context.
    let first_hit = section[best.0..].iter().position(|w| w.term.is_some()).map_or(0, |p| p + best.0);
    let start = first_hit.saturating_sub(size / 5).min(best.0.max(first_hit.saturating_sub(size / 5)));
    let shown = &section[start..(start + size).min(section.len())];
    let (from, to) = (shown[0].range.start, shown[shown.len() - 1].range.end);
    let mut excerpt = String::new();
    let lead = if start > 0 { "… " } else { "" };
    excerpt.push_str(lead);
    let offset = lead.len();
    // Newlines and runs of spaces read as one space in a result list.
    let mut marks = Vec::new();
    let mut map = Vec::with_capacity(to - from + 1);
    let mut last_space = false;
    for (i, c) in text[from..to].char_indices() {
        map.resize(i + 1, excerpt.len());
        if c.is_whitespace() {
            if !last_space {
                excerpt.push(' ');
            }
            last_space = true;
        } else {
            excerpt.push(c);
            last_space = false;
        }
    }
    map.resize(to - from + 1, excerpt.len());
    for w in shown.iter().filter(|w| w.term.is_some()) {
        marks.push(map[w.range.start - from].max(offset)..map[w.range.end - from]);
    }
    if start + size < section.len() {
        excerpt.push_str(" …");
    }
    Excerpt { anchor, text: excerpt, marks, matched: weight(shown).0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(e: &Excerpt) -> Vec<&str> {
        e.marks.iter().map(|r| &e.text[r.clone()]).collect()
    }

    #[test]
    fn highlights_stems_and_prefixes_the_query_matched() {
        let text = "Intro words here.\nThe archive tool archives files. Archiving is fast.\nOther things.";
        let e = &excerpts("archive fil", text, &[], 8, 3)[0];
        assert_eq!(marked(e), ["archive", "archives", "files", "Archiving"]);
        assert!(e.text.starts_with("… "), "{}", e.text);
    }

    #[test]
    fn sections_with_matches_become_sub_results_in_page_order() {
        let text = "Top.\nInstall\nrun the installer\nUsage\nnothing here\nRemove\nuninstall or install again";
        let at = [text.find("Install").unwrap(), text.find("Usage").unwrap(), text.find("Remove").unwrap()];
        let all = excerpts("install", text, &at, 6, 5);
        let anchors: Vec<Option<usize>> = all.iter().map(|e| e.anchor).collect();
        assert_eq!(anchors, [None, Some(0), Some(2)]);
        assert_eq!(marked(&all[2]), ["install"], "'uninstall' is another word");
    }

    #[test]
    fn negated_words_are_not_highlighted_and_multibyte_text_is_kept_whole() {
        let text = "café  crème\n\nbrûlée café";
        let e = &excerpts("cafe -creme", text, &[], 10, 3)[0];
        assert_eq!(marked(e), ["café", "café"]);
        assert_eq!(e.text, "café crème brûlée café");
    }
}
