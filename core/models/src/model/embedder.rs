//! The embedding model, whichever its file format: a Hugging Face
//! safetensors repository (burn, CPU or GPU) or a GGUF file (the quantized
//! kernels, CPU).

use super::{BurnEmbedder, KernelEmbedder, TextTokenizer};
use crate::error::{Error, Result};
use qmd_base::embedding::{EmbedderInfo, Embedding};

pub enum TextEmbedder {
    /// A safetensors repository in f32 on burn (a width the kernels cannot
    /// block, or the reference path).
    Burn(Box<BurnEmbedder>),
    /// A GGUF file, or a repository quantized at load, on the kernels.
    Kernels(Box<KernelEmbedder>),
}

impl TextEmbedder {
    pub fn describe(&self, model: &str) -> EmbedderInfo {
        match self {
            TextEmbedder::Burn(e) => e.describe(model),
            TextEmbedder::Kernels(e) => e.describe(model),
        }
    }

    pub fn dimension(&self) -> usize {
        match self {
            TextEmbedder::Burn(e) => e.dimension(),
            TextEmbedder::Kernels(e) => e.dimension(),
        }
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        match self {
            TextEmbedder::Burn(e) => e.tokenizer(),
            TextEmbedder::Kernels(e) => e.tokenizer(),
        }
    }

    /// Unit vectors with each text's untruncated token count.
    pub fn embed_counted(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        finite(match self {
            TextEmbedder::Burn(e) => e.embed_counted(texts),
            TextEmbedder::Kernels(e) => e.embed_counted(texts),
        })
    }

    /// [`embed_counted`](Self::embed_counted) with asynchronous readback
    /// from a GPU (the only way to read WebGPU in a browser).
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        finite(match self {
            TextEmbedder::Burn(e) => e.embed_counted_async(texts).await,
            TextEmbedder::Kernels(e) => e.embed_counted_async(texts).await,
        })
    }

    /// Unit vectors only.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let vectors = match self {
            TextEmbedder::Burn(e) => e.embed(texts)?,
            TextEmbedder::Kernels(e) => {
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
