//! Model architectures over GGUF weights, one module each, on the
//! quantized kernels of [`crate::kernels`]: [`bert`] (sentence encoders
//! such as all-MiniLM-L6-v2 converted by llama.cpp), [`gemma_embedding`]
//! (EmbeddingGemma), [`decoder`] (causal language models: Llama, Qwen3).
//! Gemma's and the decoders' attention block is [`block`]; the shared
//! operations (norms, activations, attention, pooling) are in [`ops`].

mod attention_shape;
pub mod backend;
pub mod bert;
pub mod block;
pub mod decoder;
mod flash_f16;
pub mod gemma_embedding;
pub mod kv_cache;
pub(crate) mod ops;
mod weights;

pub use backend::{Backend, Cpu};
pub use decoder::Decoder;
pub use weights::{Matrix, ModelBytes, Vector, Weights, WeightsBuilder};

use crate::error::{Error, Result};
use crate::gguf::GgufFile;

/// A sentence-embedding model from a GGUF file, whichever its
/// architecture.
pub enum EmbeddingModel {
    Bert(bert::Bert),
    Gemma(gemma_embedding::GemmaEmbedding),
}

impl EmbeddingModel {
    pub fn load(file: &GgufFile, bytes: ModelBytes) -> Result<EmbeddingModel> {
        match file.architecture()? {
            "bert" => Ok(EmbeddingModel::Bert(bert::Bert::load(file, bytes)?)),
            "gemma-embedding" => Ok(EmbeddingModel::Gemma(gemma_embedding::GemmaEmbedding::load(file, bytes)?)),
            other => Err(Error::invalid(format!(
                "{}: architecture '{other}' is not an embedding model qmd-wasm runs (bert, gemma-embedding)",
                file.name()
            ))),
        }
    }

    /// Width of the vectors out.
    pub fn dimension(&self) -> usize {
        match self {
            EmbeddingModel::Bert(m) => m.shape.width,
            EmbeddingModel::Gemma(m) => m.shape.output_width,
        }
    }

    /// Tokens one sequence may hold, special tokens included.
    pub fn context(&self) -> usize {
        match self {
            EmbeddingModel::Bert(m) => m.shape.context,
            EmbeddingModel::Gemma(m) => m.shape.block.context,
        }
    }

    /// The query and document prompts qmd gives the model
    /// ([`qmd_base::embedding::EmbedderInfo`]'s templates): EmbeddingGemma's
    /// retrieval prompts; none for BERT models, which were not trained
    /// with any.
    pub fn prompts(&self) -> (&'static str, &'static str) {
        match self {
            EmbeddingModel::Bert(_) => ("", ""),
            EmbeddingModel::Gemma(_) => ("task: search result | query: ", "title: {title} | text: {text}"),
        }
    }

    /// One unit vector per sequence of token ids, computed on `b`.
    pub fn embed<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        Ok(self.unit_vectors(b.read(self.pooled(b, sequences)?)?))
    }

    /// Each sequence's pooled row, `[sequences × dimension]`, recorded on
    /// `b` (read it, then [`unit_vectors`](Self::unit_vectors)).
    pub fn pooled<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<B::Tensor> {
        match self {
            EmbeddingModel::Bert(m) => m.pooled(b, sequences),
            EmbeddingModel::Gemma(m) => m.pooled(b, sequences),
        }
    }

    /// The pooled rows read back, as unit vectors.
    pub fn unit_vectors(&self, pooled: Vec<f32>) -> Vec<Vec<f32>> {
        let mut vectors: Vec<Vec<f32>> = pooled.chunks_exact(self.dimension()).map(<[f32]>::to_vec).collect();
        vectors.iter_mut().for_each(|v| ops::l2_normalize(v));
        vectors
    }
}
