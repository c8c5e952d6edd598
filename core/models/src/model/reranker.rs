//! The reranker, whichever its file format: a cross-encoder from a Hugging
//! Face safetensors repository (burn, CPU or GPU) or a GGUF ranking model
//! such as Qwen3-Reranker (the quantized kernels, CPU).

use super::{BurnRanker, KernelRanker};
use crate::error::{Error, Result};

pub enum TextReranker {
    /// A safetensors cross-encoder in f32 on burn.
    Burn(Box<BurnRanker>),
    /// A GGUF reranker on the kernels.
    Kernels(Box<KernelRanker>),
}

impl TextReranker {
    /// Relevance of each document to the query, in [0, 1], input order.
    pub fn score(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        finite(match self {
            TextReranker::Burn(r) => r.score(query, documents),
            TextReranker::Kernels(r) => r.score(query, documents),
        })
    }

    /// [`score`](Self::score) with asynchronous readback from a GPU, as
    /// [`super::TextEmbedder::embed_counted_async`].
    pub async fn score_async(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        finite(match self {
            TextReranker::Burn(r) => r.score_async(query, documents).await,
            TextReranker::Kernels(r) => r.score_async(query, documents).await,
        })
    }
}

/// Scores that are all finite, or the error saying the model is damaged: a
/// NaN score would sort arbitrarily and reach the results as `null`.
fn finite(scores: Result<Vec<f32>>) -> Result<Vec<f32>> {
    let scores = scores?;
    match scores.iter().all(|s| s.is_finite()) {
        true => Ok(scores),
        false => Err(Error::invalid(
            "the reranker's scores hold NaN or infinite values: its weights are damaged (see `qmd doctor`)",
        )),
    }
}
