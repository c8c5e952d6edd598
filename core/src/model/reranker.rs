//! The reranker, whichever its file format: a cross-encoder from a Hugging
//! Face safetensors repository (burn, CPU or GPU) or a GGUF ranking model
//! such as Qwen3-Reranker (the quantized kernels, CPU).

use super::{CrossEncoder, GgufRanker};
use crate::error::Result;

pub enum TextReranker {
    SafeTensors(Box<CrossEncoder>),
    Gguf(Box<GgufRanker>),
}

impl TextReranker {
    /// Relevance of each document to the query, in [0, 1], input order.
    pub fn score(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        match self {
            TextReranker::SafeTensors(r) => r.score(query, documents),
            TextReranker::Gguf(r) => r.score(query, documents),
        }
    }

    /// [`score`](Self::score) with asynchronous readback from a GPU, as
    /// [`super::TextEmbedder::embed_counted_async`].
    pub async fn score_async(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        match self {
            TextReranker::SafeTensors(r) => r.score_async(query, documents).await,
            TextReranker::Gguf(r) => r.score_async(query, documents).await,
        }
    }
}
