//! `query`: qmd's hybrid pipeline (reference §5) as explicit stages, so a
//! caller with models can run the asynchronous steps between them:
//!
//! ```text
//! plan ─▶ keyword lists ─▶ [embed texts ─▶ vector lists] ─▶ fuse ─▶
//!         best chunk per candidate ─▶ [rerank chunks] ─▶ blend ─▶ hits
//! ```
//!
//! The bracketed steps need models. Without a vector index or a reranker
//! they are skipped the way qmd skips them (vec/hyde searches find nothing;
//! scores fall back to the fused position), and the result's `notes` say so.

use std::collections::HashSet;

use super::Engine;
use super::read::{Found, SnippetFocus};
use crate::api::*;
use crate::chunk::{Chunk, chunk_document};
use crate::collection::Config;
use crate::error::{Error, Result};
use crate::index::{DocAddress, Index};
use crate::query::document::{QueryDocument, parse_query_document, type_name, validate_search};
use crate::query::lex::parse_lex;
use crate::search::fusion::{RankedList, reciprocal_rank_fusion};
use crate::search::lex::search_lex;
use crate::search::snippet::extract_intent_terms;

/// Results per ranked list (qmd's `searchFTS(…, 20)` / `searchVec(…, 20)`).
const LIST_LIMIT: usize = 20;
/// A plain query whose top BM25 hit scores at least this, ahead of the
/// second by the gap below, skips expansion.
const STRONG_SIGNAL_MIN_SCORE: f64 = 0.85;
const STRONG_SIGNAL_MIN_GAP: f64 = 0.15;
/// Query-term weight of intent terms when picking a chunk.
const INTENT_WEIGHT_CHUNK: f64 = 0.5;
pub const MAX_SEARCHES: usize = 10;

/// A planned query: what to search, before any list is run.
struct Plan {
    /// The text plain queries were probed with (`None` for structured).
    expand: Option<String>,
    searches: Vec<TypedSearch>,
    intent: Option<String>,
    primary: String,
}

/// The ranked lists of one query, with what each was.
struct Lists<'a> {
    engine: &'a Engine,
    index: &'a Index,
    scope: &'a [String],
    ranked: Vec<RankedList<DocAddress>>,
    info: Vec<RankedListInfo>,
}

impl Lists<'_> {
    /// Runs one BM25 list (in one collection, else the whole scope); an
    /// empty list is not kept, as in qmd.
    fn keyword(&mut self, query: &str, query_type: &str, collection: Option<&String>, weight: f64) -> Result<()> {
        let within = collection.map_or(self.scope, std::slice::from_ref);
        let hits = search_lex(self.index, &parse_lex(query), Some(within), LIST_LIMIT, &self.engine.bm25)?;
        if hits.is_empty() {
            return Ok(());
        }
        self.info.push(RankedListInfo {
            source: "fts".into(),
            query_type: query_type.into(),
            query: query.into(),
            collection: collection.cloned(),
            weight,
            hits: hits.len() as u32,
        });
        self.ranked.push(RankedList { weight, items: hits.into_iter().map(|h| (h.address, h.score)).collect() });
        Ok(())
    }
}

/// A candidate after fusion, with the chunk that represents it.
struct Candidate {
    address: DocAddress,
    rrf: crate::search::fusion::Fused<DocAddress>,
    body: String,
    chunk: Chunk,
}

