//! Excerpts for shown results: a window of the page's words around the
//! query's best cluster of matches, with each match's byte range, for the
//! page as a whole and for each heading's section (sub-results).
//!
//! Matching goes through the same analysis as the index, so a highlighted
//! word is exactly a word the query matched (stem and prefix included).

use std::collections::HashMap;
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

/// Which query term a word matches: the first need that equals it or, for
/// a prefix need, starts it. Exact needs are looked up, prefix needs by the
/// word's own prefixes, so a word costs its length, not the query's terms.
struct Needs<'a> {
    exact: HashMap<&'a str, usize>,
    prefixes: HashMap<&'a str, usize>,
    longest_prefix: usize,
}

impl<'a> Needs<'a> {
    fn new(needs: &'a [TermNeed]) -> Self {
        let (mut exact, mut prefixes) = (HashMap::new(), HashMap::new());
        for (i, need) in needs.iter().enumerate() {
            exact.entry(need.term.as_str()).or_insert(i);
            if need.prefix {
                prefixes.entry(need.term.as_str()).or_insert(i);
            }
        }
        let longest_prefix = prefixes.keys().map(|p| p.len()).max().unwrap_or(0);
        Needs { exact, prefixes, longest_prefix }
    }

    fn matching(&self, term: &str) -> Option<usize> {
        let ends = std::iter::once(0).chain(term.char_indices().map(|(i, c)| i + c.len_utf8()));
        ends.take_while(|&end| end <= self.longest_prefix)
            .filter_map(|end| self.prefixes.get(&term[..end]).copied())
            .chain(self.exact.get(term).copied())
            .min()
    }
}

/// The page excerpt, then up to `max_sections` sub-results (sections that
/// match, most distinct terms first, shown in page order). `anchors_at` are
/// the byte offsets where headed sections start, ascending.
pub fn excerpts(query: &str, text: &str, anchors_at: &[usize], words: usize, max_sections: usize) -> Vec<Excerpt> {
    let needs = LexPlan::new(&parse_lex(query)).highlight_terms(&Bm25Params::default());
    let matcher = Needs::new(&needs);
    let mut all = Vec::new();
    analyze(text, |t| all.push(Word { range: t.start..t.end, term: matcher.matching(t.term) }));
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
    let mut counts = WindowCounts::new(words);
    words.iter().for_each(|w| counts.add(w.term));
    counts.weight()
}

/// [`weight`] of a sliding window, kept as words enter and leave it.
struct WindowCounts {
    per_term: Vec<usize>,
    distinct: usize,
    hits: usize,
}

impl WindowCounts {
    fn new(section: &[Word]) -> Self {
        let terms = section.iter().filter_map(|w| w.term).max().map_or(0, |t| t + 1);
        WindowCounts { per_term: vec![0; terms], distinct: 0, hits: 0 }
    }

    fn add(&mut self, term: Option<usize>) {
        if let Some(t) = term {
            self.per_term[t] += 1;
            self.hits += 1;
            self.distinct += usize::from(self.per_term[t] == 1);
        }
    }

    fn remove(&mut self, term: Option<usize>) {
        if let Some(t) = term {
            self.per_term[t] -= 1;
            self.hits -= 1;
            self.distinct -= usize::from(self.per_term[t] == 0);
        }
    }

    fn weight(&self) -> (usize, usize) {
        (self.distinct, self.hits)
    }
}

/// The best window of `size` words: most distinct terms, then most matches,
/// then earliest.
fn window(anchor: Option<usize>, text: &str, section: &[Word], size: usize) -> Excerpt {
    if section.is_empty() {
        return Excerpt { anchor, text: String::new(), marks: Vec::new(), matched: 0 };
    }
    // Slide the window a word at a time, keeping its counts.
    let mut counts = WindowCounts::new(section);
    section[..size.min(section.len())].iter().for_each(|w| counts.add(w.term));
    let mut best = (0usize, counts.weight());
    for start in 1..section.len().saturating_sub(size - 1) {
        counts.remove(section[start - 1].term);
        counts.add(section[start + size - 1].term);
        if counts.weight() > best.1 {
            best = (start, counts.weight());
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

    /// Words are matched by lookup and the window slides: 1,200 query
    /// terms over a 6 MB page cost about what one term does (asking each
    /// term of each word was words × terms: 25 times more).
    #[test]
    fn long_queries_over_long_pages_cost_one_pass() {
        let words = crate::analysis::made_up_words(2400);
        let (asked, other) = words.split_at(1200);
        let text = format!("{} {}", asked[..100].join(" "), format!("{} ", other.join(" ")).repeat(800));
        assert!(text.len() > 6_000_000);
        let timed = |query: &str| {
            let started = std::time::Instant::now();
            (excerpts(query, &text, &[], 30, 3).remove(0).matched, started.elapsed())
        };
        let (one, one_took) = timed(&asked[0]);
        let (all, all_took) = timed(&format!("{} {}*", asked.join(" "), &asked[7][..4]));
        assert_eq!((one, all), (1, 30), "the first 30 words each match a term");
        let bound = one_took * 10 + std::time::Duration::from_millis(200);
        assert!(all_took < bound, "1,200 terms took {all_took:?}, one term {one_took:?}");
    }
}
