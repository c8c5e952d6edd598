//! Searching a site bundle in the page: the meta is loaded once; a query
//! names the shard files it needs ([`SiteIndex::needs`]); the page fetches
//! them and hands them over ([`SiteIndex::add_file`]); then it is scored
//! by the same BM25 code as the CLI's index ([`crate::search::lex`]).

use std::collections::{HashMap, HashSet};

use super::builder::fragment_name;
use super::format::{FormatError, Meta, PositionsShard, TermShard, metadata_name, positions_name, terms_name};
use crate::error::{Error, ErrorKind, Result};
use crate::index::segment::postings::{decode_positions, decode_postings};
use crate::index::segment::{FieldPositions, Posting};
use crate::query::check_length;
use crate::query::lex::parse_lex;
use crate::search::lex::{Bm25Params, Bm25Stats, LexPlan, TermSource, normalize_score};

/// One result: the page's ordinal, its fragment file and qmd's normalised score.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteHit {
    pub doc: u32,
    pub fragment: String,
    pub score: f64,
}

/// The meta plus every shard loaded so far.
pub struct SiteIndex {
    meta: Meta,
    terms: HashMap<usize, TermShard>,
    positions: HashMap<usize, PositionsShard>,
    /// File name → (shard, is a positions file), for `add_file`.
    files: HashMap<String, (usize, bool)>,
    params: Bm25Params,
}

fn damaged(e: FormatError) -> Error {
    Error::new(ErrorKind::CorruptIndex, e.to_string())
}

impl SiteIndex {
    /// Opens the meta file's bytes (decompressed).
    pub fn open(meta: &[u8]) -> Result<SiteIndex> {
        let meta = Meta::decode(meta).map_err(damaged)?;
        let mut files = HashMap::new();
        for i in 0..meta.shards.len() {
            files.insert(terms_name(&meta.shard_set, i), (i, false));
            files.insert(positions_name(&meta.shard_set, i), (i, true));
        }
        Ok(SiteIndex { meta, terms: HashMap::new(), positions: HashMap::new(), files, params: Bm25Params::default() })
    }

    /// The fragment set's id (fragment names are derived from it).
    pub fn fragments(&self) -> &super::format::FileId {
        &self.meta.fragments
    }

    pub fn docs(&self) -> u32 {
        self.meta.docs
    }

    /// Shard files `query` needs that are not loaded yet, in fetch order.
    pub fn needs(&self, query: &str) -> Result<Vec<String>> {
        check_length("Query", query)?;
        let plan = LexPlan::new(&parse_lex(query));
        let mut out = Vec::new();
        // Each shard is looked at once however many terms share it (a
        // query of many `a*` prefixes names every shard many times).
        let mut asked: HashSet<(usize, bool)> = HashSet::new();
        let mut push = |shard: usize, positions: bool| {
            if !asked.insert((shard, positions)) {
                return;
            }
            let set = &self.meta.shard_set;
            let loaded = if positions { self.positions.contains_key(&shard) } else { self.terms.contains_key(&shard) };
            if !loaded {
                out.push(if positions { positions_name(set, shard) } else { terms_name(set, shard) });
            }
        };
        for need in plan.terms(&self.params) {
            let range = if need.prefix {
                self.meta.shards_with_prefix(&need.term)
            } else {
                let Some(shard) = self.meta.shard_of(&need.term) else { continue };
                shard..shard + 1
            };
            for shard in range {
                push(shard, false);
                if need.positions {
                    push(shard, true);
                }
            }
        }
        Ok(out)
    }

    /// The bundle's metadata file, for metadata filters
    /// ([`super::SiteMetadata`]); none when no page has frontmatter.
    pub fn metadata_file(&self) -> Option<String> {
        self.meta.metadata.map(|id| metadata_name(&id))
    }

