//! BM25 over the index, with FTS5's shape: one score per query unit (term,
//! prefix term or phrase) from its weighted frequency over the fields
//! path/title/body (weights 1.5/4.0/1.0) and the document's total length.
//!
//! Unlike qmd (which ANDs every term), plain terms are OR-ed: a document
//! needs one of them, and BM25 puts documents with more of them first.
//! Phrases (quoted, hyphenated, dotted parts) are required; negations exclude.

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use crate::index::segment::{FIELDS, FieldPositions, Posting, SegmentReader};
use crate::index::{DocAddress, Index};
use crate::query::lex::{ClauseKind, LexQuery};

/// Column weights of qmd's `bm25(documents_fts, 1.5, 4.0, 1.0)`.
pub const FIELD_WEIGHTS: [f32; FIELDS] = [1.5, 4.0, 1.0];

/// Tunables of the lexical ranker.
#[derive(Clone, Debug)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
    /// Weight of an occurrence matched only through prefix expansion
    /// (`perf` → `performance`), relative to an exact term match.
    pub prefix_weight: f32,
    /// Shorter query terms match exactly only: a two-letter prefix would
    /// match half the vocabulary.
    pub min_prefix_len: usize,
    /// At most this many expansions per term (the most frequent ones).
    pub max_expansions: usize,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75, prefix_weight: 0.5, min_prefix_len: 3, max_expansions: 64 }
    }
}

/// One lexical hit. `score` is qmd's normalised `|x| / (1 + |x|)`.
#[derive(Clone, Debug)]
pub struct LexHit {
    pub address: DocAddress,
    pub score: f64,
}

/// A scoring unit's matches in one source: doc → weighted frequency.
pub type Matches = HashMap<u32, f32>;

/// Where lexical matching reads terms from: an index segment, or the term
/// shards a static site's page has loaded.
pub trait TermSource {
    /// Postings of `term`, if it occurs.
    fn term_postings(&self, term: &str) -> Result<Option<Vec<Posting>>>;
    /// Postings of `term` with their positions, if it occurs.
    fn term_positions(&self, term: &str) -> Result<Option<(Vec<Posting>, Vec<FieldPositions>)>>;
    /// Every term starting with `prefix`, in term order, with its df.
    fn prefix_terms(&self, prefix: &str) -> Result<Vec<(String, u32)>>;
}

impl TermSource for SegmentReader {
    fn term_postings(&self, term: &str) -> Result<Option<Vec<Posting>>> {
        self.term(term)?.map(|info| self.postings(&info)).transpose()
    }

    fn term_positions(&self, term: &str) -> Result<Option<(Vec<Posting>, Vec<FieldPositions>)>> {
        let Some(info) = self.term(term)? else { return Ok(None) };
        let postings = self.postings(&info)?;
        let positions = self.positions(&info, &postings)?;
        Ok(Some((postings, positions)))
    }

    fn prefix_terms(&self, prefix: &str) -> Result<Vec<(String, u32)>> {
        Ok(self.terms_with_prefix(prefix)?.into_iter().map(|(t, info)| (t, info.df)).collect())
    }
}

/// One scoring unit of a query; `required` units must match.
#[derive(Clone, Debug)]
pub struct Unit {
    pub kind: ClauseKind,
    pub required: bool,
    /// How many times the query names it: scored that many times (as
    /// FTS5 scores each phrase of a query), matched once.
    pub count: u32,
}

/// The units with repeats merged into one, counted, in first-use order:
/// a 10,000-character query of one word read its postings 2,400 times
/// (8.7 s over 38k pages, 1.3 GB as a phrase).
fn merged(units: impl IntoIterator<Item = (ClauseKind, bool)>) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    let mut at: HashMap<(ClauseKind, bool), usize> = HashMap::new();
    for (kind, required) in units {
        match at.entry((kind, required)) {
            std::collections::hash_map::Entry::Occupied(e) => out[*e.get()].count += 1,
            std::collections::hash_map::Entry::Vacant(e) => {
                out.push(Unit { kind: e.key().0.clone(), required, count: 1 });
                e.insert(out.len() - 1);
            }
        }
    }
    out
}

