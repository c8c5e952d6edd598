//! Vector search (qmd `vsearch`, and the vector lists of `query`).
//!
//! Vectors are per content hash; a list maps each matching content to the
//! live documents in scope that have it, scored by the cosine of their
//! best chunk.

use std::collections::{HashMap, HashSet};

use super::Engine;
use super::read::{Found, SnippetFocus};
use crate::api::*;
use crate::error::{Error, Result};
use crate::index::{DocAddress, Index};
use crate::inference::{EmbedderInfo, Inference};
use crate::metadata::Filter;
use crate::vector::{VectorSet, search};

/// One document of a vector list.
pub(super) struct VectorHit {
    pub address: DocAddress,
    pub score: f64,
    /// Char offset of the best chunk.
    pub pos: usize,
}

/// The fallback expansion's `hyde` text, which vsearch also searches when
/// no generation model exists (qmd's `vectorSearchQuery` keeps vec/hyde).
fn fallback_hyde(query: &str) -> String {
    format!("Information about {query}")
}

/// The index's vectors if they were made by `embedder`; an index with
/// vectors of another model is an error with qmd's fix.
pub(super) fn usable_vectors<'a>(index: &'a Index, embedder: &EmbedderInfo) -> Result<Option<&'a VectorSet>> {
    let Some(set) = index.vectors()? else { return Ok(None) };
    set.manifest.check_model(&embedder.model, embedder.dimension, &super::embed_fingerprint(embedder))?;
    Ok(Some(set))
}

/// The live documents of a scope by content hash, built once per search
/// and shared by all its vector lists.
pub(super) struct DocsByHash<'a>(HashMap<&'a str, Vec<(DocAddress, &'a str)>>);

impl<'a> DocsByHash<'a> {
    /// Only documents that pass `filter`, when given: a vector search then
    /// never returns others, and its limit counts only those.
    pub fn new(index: &'a Index, scope: &[String], filter: Option<&Filter>) -> Result<DocsByHash<'a>> {
        let scope: HashSet<&str> = scope.iter().map(String::as_str).collect();
        let mut docs: HashMap<&str, Vec<(DocAddress, &str)>> = HashMap::new();
        for entry in index.catalog()? {
            let collection = entry.record.collection.as_str();
            let passes = || filter.map_or(Ok(true), |f| index.passes(entry.address, f));
            if scope.contains(collection) && passes()? {
                docs.entry(entry.record.hash.as_str()).or_default().push((entry.address, collection));
            }
        }
        Ok(DocsByHash(docs))
    }

    /// The documents with `hash`, only those in `collection` when given.
    fn of<'s>(&'s self, hash: &str, collection: Option<&'s str>) -> impl Iterator<Item = DocAddress> + 's {
        let docs = self.0.get(hash).map_or(&[][..], Vec::as_slice);
        docs.iter().filter(move |(_, c)| collection.is_none_or(|w| w == *c)).map(|(address, _)| *address)
    }
}

/// Searches `vector` among contents that documents of `docs` (in
/// `collection`, when given) have.
pub(super) fn vector_list(
    set: &VectorSet,
    docs: &DocsByHash<'_>,
    vector: &[f32],
    collection: Option<&str>,
    limit: usize,
) -> Result<Vec<VectorHit>> {
    let matches = search(set, vector, &|hash| docs.of(hash, collection).next().is_some(), limit)?;
    let mut hits = Vec::new();
    for m in matches {
        for address in docs.of(&m.hash, collection) {
            hits.push(VectorHit { address, score: f64::from(m.score), pos: m.pos as usize });
        }
    }
    hits.truncate(limit);
    Ok(hits)
}

impl Engine {
    /// qmd `vsearch`: the query and its vec/hyde expansions (the fallback
    /// `hyde` text without an expansion model) embedded and searched; each
    /// document keeps its best score. Default `min_score` for vsearch is
    /// 0.3 (the caller sets it).
    pub fn vsearch_with(
        &self,
        query: &str,
        options: &SearchOptions,
        inference: &dyn Inference,
    ) -> Result<Vec<SearchHit>> {
        crate::query::check_length("Query", query)?;
        let index = self.index()?;
        if index.vectors()?.is_none() {
            return Ok(Vec::new());
        }
        let embedder = inference.embedder()?;
        let mut texts = vec![embedder.query_text(query)];
        if inference.generator().is_some() {
            // qmd: a failed expansion leaves the query alone; lex lines
            // target BM25, not vectors.
            let expansion = inference.expand(query).unwrap_or_default();
            texts.extend(expansion.iter().filter(|s| s.kind != SearchType::Lex).map(|s| embedder.query_text(&s.query)));
        } else {
            texts.push(embedder.query_text(&fallback_hyde(query)));
        }
        let vectors: Vec<Vec<f32>> = inference.embed(&texts)?.into_iter().map(|e| e.vector).collect();
        self.vector_search(&embedder, &vectors, query, options)
    }

    /// The search half of `vsearch`, for callers that embedded the texts
    /// themselves (asynchronously, in the browser).
    pub fn vector_search(
        &self,
        embedder: &EmbedderInfo,
        vectors: &[Vec<f32>],
        query: &str,
        options: &SearchOptions,
    ) -> Result<Vec<SearchHit>> {
        let config = self.config()?;
        let scope = self.scope(&config, &options.collections)?;
        let index = self.index()?;
        let Some(set) = usable_vectors(&index, embedder)? else { return Ok(Vec::new()) };
        let docs = DocsByHash::new(&index, &scope, options.filter.as_ref())?;
        let mut best: HashMap<DocAddress, VectorHit> = HashMap::new();
        for vector in vectors {
            if vector.len() != embedder.dimension {
                return Err(Error::invalid("query vector has the wrong dimension"));
            }
            for hit in vector_list(set, &docs, vector, None, options.limit)? {
                if best.get(&hit.address).is_none_or(|b| hit.score > b.score) {
                    best.insert(hit.address, hit);
                }
            }
        }
        let mut ranked: Vec<VectorHit> = best.into_values().collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.address.cmp(&b.address)));
        let mut out = Vec::new();
        for hit in ranked.into_iter().filter(|h| h.score >= options.min_score).take(options.limit) {
            let focus = SnippetFocus { query, chunk: Some((hit.pos, 0)), intent: None };
            let found = Found { address: hit.address, score: hit.score, body: None };
            out.push(self.hit(&config, &index, found, &focus, options)?);
        }
        Ok(out)
    }
}
