//! The embedding model and the reranker from either file format: a
//! safetensors repository (burn, on its device) or a GGUF file (the
//! engine's kernels, on the device's GPU when it has one); the
//! query-expansion model from a GGUF file. One way to load them for every
//! host: the CLI's model slots, the edge component, the browser.

use super::{
    CrossEncoder, Device, GgufEncoder, GgufRanker, ModelDevice, ModelFiles, SentenceEncoder, TextEmbedder, TextReranker,
};
use crate::arch::ModelBytes;
use crate::error::Result;

/// Models that load from a repository's files or a GGUF file.
pub trait Loadable: Sized {
    fn load(files: ModelFiles, device: &Device) -> Result<Self>;
    /// From a GGUF file's bytes; `name` is how errors call it.
    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self>;
}

impl Loadable for TextEmbedder {
    fn load(files: ModelFiles, device: &Device) -> Result<Self> {
        SentenceEncoder::load(files, device).map(|e| TextEmbedder::SafeTensors(Box::new(e)))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        GgufEncoder::load_on(name, bytes, device).map(|e| TextEmbedder::Gguf(Box::new(e)))
    }
}

impl Loadable for TextReranker {
    fn load(files: ModelFiles, device: &Device) -> Result<Self> {
        CrossEncoder::load(files, device).map(|r| TextReranker::SafeTensors(Box::new(r)))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        GgufRanker::load_on(name, bytes, device).map(|r| TextReranker::Gguf(Box::new(r)))
    }
}

/// qmd's query-expansion model: a GGUF chat model, decoded on the
/// process's device (its GPU where it has one).
impl Loadable for crate::generate::QueryExpander {
    fn load(_files: ModelFiles, _device: &Device) -> Result<Self> {
        Err(crate::error::Error::invalid(
            "a query-expansion model is one GGUF file: hf:owner/repo/file.gguf, or the path of a .gguf file",
        ))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        crate::generate::QueryExpander::load_on(name, bytes, device)
    }
}
