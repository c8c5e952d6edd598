//! The embedding model and the reranker from either file format: a
//! safetensors repository or a GGUF file; the query-expansion model from a
//! GGUF file. One way to load them for every host: the CLI's model slots,
//! the edge component, the browser. The engine's kernels run GGUF files
//! and, quantized at load, BERT embedding repositories (the fastest path
//! the project has); burn runs cross-encoders and the repositories the
//! kernels cannot, in f32. Either on the device's GPU when it has one.

use super::bert_checkpoint::runs_on_kernels;
use super::config::BertConfig;
use super::{
    CrossEncoder, GgufEncoder, GgufRanker, ModelDevice, ModelFiles, SentenceEncoder, TextEmbedder, TextReranker,
};
use crate::arch::ModelBytes;
use crate::error::Result;

/// Models that load from a repository's files or a GGUF file.
pub trait Loadable: Sized {
    fn load(files: ModelFiles, device: &ModelDevice) -> Result<Self>;
    /// From a GGUF file's bytes; `name` is how errors call it.
    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self>;
    /// Whether the engine's kernels run it (burn otherwise).
    fn on_kernels(&self) -> bool;
}

impl Loadable for TextEmbedder {
    fn load(files: ModelFiles, device: &ModelDevice) -> Result<Self> {
        if runs_on_kernels(&BertConfig::parse(&files.config)?) {
            return GgufEncoder::from_repository(&files, device).map(|e| TextEmbedder::Gguf(Box::new(e)));
        }
        TextEmbedder::load_f32(files, device)
    }

    fn on_kernels(&self) -> bool {
        matches!(self, TextEmbedder::Gguf(_))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        GgufEncoder::load_on(name, bytes, device).map(|e| TextEmbedder::Gguf(Box::new(e)))
    }
}

impl TextEmbedder {
    /// A repository in f32 on burn, as sentence-transformers computes it
    /// (the reference the quantized path is measured against).
    pub fn load_f32(files: ModelFiles, device: &ModelDevice) -> Result<Self> {
        SentenceEncoder::load(files, &device.device).map(|e| TextEmbedder::SafeTensors(Box::new(e)))
    }
}

impl Loadable for TextReranker {
    fn load(files: ModelFiles, device: &ModelDevice) -> Result<Self> {
        CrossEncoder::load(files, &device.device).map(|r| TextReranker::SafeTensors(Box::new(r)))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        GgufRanker::load_on(name, bytes, device).map(|r| TextReranker::Gguf(Box::new(r)))
    }

    fn on_kernels(&self) -> bool {
        matches!(self, TextReranker::Gguf(_))
    }
}

/// qmd's query-expansion model: a GGUF chat model, decoded on the
/// process's device (its GPU where it has one).
impl Loadable for crate::generate::QueryExpander {
    fn load(_files: ModelFiles, _device: &ModelDevice) -> Result<Self> {
        Err(crate::error::Error::invalid(
            "a query-expansion model is one GGUF file: hf:owner/repo/file.gguf, or the path of a .gguf file",
        ))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        crate::generate::QueryExpander::load_on(name, bytes, device)
    }

    fn on_kernels(&self) -> bool {
        true
    }
}
