//! The embedding model, whichever its file format: a Hugging Face
//! safetensors repository (burn, CPU or GPU) or a GGUF file (the quantized
//! kernels, CPU).

use super::{GgufEncoder, SentenceEncoder, TextTokenizer};
use crate::error::{Error, Result};
use qmd_base::embedding::{EmbedderInfo, Embedding};

pub enum TextEmbedder {
    SafeTensors(Box<SentenceEncoder>),
    Gguf(Box<GgufEncoder>),
}

impl TextEmbedder {
    pub fn describe(&self, model: &str) -> EmbedderInfo {
        match self {
            TextEmbedder::SafeTensors(e) => e.describe(model),
            TextEmbedder::Gguf(e) => e.describe(model),
        }
    }

    pub fn dimension(&self) -> usize {
        match self {
            TextEmbedder::SafeTensors(e) => e.dimension(),
            TextEmbedder::Gguf(e) => e.dimension(),
        }
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        match self {
            TextEmbedder::SafeTensors(e) => e.tokenizer(),
            TextEmbedder::Gguf(e) => e.tokenizer(),
        }
    }

    /// Unit vectors with each text's untruncated token count.
    pub fn embed_counted(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        finite(match self {
            TextEmbedder::SafeTensors(e) => e.embed_counted(texts),
            TextEmbedder::Gguf(e) => e.embed_counted(texts),
        })
    }

    /// [`embed_counted`](Self::embed_counted) with asynchronous readback
    /// from a GPU (the only way to read WebGPU in a browser).
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        finite(match self {
            TextEmbedder::SafeTensors(e) => e.embed_counted_async(texts).await,
            TextEmbedder::Gguf(e) => e.embed_counted_async(texts).await,
        })
    }

    /// Unit vectors only.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let vectors = match self {
            TextEmbedder::SafeTensors(e) => e.embed(texts)?,
            TextEmbedder::Gguf(e) => {
                let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
                e.embed_counted(&owned)?.into_iter().map(|e| e.vector).collect()
            }
        };
        match vectors.iter().flatten().all(|v| v.is_finite()) {
            true => Ok(vectors),
            false => Err(non_finite()),
        }
    }
}

/// Embeddings whose every value is finite, or the error saying the model
/// is damaged: vectors with NaN must never reach an index or a client.
fn finite(embeddings: Result<Vec<Embedding>>) -> Result<Vec<Embedding>> {
    let embeddings = embeddings?;
    match embeddings.iter().all(|e| e.vector.iter().all(|v| v.is_finite())) {
        true => Ok(embeddings),
        false => Err(non_finite()),
    }
}

fn non_finite() -> Error {
    Error::invalid("the model's vectors hold NaN or infinite values: its weights are damaged (see `qmd doctor`)")
}