fn plan(request: &QueryRequest) -> Result<Plan> {
    let (query, searches) = (request.query.as_deref().map(str::trim), &request.searches);
    let document = match (query, searches.is_empty()) {
        (Some(_), false) => {
            return Err(Error::invalid("'query' and 'searches' are mutually exclusive; provide only one"));
        }
        (None, true) | (Some(""), true) => {
            return Err(Error::invalid("provide either 'query' (plain text) or 'searches' (typed sub-queries)"));
        }
        (Some(text), true) if request.parse_document => parse_query_document(text)?,
        (Some(text), true) => QueryDocument::Expand(text.to_string()),
        (None, false) => {
            if searches.len() > MAX_SEARCHES {
                return Err(Error::invalid(format!("at most {MAX_SEARCHES} searches are allowed")));
            }
            for search in searches {
                if search.query.trim().is_empty() {
                    return Err(Error::invalid(format!(
                        "Structured search ({}): query must include text.",
                        type_name(search.kind)
                    )));
                }
                validate_search(search, None)?;
            }
            QueryDocument::Structured { searches: searches.clone(), intent: None }
        }
    };
    let flag_intent = request.intent.as_deref().map(str::trim).filter(|i| !i.is_empty()).map(str::to_string);
    Ok(match document {
        QueryDocument::Expand(text) => {
            Plan { primary: text.clone(), expand: Some(text), searches: Vec::new(), intent: flag_intent }
        }
        QueryDocument::Structured { searches, intent } => {
            let primary = [SearchType::Lex, SearchType::Vec]
                .iter()
                .find_map(|kind| searches.iter().find(|s| s.kind == *kind))
                .or(searches.first())
                .map(|s| s.query.clone())
                .unwrap_or_default();
            // The `--intent` flag wins over an `intent:` line.
            Plan { expand: None, searches, intent: flag_intent.or(intent), primary }
        }
    })
}

/// qmd's expansion when no generation model is available.
fn fallback_expansion(query: &str) -> Vec<TypedSearch> {
    vec![
        TypedSearch { kind: SearchType::Hyde, query: format!("Information about {query}") },
        TypedSearch { kind: SearchType::Lex, query: query.to_string() },
        TypedSearch { kind: SearchType::Vec, query: query.to_string() },
    ]
}

/// The chunk with most query terms (longer than 2 chars) plus half-weighted
/// intent terms, by case-insensitive substring; ties keep the first.
fn best_chunk(body: &str, query: &str, intent: Option<&str>) -> Chunk {
    let lowered = query.to_lowercase();
    let terms: Vec<&str> = lowered.split_whitespace().filter(|t| t.chars().count() > 2).collect();
    let intent_terms = intent.map(extract_intent_terms).unwrap_or_default();
    let mut best: Option<(f64, Chunk)> = None;
    for chunk in chunk_document(body) {
        let text = chunk.text.to_lowercase();
        let score = terms.iter().filter(|t| text.contains(**t)).count() as f64
            + intent_terms.iter().filter(|t| text.contains(t.as_str())).count() as f64 * INTENT_WEIGHT_CHUNK;
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, chunk));
        }
    }
    best.map(|(_, c)| c).unwrap_or(Chunk { text: String::new(), pos: 0 })
}

/// qmd's blend: the position score's weight by fused rank.
fn blend_weight(rrf_rank: usize) -> f64 {
    match rrf_rank {
        0..=3 => 0.75,
        4..=10 => 0.60,
        _ => 0.40,
    }
}

