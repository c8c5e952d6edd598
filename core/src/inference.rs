//! What the engine needs from models, and nothing of how they run: the
//! WASI component asks its host through the WIT `inference` import, the
//! browser calls burn on WebGPU, native tests call burn directly.
//!
//! Engine work that needs models is split into steps ([`EmbedJob`],
//! [`QueryJob`](crate::QueryJob)) that hand out requests and take answers,
//! so a caller whose models answer asynchronously can drive them; the
//! `*_with` drivers are the synchronous loop around them.
//!
//! [`EmbedJob`]: crate::EmbedJob

use crate::error::Result;

pub use qmd_base::embedding::{EmbedderInfo, Embedding};

/// Models for the engine. Every method may fail (model missing, download
/// needed); the engine degrades the way qmd does.
pub trait Inference {
    fn embedder(&self) -> Result<EmbedderInfo>;
    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>>;
    /// The reranker's model id, or `None` when reranking is unavailable.
    fn reranker(&self) -> Option<String>;
    /// Relevance in [0, 1] of each document to the query.
    fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>>;
    /// The query-expansion model's id, or `None` when expansion is off or
    /// its model unavailable (queries then expand by qmd's fallback).
    fn generator(&self) -> Option<String> {
        None
    }
    /// qmd's expansion of a plain query: the model's lines read by
    /// [`parse_expansion`](crate::query::expansion::parse_expansion), from
    /// the implementation's cache when it has them.
    fn expand(&self, _query: &str) -> Result<Vec<crate::api::TypedSearch>> {
        Err(crate::error::Error::invalid("no query-expansion model"))
    }
    /// Drops a cached expansion whose searches all found nothing (qmd's
    /// `invalidateExpansionCache`), so a repeat asks the model again.
    fn forget_expansion(&self, _query: &str) {}
}
