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

/// The embedding model as the engine sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbedderInfo {
    /// Hugging Face repo id or local path: recorded with the vectors.
    pub model: String,
    pub dimension: usize,
    /// The model's window in tokens, special tokens included.
    pub max_tokens: usize,
    /// Prefixes the model card defines (e5's `"query: "`…), else empty.
    pub query_prompt: String,
    pub document_prompt: String,
}

impl EmbedderInfo {
    /// A query as the model expects it (its query prompt first).
    pub fn query_text(&self, text: &str) -> String {
        format!("{}{text}", self.query_prompt)
    }

    /// A document chunk as the model expects it.
    pub fn document_text(&self, text: &str) -> String {
        format!("{}{text}", self.document_prompt)
    }
}

/// One embedded text.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// Unit-length vector.
    pub vector: Vec<f32>,
    /// Tokens of the text before truncation, special tokens excluded; more
    /// than the window means the vector saw only the start.
    pub tokens: u32,
}

/// Models for the engine. Every method may fail (model missing, download
/// needed); the engine degrades the way qmd does.
pub trait Inference {
    fn embedder(&self) -> Result<EmbedderInfo>;
    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>>;
    /// The reranker's model id, or `None` when reranking is unavailable.
    fn reranker(&self) -> Option<String>;
    /// Relevance in [0, 1] of each document to the query.
    fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>>;
}