    /// Adds a fetched shard (decompressed). Unknown names
    /// are errors: a page that mixes two builds must not search half of each.
    pub fn add_file(&mut self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let &(shard, positions) = self
            .files
            .get(name)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("{name} is not a file of this index")))?;
        if positions {
            self.positions.insert(shard, PositionsShard::decode(bytes).map_err(damaged)?);
        } else {
            self.terms.insert(shard, TermShard::decode(bytes).map_err(damaged)?);
        }
        Ok(())
    }

    /// Documents allowed by `filters` (`key → values`: any value of a key,
    /// every key) and among `passing` (the pages a metadata filter keeps,
    /// from [`super::SiteMetadata::passing`]); `None` when there are
    /// neither.
    pub fn allowed(&self, filters: &[(String, String)], passing: Option<&[u32]>) -> Option<HashSet<u32>> {
        let mut allowed: Option<HashSet<u32>> = passing.map(|docs| docs.iter().copied().collect());
        let mut keys: Vec<&str> = filters.iter().map(|(k, _)| k.as_str()).collect();
        keys.dedup();
        for key in keys {
            let values = self.meta.filters.get(key);
            let docs: HashSet<u32> = filters
                .iter()
                .filter(|(k, _)| k == key)
                .filter_map(|(_, v)| values.and_then(|vals| vals.get(v)))
                .flatten()
                .copied()
                .collect();
            allowed = Some(match allowed {
                None => docs,
                Some(prev) => prev.intersection(&docs).copied().collect(),
            });
        }
        allowed
    }

    /// The filter keys and their values, with how many documents hold
    /// each: of the whole site, or of `among` (a query's results, for a
    /// search box's facet counts; a document listed twice counts once).
    pub fn filters(&self, among: Option<&[u32]>) -> Vec<(String, Vec<(String, usize)>)> {
        let among: Option<HashSet<u32>> = among.map(|docs| docs.iter().copied().collect());
        let count = |docs: &Vec<u32>| match &among {
            None => docs.len(),
            Some(among) => docs.iter().filter(|doc| among.contains(doc)).count(),
        };
        self.meta
            .filters
            .iter()
            .map(|(k, vals)| (k.clone(), vals.iter().map(|(v, docs)| (v.clone(), count(docs))).collect()))
            .collect()
    }

    /// Scores `query` (qmd's lex syntax) over the whole site, best first,
    /// at most `limit`, among the pages [`Self::allowed`] keeps. Every
    /// shard [`Self::needs`] named must be loaded.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        filters: &[(String, String)],
        passing: Option<&[u32]>,
    ) -> Result<Vec<SiteHit>> {
        check_length("Query", query)?;
        let plan = LexPlan::new(&parse_lex(query));
        if !plan.has_positive() || limit == 0 {
            return Ok(Vec::new());
        }
        let (lists, excluded) = plan.matches(self, &self.params)?;
        let df: Vec<u64> = lists.iter().map(|l| l.len() as u64).collect();
        let stats = Bm25Stats::new(&plan, &df, u64::from(self.meta.docs), self.meta.tokens);
        let allowed = self.allowed(filters, passing);
        let candidates: HashSet<u32> = lists.iter().flat_map(|l| l.keys().copied()).collect();
        let mut hits: Vec<(f32, u32)> = candidates
            .into_iter()
            .filter(|doc| !excluded.contains(doc) && plan.admits(&lists, *doc))
            .filter(|doc| allowed.as_ref().is_none_or(|a| a.contains(doc)))
            .map(|doc| (stats.score(&lists, doc, self.meta.doc_lens[doc as usize], &self.params), doc))
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(limit);
        Ok(hits
            .into_iter()
            .map(|(raw, doc)| SiteHit {
                doc,
                fragment: fragment_name(&self.meta.fragments, doc),
                score: normalize_score(raw),
            })
            .collect())
    }

    fn shard(&self, term: &str) -> Result<Option<&TermShard>> {
        let Some(i) = self.meta.shard_of(term) else { return Ok(None) };
        self.terms.get(&i).map(Some).ok_or_else(|| not_loaded(i))
    }

    fn postings_at(&self, shard: &TermShard, at: usize) -> Result<Vec<Posting>> {
        let t = &shard.terms[at];
        decode_postings(&shard.bytes[t.postings.clone()], t.df, self.meta.docs)
            .ok_or_else(|| damaged(FormatError("postings")))
    }
}

fn not_loaded(shard: usize) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("term shard {shard} was not loaded before searching"))
}

impl TermSource for SiteIndex {
    fn term_postings(&self, term: &str) -> Result<Option<Vec<Posting>>> {
        let Some(shard) = self.shard(term)? else { return Ok(None) };
        shard.find(term).map(|at| self.postings_at(shard, at)).transpose()
    }