impl Engine {
    /// The hybrid `query` (qmd's `hybridQuery` / `structuredSearch`).
    pub fn query(&self, request: &QueryRequest) -> Result<QueryResult> {
        let plan = plan(request)?;
        let config = self.config()?;
        let scope = self.scope(&config, &request.options.collections)?;
        let index = self.index()?;
        let mut result =
            QueryResult { primary_query: plan.primary.clone(), intent: plan.intent.clone(), ..Default::default() };
        let mut lists = Lists { index: &index, scope: &scope, engine: self, ranked: Vec::new(), info: Vec::new() };

        let vector_searches: Vec<&TypedSearch>;
        if let Some(text) = &plan.expand {
            // Probe: a strong, clear BM25 winner skips expansion.
            lists.keyword(text, "original", None, 2.0)?;
            let probe = lists.ranked.first().map(|l| &l.items[..]).unwrap_or_default();
            let (top, second) = (probe.first().map_or(0.0, |h| h.1), probe.get(1).map_or(0.0, |h| h.1));
            if plan.intent.is_none() && top >= STRONG_SIGNAL_MIN_SCORE && top - second >= STRONG_SIGNAL_MIN_GAP {
                result.strong_signal = Some(top);
            } else {
                result.expansion = fallback_expansion(text);
                result.notes.push("no query-expansion model: used the deterministic fallback expansion".into());
            }
            for search in result.expansion.iter().filter(|s| s.kind == SearchType::Lex) {
                lists.keyword(&search.query, "lex", None, 1.0)?;
            }
            vector_searches = result.expansion.iter().filter(|s| s.kind != SearchType::Lex).collect();
        } else {
            // Each (search, collection) pair is its own list; the first list
            // gets double weight.
            let named: Vec<Option<&String>> = if request.options.collections.is_empty() {
                vec![None]
            } else {
                request.options.collections.iter().map(Some).collect()
            };
            for search in plan.searches.iter().filter(|s| s.kind == SearchType::Lex) {
                for collection in &named {
                    let weight = if lists.ranked.is_empty() { 2.0 } else { 1.0 };
                    lists.keyword(&search.query, "lex", *collection, weight)?;
                }
            }
            vector_searches = plan.searches.iter().filter(|s| s.kind != SearchType::Lex).collect();
        }
        if !vector_searches.is_empty() || plan.expand.is_some() {
            result.notes.push("no vector index: vec/hyde searches were skipped (run 'qmd embed')".into());
        }

        result.lists = lists.info;
        let fused = reciprocal_rank_fusion(&lists.ranked);
        let mut candidates = Vec::new();
        for rrf in fused.into_iter().take(request.candidate_limit.max(1)) {
            let segment = &index.segments[rrf.key.segment];
            let record = segment.doc(rrf.key.doc)?;
            let body = segment.body(&record)?;
            let chunk = best_chunk(&body, &plan.primary, plan.intent.as_deref());
            candidates.push(Candidate { address: rrf.key, rrf, body, chunk });
        }
        if request.rerank && !candidates.is_empty() {
            result.notes.push("no reranker model: scores are the fused position 1/rank".into());
        }
        result.hits = self.finish(&config, &index, &plan, candidates, request)?;
        Ok(result)
    }