/// What a lex query scores and excludes, independent of any index.
#[derive(Clone, Debug, Default)]
pub struct LexPlan {
    pub units: Vec<Unit>,
    pub negated: Vec<ClauseKind>,
}

/// A term a plan reads, for readers that load terms on demand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermNeed {
    pub term: String,
    /// Every term starting with `term` is read too.
    pub prefix: bool,
    /// The term's positions are read (phrases).
    pub positions: bool,
}

impl LexPlan {
    pub fn new(query: &LexQuery) -> Self {
        // Compound words score as their parts (optional prefix terms).
        let positive = || query.clauses.iter().filter(|c| !c.negated);
        let parts = positive().flat_map(|c| match &c.kind {
            ClauseKind::Compound(terms) => terms
                .iter()
                .map(|t| (ClauseKind::Term { word: t.clone(), stemmed: t.clone(), prefix: true }, false))
                .collect(),
            _ => Vec::new(),
        });
        let others = positive().flat_map(|clause| match &clause.kind {
            ClauseKind::Compound(_) => Vec::new(),
            ClauseKind::AllOf(parts) => parts.iter().map(|kind| (kind.clone(), true)).collect(),
            kind @ ClauseKind::Phrase(terms) => vec![(kind.clone(), terms.len() > 1)],
            kind => vec![(kind.clone(), false)],
        });
        let units = merged(parts.chain(others));
        let mut negated: Vec<ClauseKind> = Vec::new();
        for clause in query.clauses.iter().filter(|c| c.negated) {
            if !negated.contains(&clause.kind) {
                negated.push(clause.kind.clone());
            }
        }
        LexPlan { units, negated }
    }

    /// Whether the plan can match anything (FTS5's NOT is binary).
    pub fn has_positive(&self) -> bool {
        !self.units.is_empty()
    }

    /// Every term the plan reads, in first-use order, without repeats.
    pub fn terms(&self, params: &Bm25Params) -> Vec<TermNeed> {
        Self::collect_terms(self.units.iter().map(|u| &u.kind).chain(&self.negated), params)
    }

    /// The terms of the positive units: what a match shown to a user is.
    pub fn highlight_terms(&self, params: &Bm25Params) -> Vec<TermNeed> {
        Self::collect_terms(self.units.iter().map(|u| &u.kind), params)
    }

    fn collect_terms<'a>(kinds: impl Iterator<Item = &'a ClauseKind>, params: &Bm25Params) -> Vec<TermNeed> {
        let mut out: Vec<TermNeed> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut add = |term: &str, prefix: bool, positions: bool| match at.get(term) {
            Some(&i) => {
                out[i].prefix |= prefix;
                out[i].positions |= positions;
            }
            None => {
                at.insert(term.to_string(), out.len());
                out.push(TermNeed { term: term.to_string(), prefix, positions });
            }
        };
        fn walk(kind: &ClauseKind, params: &Bm25Params, add: &mut dyn FnMut(&str, bool, bool)) {
            match kind {
                ClauseKind::Term { stemmed, prefix, .. } => {
                    add(stemmed, *prefix && stemmed.chars().count() >= params.min_prefix_len, false)
                }
                ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) => {
                    terms.iter().for_each(|t| add(t, false, terms.len() > 1))
                }
                ClauseKind::AllOf(parts) => parts.iter().for_each(|p| walk(p, params, add)),
            }
        }
        for kind in kinds {
            walk(kind, params, &mut add);
        }
        out
    }

    /// Matches of each unit in `source` (aligned with `units`) and the
    /// documents the negated clauses exclude.
    pub fn matches(&self, source: &dyn TermSource, params: &Bm25Params) -> Result<(Vec<Matches>, HashSet<u32>)> {
        let lists = self.units.iter().map(|u| unit_matches(source, &u.kind, params)).collect::<Result<Vec<_>>>()?;
        let mut excluded = HashSet::new();
        for kind in &self.negated {
            excluded.extend(unit_matches(source, kind, params)?.into_keys());
        }
        Ok((lists, excluded))
    }

    /// Whether `doc` satisfies every required unit.
    pub fn admits(&self, lists: &[Matches], doc: u32) -> bool {
        !self.units.iter().zip(lists).any(|(u, l)| u.required && !l.contains_key(&doc))
    }
}

