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

/// Searches `vector` among contents that live documents in `scope` have.
pub(super) fn vector_list(
    index: &Index,
    set: &VectorSet,
    vector: &[f32],
    scope: &[String],
    limit: usize,
) -> Result<Vec<VectorHit>> {
    let scope: HashSet<&str> = scope.iter().map(String::as_str).collect();
    let mut docs: HashMap<&str, Vec<DocAddress>> = HashMap::new();
    for entry in index.catalog()? {
        if scope.contains(entry.record.collection.as_str()) {
            docs.entry(entry.record.hash.as_str()).or_default().push(entry.address);
        }
    }
    let matches = search(set, vector, &|hash| docs.contains_key(hash), limit)?;
    let mut hits = Vec::new();
    for m in matches {
        for &address in &docs[m.hash.as_str()] {
            hits.push(VectorHit { address, score: f64::from(m.score), pos: m.pos as usize });
        }
    }
    hits.truncate(limit);
    Ok(hits)
}

impl Engine {
    /// qmd `vsearch`: the query (and the fallback `hyde` text) embedded and
    /// searched; each document keeps its best score. Default `min_score`
    /// for vsearch is 0.3 (the caller sets it).
    pub fn vsearch_with(
        &self,
        query: &str,
        options: &SearchOptions,
        inference: &dyn Inference,
    ) -> Result<Vec<SearchHit>> {
        let embedder = inference.embedder()?;
        let texts: Vec<String> =
            [query.to_string(), fallback_hyde(query)].iter().map(|t| format!("{}{t}", embedder.query_prompt)).collect();
        let index = self.index()?;
        if index.vectors()?.is_none() {
            return Ok(Vec::new());
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
        let mut best: HashMap<DocAddress, VectorHit> = HashMap::new();
        for vector in vectors {
            if vector.len() != embedder.dimension {
                return Err(Error::invalid("query vector has the wrong dimension"));
            }
            for hit in vector_list(&index, set, vector, &scope, options.limit)? {
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