    /// Scores candidates by fused position (no reranker), then dedupes,
    /// filters and cuts as qmd does, and builds each hit's snippet.
    fn finish(
        &self,
        config: &Config,
        index: &Index,
        plan: &Plan,
        candidates: Vec<Candidate>,
        request: &QueryRequest,
    ) -> Result<Vec<QueryHit>> {
        let options = &request.options;
        let mut seen = HashSet::new();
        let mut hits = Vec::new();
        for (i, candidate) in candidates.into_iter().enumerate() {
            let rank = i + 1;
            let score = 1.0 / rank as f64;
            if !seen.insert(candidate.address) || score < options.min_score {
                continue;
            }
            if hits.len() >= options.limit {
                break;
            }
            let chunk_len = candidate.chunk.text.chars().count();
            let focus = SnippetFocus {
                query: &plan.primary,
                chunk: Some((candidate.chunk.pos, chunk_len)),
                intent: plan.intent.as_deref(),
            };
            let found = Found { address: candidate.address, score, body: Some(candidate.body) };
            let hit = self.hit(config, index, found, &focus, options)?;
            hits.push(QueryHit {
                hit,
                rrf_rank: rank as u32,
                rrf_score: candidate.rrf.score,
                top_rank_bonus: candidate.rrf.top_rank_bonus,
                contributions: candidate.rrf.contributions,
                rerank_score: None,
                blend_weight: if request.rerank { blend_weight(rank) } else { 1.0 },
            });
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::directory::RamDirectory;
    use crate::source::MemorySource;

    fn engine() -> Engine {
        let mut notes = MemorySource::new();
        notes.insert("/n", "cap.md", "# CAP theorem\n\nConsistency, availability and partition tolerance.", 0);
        notes.insert("/n", "raft.md", "# Raft\n\nLeader election and log replication for consistency.", 0);
        notes.insert("/n", "cooking.md", "# Bread\n\nFlour, water, salt and time.", 0);
        notes.insert("/m", "avail.md", "# Availability zones\n\nAvailability across regions.", 0);
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(notes));
        engine.collection_add("/n", Some("n"), None).unwrap();
        engine.collection_add("/m", Some("m"), None).unwrap();
        engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
        engine
    }

    fn request(query: &str) -> QueryRequest {
        QueryRequest { query: Some(query.into()), parse_document: true, ..Default::default() }
    }

    fn paths(result: &QueryResult) -> Vec<String> {
        result.hits.iter().map(|h| format!("{}/{}", h.hit.collection, h.hit.path)).collect()
    }

    #[test]
    fn plain_query_fuses_probe_and_fallback_lex() {
        let result = engine().query(&request("consistency")).unwrap();
        assert_eq!(result.expansion.len(), 3, "weak signal: fallback expansion");
        assert_eq!(
            result.lists.iter().map(|l| (l.query_type.as_str(), l.weight)).collect::<Vec<_>>(),
            [("original", 2.0), ("lex", 1.0)]
        );
        assert_eq!(result.hits.len(), 2);
        assert_eq!(result.hits[0].hit.score, 1.0);
        assert_eq!(result.hits[1].hit.score, 0.5);
        let top = &result.hits[0];
        // Rank 1 in both lists: 2/61 + 1/61 + 0.05.
        assert!((top.rrf_score - (3.0 / 61.0 + 0.05)).abs() < 1e-12);
        assert_eq!(top.blend_weight, 0.75);
    }

    #[test]
    fn structured_lists_per_collection_and_first_weighs_double() {
        let mut req = request("lex: availability\nlex: consistency");
        req.options.collections = vec!["n".into(), "m".into()];
        let result = engine().query(&req).unwrap();
        let lists: Vec<_> =
            result.lists.iter().map(|l| (l.query.as_str(), l.collection.as_deref().unwrap(), l.weight)).collect();
        assert_eq!(lists, [("availability", "n", 2.0), ("availability", "m", 1.0), ("consistency", "n", 1.0)]);
        assert_eq!(paths(&result)[0], "n/cap.md", "in two lists, first one double");
        assert!(result.expansion.is_empty());
    }

    #[test]
    fn min_score_limit_and_errors() {
        let mut req = request("lex: consistency availability");
        req.options.min_score = 0.6;
        assert_eq!(engine().query(&req).unwrap().hits.len(), 1, "only rank 1 scores ≥ 0.6");
        let both = QueryRequest {
            query: Some("x".into()),
            searches: vec![TypedSearch { kind: SearchType::Lex, query: "x".into() }],
            ..Default::default()
        };
        assert_eq!(
            engine().query(&both).unwrap_err().message,
            "'query' and 'searches' are mutually exclusive; provide only one"
        );
        assert_eq!(
            engine().query(&QueryRequest::default()).unwrap_err().message,
            "provide either 'query' (plain text) or 'searches' (typed sub-queries)"
        );
        let err = engine().query(&request("vec: a -b")).unwrap_err().message;
        assert!(err.starts_with("Line 1 (vec): Negation"), "{err}");
    }

    #[test]
    fn vector_only_structured_query_finds_nothing_without_vectors() {
        let result = engine().query(&request("vec: consistency")).unwrap();
        assert!(result.hits.is_empty());
        assert!(result.notes.iter().any(|n| n.contains("no vector index")));
    }

    #[test]
    fn best_chunk_prefers_query_terms() {
        let body = format!("# A\n\n{}\n# B\n\nthe raft leader\n{}", "filler ".repeat(700), "more ".repeat(600));
        let chunk = best_chunk(&body, "raft leader", None);
        assert!(chunk.text.contains("raft leader") && chunk.pos > 0);
    }
}
