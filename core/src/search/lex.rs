//! BM25 over the index, with FTS5's shape: one score per query unit (term,
//! prefix term or phrase) from its weighted frequency over the fields
//! path/title/body (weights 1.5/4.0/1.0) and the document's total length.
//!
//! Unlike qmd (which ANDs every term), plain terms are OR-ed: a document
//! needs one of them, and BM25 puts documents with more of them first.
//! Phrases (quoted, hyphenated, dotted parts) are required; negations exclude.

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use crate::index::segment::{FIELDS, SegmentReader, TermInfo};
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

/// A scoring unit's matches in one segment: doc → weighted frequency.
type Matches = HashMap<u32, f32>;

struct Unit<'q> {
    kind: &'q ClauseKind,
    required: bool,
}

fn weighted(tfs: &[u32; FIELDS]) -> f32 {
    tfs.iter().zip(FIELD_WEIGHTS).map(|(&tf, w)| tf as f32 * w).sum()
}

/// Exact + prefix matches of one term in one segment.
fn term_matches(seg: &SegmentReader, stemmed: &str, prefix: bool, params: &Bm25Params) -> Result<Matches> {
    let mut out = Matches::new();
    if let Some(info) = seg.term(stemmed)? {
        for (doc, tfs) in seg.postings(&info)? {
            out.insert(doc, weighted(&tfs));
        }
    }
    if prefix && stemmed.chars().count() >= params.min_prefix_len {
        let mut expansions: Vec<(String, TermInfo)> =
            seg.terms_with_prefix(stemmed)?.into_iter().filter(|(t, _)| t != stemmed).collect();
        expansions.sort_by_key(|e| std::cmp::Reverse(e.1.df));
        for (_, info) in expansions.iter().take(params.max_expansions) {
            for (doc, tfs) in seg.postings(info)? {
                *out.entry(doc).or_default() += params.prefix_weight * weighted(&tfs);
            }
        }
    }
    Ok(out)
}

/// Occurrences of a phrase (consecutive positions within one field).
fn phrase_matches(seg: &SegmentReader, terms: &[String]) -> Result<Matches> {
    let mut lists = Vec::with_capacity(terms.len());
    for term in terms {
        let Some(info) = seg.term(term)? else { return Ok(Matches::new()) };
        let postings = seg.postings(&info)?;
        let positions = seg.positions(&info, &postings)?;
        let by_doc: HashMap<u32, [Vec<u32>; FIELDS]> = postings.iter().map(|(d, _)| *d).zip(positions).collect();
        lists.push(by_doc);
    }
    let mut out = Matches::new();
    let Some((first, rest)) = lists.split_first() else { return Ok(out) };
    for (&doc, first_fields) in first {
        let Some(others): Option<Vec<&[Vec<u32>; FIELDS]>> = rest.iter().map(|l| l.get(&doc)).collect() else {
            continue;
        };
        let mut freq = 0.0;
        for field in 0..FIELDS {
            let count = first_fields[field]
                .iter()
                .filter(|&&p| {
                    others.iter().enumerate().all(|(i, f)| f[field].binary_search(&(p + i as u32 + 1)).is_ok())
                })
                .count();
            freq += count as f32 * FIELD_WEIGHTS[field];
        }
        if freq > 0.0 {
            out.insert(doc, freq);
        }
    }
    Ok(out)
}