/// BM25 statistics of the whole collection: documents, average length and
/// each unit's idf from its document frequency.
pub struct Bm25Stats {
    idf: Vec<f32>,
    avgdl: f32,
}

impl Bm25Stats {
    /// From each unit's document frequency (aligned with `plan`'s units);
    /// a unit the query names `count` times weighs that many times.
    pub fn new(plan: &LexPlan, df: &[u64], docs: u64, tokens: u64) -> Self {
        let n = docs.max(1) as f32;
        let avgdl = (tokens as f32 / n).max(1.0);
        let idf = df
            .iter()
            .zip(&plan.units)
            .map(|(&d, unit)| unit.count as f32 * (1.0 + (n - d as f32 + 0.5) / (d as f32 + 0.5)).ln())
            .collect();
        Bm25Stats { idf, avgdl }
    }

    /// The raw BM25 score of `doc` (of length `doc_len`) over the units' matches.
    pub fn score(&self, lists: &[Matches], doc: u32, doc_len: u32, params: &Bm25Params) -> f32 {
        let norm = params.k1 * (1.0 - params.b + params.b * doc_len as f32 / self.avgdl);
        lists
            .iter()
            .zip(&self.idf)
            .filter_map(|(l, idf)| l.get(&doc).map(|&f| idf * f * (params.k1 + 1.0) / (f + norm)))
            .sum()
    }
}

/// qmd's normalisation of a raw BM25 score into [0, 1): `|x| / (1 + |x|)`.
pub fn normalize_score(raw: f32) -> f64 {
    let x = f64::from(raw);
    x / (1.0 + x)
}

fn weighted(tfs: &[u32; FIELDS]) -> f32 {
    tfs.iter().zip(FIELD_WEIGHTS).map(|(&tf, w)| tf as f32 * w).sum()
}

/// Exact + prefix matches of one term.
fn term_matches(source: &dyn TermSource, stemmed: &str, prefix: bool, params: &Bm25Params) -> Result<Matches> {
    let mut out = Matches::new();
    if let Some(postings) = source.term_postings(stemmed)? {
        for (doc, tfs) in postings {
            out.insert(doc, weighted(&tfs));
        }
    }
    if prefix && stemmed.chars().count() >= params.min_prefix_len {
        let mut expansions: Vec<(String, u32)> =
            source.prefix_terms(stemmed)?.into_iter().filter(|(t, _)| t != stemmed).collect();
        expansions.sort_by_key(|e| std::cmp::Reverse(e.1));
        for (term, _) in expansions.iter().take(params.max_expansions) {
            for (doc, tfs) in source.term_postings(term)?.unwrap_or_default() {
                *out.entry(doc).or_default() += params.prefix_weight * weighted(&tfs);
            }
        }
    }
    Ok(out)
}

/// Occurrences of a phrase (consecutive positions within one field).
fn phrase_matches(source: &dyn TermSource, terms: &[String]) -> Result<Matches> {
    // Each distinct term's positions are read, and looked up per document,
    // once however often the phrase repeats it; `slot[i]` is the distinct
    // term at the phrase's place `i`.
    let mut distinct: Vec<(&str, HashMap<u32, FieldPositions>)> = Vec::new();
    let mut slot = Vec::with_capacity(terms.len());
    let mut known: HashMap<&str, usize> = HashMap::new();
    for term in terms {
        if let Some(&i) = known.get(term.as_str()) {
            slot.push(i);
            continue;
        }
        let Some((postings, positions)) = source.term_positions(term)? else { return Ok(Matches::new()) };
        known.insert(term, distinct.len());
        slot.push(distinct.len());
        distinct.push((term, postings.iter().map(|(d, _)| *d).zip(positions).collect()));
    }
    let mut out = Matches::new();
    let Some(((_, first), rest)) = distinct.split_first() else { return Ok(out) };
    for (&doc, first_fields) in first {
        let Some(others): Option<Vec<&FieldPositions>> = rest.iter().map(|(_, l)| l.get(&doc)).collect() else {
            continue;
        };
        let fields_at = |i: usize| if slot[i] == 0 { first_fields } else { others[slot[i] - 1] };
        let mut freq = 0.0;
        for field in 0..FIELDS {
            let count = first_fields[field]
                .iter()
                .filter(|&&p| (1..terms.len()).all(|i| fields_at(i)[field].binary_search(&(p + i as u32)).is_ok()))
                .count();
            freq += count as f32 * FIELD_WEIGHTS[field];
        }
        if freq > 0.0 {
            out.insert(doc, freq);
        }
    }
    Ok(out)
}

