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
use std::rc::Rc;

use super::read::{Found, SnippetFocus};
use super::vsearch::{DocsByHash, usable_vectors, vector_list};
use super::{Engine, passing};
use crate::analysis::substring_set::SubstringSet;
use crate::api::*;
use crate::chunk::{Chunk, Declarations, chunk_document};
use crate::collection::Config;
use crate::error::{Error, Result};
use crate::index::{DocAddress, Index};
use crate::inference::{EmbedderInfo, Inference};
use crate::query::check_length;
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

/// A candidate after fusion, with the chunk that represents it.
struct Candidate {
    address: DocAddress,
    rrf: crate::search::fusion::Fused<DocAddress>,
    body: String,
    chunk: Chunk,
}

fn check_search_count(searches: usize) -> Result<()> {
    if searches > MAX_SEARCHES {
        return Err(Error::invalid(format!("at most {MAX_SEARCHES} searches are allowed (this query has {searches})")));
    }
    Ok(())
}

fn plan(request: &QueryRequest) -> Result<Plan> {
    let (query, searches) = (request.query.as_deref().map(str::trim), &request.searches);
    check_length("Query", query.unwrap_or_default())?;
    check_length("Intent", request.intent.as_deref().unwrap_or_default())?;
    for search in searches {
        check_length("Query", &search.query)?;
    }
    let document = match (query, searches.is_empty()) {
        (Some(_), false) => {
            return Err(Error::invalid("'query' and 'searches' are mutually exclusive; provide only one"));
        }
        (None, true) | (Some(""), true) => {
            return Err(Error::invalid("provide either 'query' (plain text) or 'searches' (typed sub-queries)"));
        }
        (Some(text), true) if request.parse_document => {
            let document = parse_query_document(text)?;
            // A 10,000-character document holds a thousand `lex:` lines,
            // each a search (and each `vec:` line an embedding).
            if let QueryDocument::Structured { searches, .. } = &document {
                check_search_count(searches.len())?;
            }
            document
        }
        (Some(text), true) => QueryDocument::Expand(text.to_string()),
        (None, false) => {
            check_search_count(searches.len())?;
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
fn best_chunk(body: &str, declarations: &Declarations, query: &str, intent: Option<&str>) -> Chunk {
    let lowered = query.to_lowercase();
    let terms: Vec<&str> = lowered.split_whitespace().filter(|t| t.chars().count() > 2).collect();
    let intent_terms = intent.map(extract_intent_terms).unwrap_or_default();
    let intent_terms: Vec<&str> = intent_terms.iter().map(String::as_str).collect();
    let mut terms = SubstringSet::new([&terms[..], &intent_terms[..]]);
    let mut best: Option<(f64, Chunk)> = None;
    for chunk in chunk_document(body, declarations) {
        let [query_hits, intent_hits] = terms.count_in(&chunk.text.to_lowercase());
        let score = f64::from(query_hits) + f64::from(intent_hits) * INTENT_WEIGHT_CHUNK;
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

/// What a [`QueryJob`] needs next.
#[derive(Debug, PartialEq)]
pub enum QueryStep {
    /// Expand this plain query with the generation model (qmd's
    /// `expandQuery`); answer with [`Engine::query_answer_expansion`].
    Expand(String),
    /// Embed these texts (query prompt already applied), in order.
    Embed(Vec<String>),
    /// Score each document against the query with the reranker.
    Rerank { query: String, documents: Vec<String> },
    /// Finished: take the result with [`QueryJob::into_result`].
    Done,
}

/// A vector list to run once its text is embedded.
struct VectorSearch {
    query_type: &'static str,
    text: String,
    collection: Option<String>,
    weight: f64,
}

/// What the caller's models offer a query.
#[derive(Clone, Debug, Default)]
pub struct QueryModels {
    pub embedder: Option<EmbedderInfo>,
    pub reranker: Option<String>,
    /// The query-expansion model, when there is one.
    pub generator: Option<String>,
}

/// A `query` in progress. Each step hands out at most one model request;
/// the answer goes to [`Engine::query_answer_vectors`] or
/// [`Engine::query_answer_scores`].
pub struct QueryJob {
    request: QueryRequest,
    plan: Plan,
    config: Config,
    scope: Vec<String>,
    index: Rc<Index>,
    ranked: Vec<RankedList<DocAddress>>,
    vector_searches: Vec<VectorSearch>,
    models: QueryModels,
    /// The expansion came from the model (not qmd's fallback).
    expanded_by_model: bool,
    candidates: Vec<Candidate>,
    result: QueryResult,
    step: Pending,
}

/// What a query waits for. Each state carries what its answer needs, so
/// an answer in the wrong state has nothing to act on.
enum Pending {
    /// The plain query's expansion.
    Expansion,
    /// Query vectors: the embedder they come from, and each vector
    /// search's text in the [`QueryStep::Embed`] batch.
    Vectors {
        embedder: EmbedderInfo,
        slots: Vec<usize>,
    },
    /// Rerank scores: each candidate's chunk in the [`QueryStep::Rerank`]
    /// batch (identical chunks are scored once).
    Scores {
        slots: Vec<usize>,
    },
    Done,
}

/// How many distinct texts a batch with these slots holds.
fn distinct(slots: &[usize]) -> usize {
    slots.iter().max().map_or(0, |m| m + 1)
}

impl QueryJob {
    pub fn into_result(self) -> QueryResult {
        self.result
    }

    /// The plain query whose model expansion added no list, though some of
    /// its searches could run (lex always; vec/hyde where the index has
    /// vectors): qmd then drops the cached expansion, which would replay
    /// the same misses on every repeat.
    pub fn fruitless_expansion(&self) -> Option<&str> {
        if !self.expanded_by_model || self.result.expansion.is_empty() {
            return None;
        }
        let vectors = matches!(self.index.vectors(), Ok(Some(_)));
        let runnable = self.result.expansion.iter().any(|s| s.kind == SearchType::Lex || vectors);
        let contributed = self.result.lists.iter().any(|l| l.query_type != "original");
        (runnable && !contributed).then_some(self.plan.expand.as_deref()).flatten()
    }

    /// Runs one BM25 list (in one collection, else the whole scope); an
    /// empty list is not kept, as in qmd.
    fn keyword(
        &mut self,
        engine: &Engine,
        query: &str,
        query_type: &str,
        collection: Option<&String>,
        weight: f64,
    ) -> Result<()> {
        let within = collection.map_or(&self.scope[..], std::slice::from_ref);
        let filter = self.request.options.filter.as_ref();
        // With a filter every match is ranked, then the list keeps those
        // that pass: filtered before fusion, as qmd does.
        let fetch = if filter.is_some() { usize::MAX } else { LIST_LIMIT };
        let mut hits = search_lex(&self.index, &parse_lex(query), Some(within), fetch, &engine.bm25)?;
        if let Some(filter) = filter {
            hits = passing(&self.index, filter, hits, |h| h.address, LIST_LIMIT)?;
        }
        if hits.is_empty() {
            return Ok(());
        }
        self.result.lists.push(RankedListInfo {
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

impl Engine {
    /// The hybrid `query` (qmd's `hybridQuery` / `structuredSearch`)
    /// without models: keyword lists only, scores by fused position.
    pub fn query(&self, request: &QueryRequest) -> Result<QueryResult> {
        self.query_with(request, None)
    }

    /// The whole `query` with synchronous models. A model that fails to
    /// load degrades the way qmd does (its step is skipped, with a note).
    pub fn query_with(&self, request: &QueryRequest, inference: Option<&dyn Inference>) -> Result<QueryResult> {
        // A request refused is refused before any model loads.
        let plan = plan(request)?;
        let mut models = QueryModels::default();
        let mut notes = Vec::new();
        if let Some(inference) = inference {
            match inference.embedder() {
                Ok(info) => models.embedder = Some(info),
                Err(e) => notes.push(format!("embedding model unavailable: {}", e.message)),
            }
            models.reranker = inference.reranker();
        }
        // Only a plain query asks for the expansion model (a host may say
        // once that it is missing: not for typed searches).
        if let Some(inference) = inference.filter(|_| plan.expand.is_some()) {
            models.generator = inference.generator();
        }
        let (mut job, mut step) = self.query_planned(request, plan, models)?;
        job.result.notes.splice(0..0, notes);
        loop {
            step = match (step, inference) {
                (QueryStep::Done, _) => {
                    if let (Some(inference), Some(query)) = (inference, job.fruitless_expansion()) {
                        inference.forget_expansion(query);
                    }
                    return Ok(job.into_result());
                }
                (QueryStep::Expand(query), Some(inference)) => {
                    let answer = inference.expand(&query);
                    self.query_answer_expansion(&mut job, answer)?
                }
                (QueryStep::Embed(texts), Some(inference)) => {
                    let vectors = inference.embed(&texts)?;
                    self.query_answer_vectors(&mut job, vectors.into_iter().map(|e| e.vector).collect())?
                }
                (QueryStep::Rerank { query, documents }, Some(inference)) => {
                    match inference.rerank(&query, &documents) {
                        Ok(scores) => self.query_answer_scores(&mut job, scores)?,
                        Err(e) => {
                            // qmd: every score 0.5 when the reranker cannot run.
                            job.result.notes.push(format!(
                                "Reranker unavailable — skipping reranking ({}). Use --no-rerank to skip it.",
                                e.message
                            ));
                            self.query_answer_scores(&mut job, vec![0.5; documents.len()])?
                        }
                    }
                }
                // Model steps come only when models were given.
                (_, None) => return Err(Error::invalid("the query asked for models it was not given")),
            }
        }
    }

    /// Plans the query and runs its keyword lists: a plain query's probe
    /// first, then (unless the probe is a strong signal) its expansion.
    pub fn query_start(&self, request: &QueryRequest, models: QueryModels) -> Result<(QueryJob, QueryStep)> {
        self.query_planned(request, plan(request)?, models)
    }

    /// [`Self::query_start`] of a request already planned.
    fn query_planned(&self, request: &QueryRequest, plan: Plan, models: QueryModels) -> Result<(QueryJob, QueryStep)> {
        let config = self.config()?;
        let scope = self.scope(&config, &request.options.collections)?;
        let index = self.index()?;
        let result =
            QueryResult { primary_query: plan.primary.clone(), intent: plan.intent.clone(), ..Default::default() };
        let mut job = QueryJob {
            request: request.clone(),
            plan,
            config,
            scope,
            index,
            ranked: Vec::new(),
            vector_searches: Vec::new(),
            models,
            expanded_by_model: false,
            candidates: Vec::new(),
            result,
            step: Pending::Done,
        };
        let Some(text) = job.plan.expand.clone() else {
            let step = self.query_structured(&mut job)?;
            return Ok((job, step));
        };
        // Probe: a strong, clear BM25 winner skips expansion.
        job.keyword(self, &text, "original", None, 2.0)?;
        let probe = job.ranked.first().map(|l| &l.items[..]).unwrap_or_default();
        let (top, second) = (probe.first().map_or(0.0, |h| h.1), probe.get(1).map_or(0.0, |h| h.1));
        if job.plan.intent.is_none() && top >= STRONG_SIGNAL_MIN_SCORE && top - second >= STRONG_SIGNAL_MIN_GAP {
            job.result.strong_signal = Some(top);
        } else if job.models.generator.is_some() {
            job.step = Pending::Expansion;
            return Ok((job, QueryStep::Expand(text)));
        } else {
            job.result.expansion = fallback_expansion(&text);
            job.result.notes.push("no query-expansion model: used the deterministic fallback expansion".into());
        }
        let step = self.query_expanded(&mut job)?;
        Ok((job, step))
    }

    /// Takes the plain query's expansion (qmd's typed searches, the query's
    /// own text already dropped), or the reason there is none: qmd then
    /// searches the query alone.
    pub fn query_answer_expansion(&self, job: &mut QueryJob, answer: Result<Vec<TypedSearch>>) -> Result<QueryStep> {
        if !matches!(job.step, Pending::Expansion) {
            return Err(Error::invalid("this query is not waiting for an expansion"));
        }
        job.step = Pending::Done;
        match answer {
            Ok(searches) => {
                job.result.expansion = searches;
                job.expanded_by_model = true;
            }
            Err(e) => {
                job.result.notes.push(format!("query expansion failed ({}): searched the query alone", e.message))
            }
        }
        self.query_expanded(job)
    }

    /// A plain query's lists after its expansion: each `lex` expansion's
    /// BM25 list, then the original text and each vec/hyde expansion as
    /// vector searches (qmd's order).
    fn query_expanded(&self, job: &mut QueryJob) -> Result<QueryStep> {
        let text = job.plan.expand.clone().unwrap_or_default();
        let expansion = job.result.expansion.clone();
        for search in expansion.iter().filter(|s| s.kind == SearchType::Lex) {
            job.keyword(self, &search.query, "lex", None, 1.0)?;
        }
        let original = VectorSearch { query_type: "original", text, collection: None, weight: 2.0 };
        job.vector_searches.push(original);
        for search in expansion.iter().filter(|s| s.kind != SearchType::Lex) {
            let query_type = type_name(search.kind);
            job.vector_searches.push(VectorSearch {
                query_type,
                text: search.query.clone(),
                collection: None,
                weight: 1.0,
            });
        }
        self.query_vectors(job)
    }

    /// A query document's lists: each (search, collection) pair is its own
    /// list, and the first list gets double weight.
    fn query_structured(&self, job: &mut QueryJob) -> Result<QueryStep> {
        let named: Vec<Option<String>> = if job.request.options.collections.is_empty() {
            vec![None]
        } else {
            job.scope.iter().cloned().map(Some).collect()
        };
        let searches = job.plan.searches.clone();
        for search in searches.iter().filter(|s| s.kind == SearchType::Lex) {
            for collection in &named {
                let weight = if job.ranked.is_empty() { 2.0 } else { 1.0 };
                job.keyword(self, &search.query, "lex", collection.as_ref(), weight)?;
            }
        }
        // Weights of vector lists are settled when they run (the first
        // non-empty list overall gets 2×).
        for search in searches.iter().filter(|s| s.kind != SearchType::Lex) {
            let query_type = type_name(search.kind);
            for collection in &named {
                job.vector_searches.push(VectorSearch {
                    query_type,
                    text: search.query.clone(),
                    collection: collection.clone(),
                    weight: 1.0,
                });
            }
        }
        self.query_vectors(job)
    }

    /// Asks for the vector searches' query vectors when the index and the
    /// embedder allow them (a note says why not), else fuses.
    fn query_vectors(&self, job: &mut QueryJob) -> Result<QueryStep> {
        let mut embedder = None;
        if !job.vector_searches.is_empty() {
            match (&job.models.embedder, job.index.vectors()?) {
                (_, None) => {
                    job.result.notes.push("no vector index: vec/hyde searches were skipped (run 'qmd embed')".into())
                }
                (None, Some(_)) => job.result.notes.push("no embedding model: vec/hyde searches were skipped".into()),
                (Some(info), Some(_)) => match usable_vectors(&job.index, info) {
                    Ok(_) => embedder = Some(info.clone()),
                    Err(e) => job.result.notes.push(format!("vec/hyde searches were skipped: {}", e.message)),
                },
            }
        }
        let Some(embedder) = embedder else { return self.query_fuse(job) };
        // One batch for every vector search (identical texts embed once).
        let mut texts: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        for search in &job.vector_searches {
            let text = embedder.query_text(&search.text);
            let slot = texts.iter().position(|t| *t == text).unwrap_or_else(|| {
                texts.push(text);
                texts.len() - 1
            });
            slots.push(slot);
        }
        job.step = Pending::Vectors { embedder, slots };
        Ok(QueryStep::Embed(texts))
    }

    /// Takes the query vectors (in the order of [`QueryStep::Embed`]) and
    /// runs the vector lists.
    pub fn query_answer_vectors(&self, job: &mut QueryJob, vectors: Vec<Vec<f32>>) -> Result<QueryStep> {
        let (embedder, slots) = match std::mem::replace(&mut job.step, Pending::Done) {
            Pending::Vectors { embedder, slots } if vectors.len() == distinct(&slots) => (embedder, slots),
            Pending::Vectors { embedder, slots } => {
                let expected = distinct(&slots);
                job.step = Pending::Vectors { embedder, slots };
                return Err(Error::invalid(format!("expected {expected} query vectors, got {}", vectors.len())));
            }
            other => {
                job.step = other;
                return Err(Error::invalid("this query is not waiting for vectors"));
            }
        };
        let index = job.index.clone();
        // The job's own snapshot: the vectors checked at its start are there.
        let set = usable_vectors(&index, &embedder)?.ok_or_else(|| Error::invalid("the index has no vectors"))?;
        let docs = DocsByHash::new(&index, &job.scope, job.request.options.filter.as_ref())?;
        for (search, &slot) in job.vector_searches.iter().zip(&slots) {
            let hits = vector_list(set, &docs, &vectors[slot], search.collection.as_deref(), LIST_LIMIT)?;
            if hits.is_empty() {
                continue;
            }
            let structured = job.plan.expand.is_none();
            let weight = if structured && job.ranked.is_empty() { 2.0 } else { search.weight };
            job.result.lists.push(RankedListInfo {
                source: "vec".into(),
                query_type: search.query_type.into(),
                query: search.text.clone(),
                collection: search.collection.clone(),
                weight,
                hits: hits.len() as u32,
            });
            let items = hits.into_iter().map(|h| (h.address, h.score)).collect();
            job.ranked.push(RankedList { weight, items });
        }
        self.query_fuse(job)
    }

    /// Fuses the lists, picks each candidate's best chunk, and asks for
    /// reranking when a reranker is there and wanted.
    fn query_fuse(&self, job: &mut QueryJob) -> Result<QueryStep> {
        let fused = reciprocal_rank_fusion(&job.ranked);
        let plan = self.strategy_plan(&job.index, &job.config, job.request.chunk_strategy)?;
        for rrf in fused.into_iter().take(job.request.candidate_limit.max(1)) {
            let segment = &job.index.segments[rrf.key.segment];
            let record = segment.doc(rrf.key.doc)?;
            let body = segment.body(&record)?;
            let strategy = plan.of(&record.collection);
            let declarations = Declarations::of(&body, &record.path, strategy).unwrap_or_else(|fallback| {
                let note = format!("{fallback} ({})", crate::display::escape_controls(&record.path));
                if !job.result.notes.iter().any(|n| n.starts_with(fallback.language.name())) {
                    job.result.notes.push(note);
                }
                Declarations::default()
            });
            let chunk = best_chunk(&body, &declarations, &job.plan.primary, job.plan.intent.as_deref());
            job.candidates.push(Candidate { address: rrf.key, rrf, body, chunk });
        }
        if !job.request.rerank || job.candidates.is_empty() {
            return self.query_finish(job, None);
        }
        if job.models.reranker.is_none() {
            job.result.notes.push("no reranker model: scores are the fused position 1/rank".into());
            return self.query_finish(job, None);
        }
        // Identical chunk texts are scored once.
        let mut documents: Vec<String> = Vec::new();
        let mut slots = Vec::new();
        for candidate in &job.candidates {
            let slot = documents.iter().position(|d| *d == candidate.chunk.text).unwrap_or_else(|| {
                documents.push(candidate.chunk.text.clone());
                documents.len() - 1
            });
            slots.push(slot);
        }
        let query = match &job.plan.intent {
            Some(intent) => format!("{intent}\n\n{}", job.plan.primary),
            None => job.plan.primary.clone(),
        };
        job.step = Pending::Scores { slots };
        Ok(QueryStep::Rerank { query, documents })
    }

    /// Takes the reranker's scores (in the order of [`QueryStep::Rerank`]).
    pub fn query_answer_scores(&self, job: &mut QueryJob, scores: Vec<f32>) -> Result<QueryStep> {
        let Pending::Scores { slots } = &job.step else {
            return Err(Error::invalid("this query is not waiting for rerank scores"));
        };
        if scores.len() != distinct(slots) {
            return Err(Error::invalid(format!("expected {} rerank scores, got {}", distinct(slots), scores.len())));
        }
        let per_candidate = slots.iter().map(|&s| f64::from(scores[s])).collect();
        self.query_finish(job, Some(per_candidate))
    }

    /// qmd's blend (or the position alone), then dedupe, filter and cut,
    /// and each hit's snippet.
    fn query_finish(&self, job: &mut QueryJob, scores: Option<Vec<f64>>) -> Result<QueryStep> {
        job.step = Pending::Done;
        let options = &job.request.options;
        let mut scored: Vec<(f64, Option<f64>, f64, usize, Candidate)> = Vec::new();
        for (i, candidate) in std::mem::take(&mut job.candidates).into_iter().enumerate() {
            let rank = i + 1;
            let position = 1.0 / rank as f64;
            let (score, rerank, weight) = match &scores {
                Some(s) => {
                    let w = blend_weight(rank);
                    (w * position + (1.0 - w) * s[i], Some(s[i]), w)
                }
                None => (position, None, if job.request.rerank { blend_weight(rank) } else { 1.0 }),
            };
            scored.push((score, rerank, weight, rank, candidate));
        }
        // Stable: equal scores keep fused order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut seen = HashSet::new();
        for (score, rerank_score, blend_weight, rank, candidate) in scored {
            if !seen.insert(candidate.address) || score < options.min_score {
                continue;
            }
            if job.result.hits.len() >= options.limit {
                break;
            }
            let chunk_len = candidate.chunk.text.chars().count();
            let focus = SnippetFocus {
                query: &job.plan.primary,
                chunk: Some((candidate.chunk.pos, chunk_len)),
                intent: job.plan.intent.as_deref(),
            };
            let found = Found { address: candidate.address, score, body: Some(candidate.body) };
            let hit = self.hit(&job.config, &job.index, found, &focus, options)?;
            job.result.hits.push(QueryHit {
                hit,
                rrf_rank: rank as u32,
                rrf_score: candidate.rrf.score,
                top_rank_bonus: candidate.rrf.top_rank_bonus,
                contributions: candidate.rrf.contributions,
                rerank_score,
                blend_weight,
            });
        }
        Ok(QueryStep::Done)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::source::MemorySource;

    fn engine() -> Engine {
        let mut notes = MemorySource::new();
        notes.insert("/n", "cap.md", "# CAP theorem\n\nConsistency, availability and partition tolerance.", 0);
        notes.insert("/n", "raft.md", "# Raft\n\nLeader election and log replication for consistency.", 0);
        notes.insert("/n", "cooking.md", "# Bread\n\nFlour, water, salt and time.", 0);
        notes.insert("/m", "avail.md", "# Availability zones\n\nAvailability across regions.", 0);
        crate::engine::indexed_in_memory(notes, &[("/n", "n"), ("/m", "m")])
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

    /// A query document is held to the searches a `searches` list may
    /// have: a thousand `lex:` lines fit in the length limit.
    #[test]
    fn query_documents_hold_at_most_max_searches() {
        let document = |n: usize| (0..n).map(|i| format!("lex: c{i}\n")).collect::<String>();
        assert!(engine().query(&request(&document(MAX_SEARCHES))).is_ok());
        let err = engine().query(&request(&document(1000))).map(|_| ()).unwrap_err();
        assert!(err.message.contains("at most 10 searches") && err.message.contains("has 1000"), "{}", err.message);
    }

    /// A collection named twice is searched once: each name would be
    /// another list per search.
    #[test]
    fn repeated_collections_are_searched_once() {
        let mut req = request("lex: availability\nlex: consistency");
        req.options.collections = ["n", "m"].repeat(5000).into_iter().map(String::from).collect();
        let result = engine().query(&req).unwrap();
        assert_eq!(result.lists.len(), 3, "{:?}", result.lists.iter().map(|l| &l.collection).collect::<Vec<_>>());
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
        let chunk = best_chunk(&body, &Declarations::default(), "raft leader", None);
        assert!(chunk.text.contains("raft leader") && chunk.pos > 0);
    }
}