fn unit_matches(seg: &SegmentReader, kind: &ClauseKind, params: &Bm25Params) -> Result<Matches> {
    match kind {
        ClauseKind::Term { stemmed, prefix, .. } => term_matches(seg, stemmed, *prefix, params),
        ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) if terms.len() == 1 => {
            term_matches(seg, &terms[0], false, params)
        }
        ClauseKind::Phrase(terms) | ClauseKind::Compound(terms) => phrase_matches(seg, terms),
        // Callers split AllOf into its parts; as a whole it matches where all parts do.
        ClauseKind::AllOf(parts) => {
            let mut all: Option<Matches> = None;
            for part in parts {
                let m = unit_matches(seg, part, params)?;
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
    if !query.has_positive() || limit == 0 {
        return Ok(Vec::new());
    }
    // Compound words score as their parts (optional prefix terms).
    let parts: Vec<ClauseKind> = query
        .clauses
        .iter()
        .filter(|c| !c.negated)
        .flat_map(|c| match &c.kind {
            ClauseKind::Compound(terms) => {
                terms.iter().map(|t| ClauseKind::Term { word: t.clone(), stemmed: t.clone(), prefix: true }).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let mut units: Vec<Unit<'_>> = parts.iter().map(|kind| Unit { kind, required: false }).collect();
    for clause in query.clauses.iter().filter(|c| !c.negated) {
        match &clause.kind {
            ClauseKind::Compound(_) => {}
            ClauseKind::AllOf(parts) => units.extend(parts.iter().map(|kind| Unit { kind, required: true })),
            kind @ ClauseKind::Phrase(terms) => units.push(Unit { kind, required: terms.len() > 1 }),
            kind => units.push(Unit { kind, required: false }),
        }
    }

    // Per segment, per unit: matches. Document frequencies are global.
    let mut per_segment: Vec<Vec<Matches>> = Vec::with_capacity(index.segments.len());
    let mut excluded: Vec<HashSet<u32>> = Vec::with_capacity(index.segments.len());
    let mut df = vec![0u64; units.len()];
    for seg in &index.segments {
        let mut lists = Vec::with_capacity(units.len());
        for (i, unit) in units.iter().enumerate() {
            let m = unit_matches(seg, unit.kind, params)?;
            df[i] += m.len() as u64;
            lists.push(m);
        }
        let mut out = HashSet::new();
        for clause in query.clauses.iter().filter(|c| c.negated) {
            out.extend(unit_matches(seg, &clause.kind, params)?.into_keys());
        }
        per_segment.push(lists);
        excluded.push(out);
    }

    let (tokens, docs) = index.token_stats();
    let n = docs.max(1) as f32;
    let avgdl = (tokens as f32 / n).max(1.0);
    let idf: Vec<f32> = df.iter().map(|&d| (1.0 + (n - d as f32 + 0.5) / (d as f32 + 0.5)).ln()).collect();

    let mut hits: Vec<(f32, DocAddress)> = Vec::new();
    for (s, seg) in index.segments.iter().enumerate() {
        let allowed: Option<HashSet<u16>> = collections.map(|names| {
            seg.meta.collections.iter().enumerate().filter(|(_, c)| names.contains(c)).map(|(i, _)| i as u16).collect()
        });
        if allowed.as_ref().is_some_and(HashSet::is_empty) {
            continue;
        }
        let lists = &per_segment[s];
        let mut candidates: HashSet<u32> = HashSet::new();
        for list in lists {
            candidates.extend(list.keys());
        }
        for doc in candidates {
            if excluded[s].contains(&doc)
                || units.iter().zip(lists).any(|(u, l)| u.required && !l.contains_key(&doc))
                || seg.is_deleted(doc)?
            {
                continue;
            }
            if let Some(allowed) = &allowed
                && !allowed.contains(&seg.doc_collection(doc)?)
            {
                continue;
            }
            let norm = params.k1 * (1.0 - params.b + params.b * seg.doc_len(doc)? as f32 / avgdl);
            let score: f32 = lists
                .iter()
                .zip(&idf)
                .filter_map(|(l, idf)| l.get(&doc).map(|&f| idf * f * (params.k1 + 1.0) / (f + norm)))
                .sum();
            hits.push((score, DocAddress { segment: s, doc }));
        }
    }
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.truncate(limit);
    Ok(hits
        .into_iter()
        .map(|(raw, address)| {
            let x = f64::from(raw);
            LexHit { address, score: x / (1.0 + x) }
        })
        .collect())
}