fn unit_matches(source: &dyn TermSource, kind: &ClauseKind, params: &Bm25Params) -> Result<Matches> {
    match kind {
        ClauseKind::Term { stemmed, prefix, .. } => term_matches(source, stemmed, *prefix, params),
        ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) if terms.len() == 1 => {
            term_matches(source, &terms[0], false, params)
        }
        ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) => phrase_matches(source, terms),
        // Plans split AllOf into its parts; as a whole it matches where all parts do.
        ClauseKind::AllOf(parts) => {
            let mut all: Option<Matches> = None;
            for part in parts {
                let m = unit_matches(source, part, params)?;
                all = Some(match all {
                    None => m,
                    Some(prev) => prev.into_iter().filter_map(|(d, f)| m.get(&d).map(|g| (d, f + g))).collect(),
                });
            }
            Ok(all.unwrap_or_default())
        }
    }
}

/// Scores `query` over the live documents of `collections` (all when
/// `None`), best first, at most `limit`.
pub fn search_lex(
    index: &Index,
    query: &LexQuery,
    collections: Option<&[String]>,
    limit: usize,
    params: &Bm25Params,
) -> Result<Vec<LexHit>> {
    let plan = LexPlan::new(query);
    if !plan.has_positive() || limit == 0 {
        return Ok(Vec::new());
    }
    // Per segment, per unit: matches. Document frequencies are global.
    let mut per_segment = Vec::with_capacity(index.segments.len());
    let mut df = vec![0u64; plan.units.len()];
    for seg in &index.segments {
        let (lists, excluded) = plan.matches(seg, params)?;
        for (d, list) in df.iter_mut().zip(&lists) {
            *d += list.len() as u64;
        }
        per_segment.push((lists, excluded));
    }
    let (tokens, docs) = index.token_stats();
    let stats = Bm25Stats::new(&plan, &df, docs, tokens);

    let mut hits: Vec<(f32, DocAddress)> = Vec::new();
    for (s, seg) in index.segments.iter().enumerate() {
        let allowed: Option<HashSet<u16>> = collections.map(|names| {
            seg.meta.collections.iter().enumerate().filter(|(_, c)| names.contains(c)).map(|(i, _)| i as u16).collect()
        });
        if allowed.as_ref().is_some_and(HashSet::is_empty) {
            continue;
        }
        let (lists, excluded) = &per_segment[s];
        let candidates: HashSet<u32> = lists.iter().flat_map(|l| l.keys().copied()).collect();
        for doc in candidates {
            if excluded.contains(&doc) || !plan.admits(lists, doc) || seg.is_deleted(doc)? {
                continue;
            }
            if let Some(allowed) = &allowed
                && !allowed.contains(&seg.doc_collection(doc)?)
            {
                continue;
            }
            hits.push((stats.score(lists, doc, seg.doc_len(doc)?, params), DocAddress { segment: s, doc }));
        }
    }
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.truncate(limit);
    Ok(hits.into_iter().map(|(raw, address)| LexHit { address, score: normalize_score(raw) }).collect())
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::query::lex::parse_lex;

    /// Bodies as term lists, one document each; counts its reads.
    struct Bodies {
        docs: Vec<Vec<&'static str>>,
        reads: Cell<usize>,
    }

    impl Bodies {
        fn new(docs: &[&'static str]) -> Bodies {
            Bodies { docs: docs.iter().map(|d| d.split(' ').collect()).collect(), reads: Cell::new(0) }
        }

        fn positions(&self, term: &str) -> Vec<(u32, Vec<u32>)> {
            self.reads.set(self.reads.get() + 1);
            let at = |words: &Vec<&str>| (0u32..).zip(words).filter(|(_, w)| **w == term).map(|(i, _)| i).collect();
            (0u32..)
                .zip(&self.docs)
                .map(|(d, words)| (d, at(words)))
                .filter(|(_, p): &(u32, Vec<u32>)| !p.is_empty())
                .collect()
        }
    }

    impl TermSource for Bodies {
        fn term_postings(&self, term: &str) -> Result<Option<Vec<Posting>>> {
            let postings: Vec<Posting> =
                self.positions(term).into_iter().map(|(d, p)| (d, [0, 0, p.len() as u32])).collect();
            Ok((!postings.is_empty()).then_some(postings))
        }

        fn term_positions(&self, term: &str) -> Result<Option<(Vec<Posting>, Vec<FieldPositions>)>> {
            let found = self.positions(term);
            let postings: Vec<Posting> = found.iter().map(|(d, p)| (*d, [0, 0, p.len() as u32])).collect();
            let positions = found.into_iter().map(|(_, p)| [Vec::new(), Vec::new(), p]).collect();
            Ok((!postings.is_empty()).then_some((postings, positions)))
        }

        fn prefix_terms(&self, _prefix: &str) -> Result<Vec<(String, u32)>> {
            Ok(Vec::new())
        }
    }

    fn raw_score(source: &Bodies, query: &str, doc: u32) -> f32 {
        let plan = LexPlan::new(&parse_lex(query));
        let params = Bm25Params::default();
        let (lists, _) = plan.matches(source, &params).unwrap();
        let df: Vec<u64> = lists.iter().map(|l| l.len() as u64).collect();
        Bm25Stats::new(&plan, &df, source.docs.len() as u64, 40).score(&lists, doc, 10, &params)
    }

    /// A word the query repeats is one unit, read once, scored as often
    /// as it is named (FTS5 scores each phrase of a query): a 10,000-
    /// character query of one word read its postings 2,400 times.
    #[test]
    fn repeated_words_are_read_once_and_weigh_their_count() {
        let plan = LexPlan::new(&parse_lex("alpha beta alpha alpha -gamma -gamma"));
        let counts: Vec<u32> = plan.units.iter().map(|u| u.count).collect();
        assert_eq!((plan.units.len(), counts, plan.negated.len()), (2, vec![3, 1], 1));

        let source = Bodies::new(&["alpha beta", "beta beta", "alpha gamma"]);
        let once = raw_score(&source, "alpha", 0);
        source.reads.set(0);
        let repeated = raw_score(&source, &"alpha ".repeat(2000), 0);
        assert_eq!(source.reads.get(), 1, "postings read once");
        assert!((repeated - 2000.0 * once).abs() <= 1e-3 * repeated, "{repeated} vs 2000 × {once}");
    }

    /// A phrase that repeats its words reads each once and still matches
    /// exactly the consecutive runs.
    #[test]
    fn phrases_with_repeated_words() {
        let source = Bodies::new(&["a a b a a a", "a b a b", "b a"]);
        let matches = |phrase: &str| {
            source.reads.set(0);
            let found = phrase_matches(&source, &phrase.split(' ').map(String::from).collect::<Vec<_>>()).unwrap();
            let mut found: Vec<(u32, f32)> = found.into_iter().collect();
            found.sort_by_key(|m| m.0);
            (found, source.reads.get())
        };
        assert_eq!(matches("a a"), (vec![(0, 3.0)], 1));
        assert_eq!(matches("a b a"), (vec![(0, 1.0), (1, 1.0)], 2));
        assert_eq!(matches("a a a"), (vec![(0, 1.0)], 1));
        assert_eq!(matches("b a b"), (vec![(1, 1.0)], 2));
        assert_eq!(matches(&["a"; 3000].join(" ")), (vec![], 1));
    }
}
