//! The embedding model and the reranker from either file format: a
//! safetensors repository or a GGUF file (the query-expansion model, one
//! GGUF file, loads beside its own code in `generate/expander.rs`). One way
//! to load them for every host: the CLI's model slots, the edge component,
//! the browser. The engine's kernels run GGUF files and, quantized at load,
//! BERT embedding repositories (the fastest path the project has); burn
//! runs cross-encoders and the repositories the kernels cannot, in f32.
//! Either on the device's GPU when it has one.

use super::bert_checkpoint::runs_on_kernels;
use super::config::BertConfig;
use super::{
    BurnEmbedder, BurnRanker, KernelEmbedder, KernelRanker, ModelDevice, ModelFiles, TextEmbedder, TextReranker,
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
            return KernelEmbedder::from_repository(&files, device).map(|e| TextEmbedder::Kernels(Box::new(e)));
        }
        TextEmbedder::load_f32(files, device)
    }

    fn on_kernels(&self) -> bool {
        matches!(self, TextEmbedder::Kernels(_))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        KernelEmbedder::load_on(name, bytes, device).map(|e| TextEmbedder::Kernels(Box::new(e)))
    }
}

impl TextEmbedder {
    /// A repository in f32 on burn, as sentence-transformers computes it
    /// (the reference the quantized path is measured against).
    pub fn load_f32(files: ModelFiles, device: &ModelDevice) -> Result<Self> {
        BurnEmbedder::load(files, &device.device).map(|e| TextEmbedder::Burn(Box::new(e)))
    }
}

impl Loadable for TextReranker {
    fn load(files: ModelFiles, device: &ModelDevice) -> Result<Self> {
        BurnRanker::load(files, &device.device).map(|r| TextReranker::Burn(Box::new(r)))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        KernelRanker::load_on(name, bytes, device).map(|r| TextReranker::Kernels(Box::new(r)))
    }

    fn on_kernels(&self) -> bool {
        matches!(self, TextReranker::Kernels(_))
    }
}
