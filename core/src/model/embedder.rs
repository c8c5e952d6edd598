//! The embedding model, whichever its file format: a Hugging Face
//! safetensors repository (burn, CPU or GPU) or a GGUF file (the quantized
//! kernels, CPU).

use super::{GgufEncoder, SentenceEncoder, TextTokenizer};
use crate::error::Result;
use crate::inference::{EmbedderInfo, Embedding};

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
        match self {
            TextEmbedder::SafeTensors(e) => e.embed_counted(texts),
            TextEmbedder::Gguf(e) => e.embed_counted(texts),
        }
    }

    /// [`embed_counted`](Self::embed_counted) with asynchronous readback
    /// from a GPU (the only way to read WebGPU in a browser).
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        match self {
            TextEmbedder::SafeTensors(e) => e.embed_counted_async(texts).await,
            TextEmbedder::Gguf(e) => e.embed_counted_async(texts).await,
        }
    }

    /// Unit vectors only.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        match self {
            TextEmbedder::SafeTensors(e) => e.embed(texts),
            TextEmbedder::Gguf(e) => {
                let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
                Ok(e.embed_counted(&owned)?.into_iter().map(|e| e.vector).collect())
            }
        }
    }
}