    fn term_positions(&self, term: &str) -> Result<Option<(Vec<Posting>, Vec<FieldPositions>)>> {
        let Some(i) = self.meta.shard_of(term) else { return Ok(None) };
        let shard = self.terms.get(&i).ok_or_else(|| not_loaded(i))?;
        let Some(at) = shard.find(term) else { return Ok(None) };
        let postings = self.postings_at(shard, at)?;
        let positions = self.positions.get(&i).ok_or_else(|| not_loaded(i))?;
        let range = positions.ranges.get(at).ok_or_else(|| damaged(FormatError("positions")))?;
        let decoded = decode_positions(&positions.bytes[range.clone()], &postings)
            .ok_or_else(|| damaged(FormatError("positions")))?;
        Ok(Some((postings, decoded)))
    }

    fn prefix_terms(&self, prefix: &str) -> Result<Vec<(String, u32)>> {
        let mut out = Vec::new();
        for i in self.meta.shards_with_prefix(prefix) {
            let shard = self.terms.get(&i).ok_or_else(|| not_loaded(i))?;
            let start = shard.terms.partition_point(|t| t.term.as_str() < prefix);
            out.extend(
                shard.terms[start..].iter().take_while(|t| t.term.starts_with(prefix)).map(|t| (t.term.clone(), t.df)),
            );
        }
        Ok(out)
    }
}

/// Keyword and semantic results fused by a convex combination of their
/// scores, each list's scaled to [0, 1] by its own minimum and maximum (a
/// page missing from a list scores 0 there): `(1 − weight)·keyword +
/// weight·semantic`, best first, ties by page. Scores rather than ranks:
/// on SciFact train and NFCorpus dev one weight (0.3) served both within
/// 0.007 of reciprocal-rank fusion's best for each, where no one RRF
/// setting did (see the README).
pub fn fuse(
    lex: &[SiteHit],
    semantic: &[(u32, f32)],
    weight: f64,
    fragments: &super::format::FileId,
    limit: usize,
) -> Vec<SiteHit> {
    let mut scores: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    let lists = [
        (1.0 - weight, lex.iter().map(|h| (h.doc, h.score)).collect::<Vec<_>>()),
        (weight, semantic.iter().map(|&(d, s)| (d, f64::from(s))).collect()),
    ];
    for (share, list) in lists {
        let (low, high) = list.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &(_, s)| (l.min(s), h.max(s)));
        for (doc, score) in list {
            let scaled = if high > low { (score - low) / (high - low) } else { 1.0 };
            *scores.entry(doc).or_default() += share * scaled;
        }
    }
    let mut fused: Vec<(u32, f64)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
        .into_iter()
        .take(limit)
        .map(|(doc, score)| SiteHit { doc, fragment: fragment_name(fragments, doc), score })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(list: &[(u32, f64)]) -> Vec<SiteHit> {
        list.iter().map(|&(doc, score)| SiteHit { doc, fragment: String::new(), score }).collect()
    }

    #[test]
    fn fusion_scales_each_list_to_its_range_and_weighs_them() {
        let lex = hits(&[(1, 12.0), (2, 11.0), (3, 2.0)]);
        let semantic = [(3, 0.9), (4, 0.8), (1, 0.3)];
        let order = |weight: f64| fuse(&lex, &semantic, weight, &[0; 8], 10).iter().map(|h| h.doc).collect::<Vec<_>>();
        // Keyword alone: its order, semantic-only pages last.
        assert_eq!(order(0.0), [1, 2, 3, 4]);
        assert_eq!(order(1.0), [3, 4, 1, 2]);
        // 1 is top of the keyword list and bottom of the semantic one:
        // 0.7·1 + 0.3·0 = 0.7; 3 is 0.7·0 + 0.3·1 = 0.3; 2 is 0.7·0.9 = 0.63.
        let fused = fuse(&lex, &semantic, 0.3, &[0; 8], 2);
        assert_eq!(fused.iter().map(|h| h.doc).collect::<Vec<_>>(), [1, 2]);
        assert!((fused[0].score - 0.7).abs() < 1e-9 && (fused[1].score - 0.63).abs() < 1e-9);
        // One page in a list scores 1 there; empty lists are fine.
        assert_eq!(fuse(&hits(&[(7, 3.0)]), &[], 0.3, &[0; 8], 5)[0].score, 0.7);
        assert!(fuse(&[], &[], 0.3, &[0; 8], 5).is_empty());
    }
}
