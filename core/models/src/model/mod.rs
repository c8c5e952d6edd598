//! The models: in burn, a BERT sentence encoder for embeddings and a
//! cross-encoder reranker, device-agnostic (burn's CPU backend natively
//! and in wasm, wgpu on native GPUs and WebGPU); from GGUF files, the
//! embedding and ranking models of [`crate::arch`] on the quantized
//! kernels.
//!
//! The caller reads the files (the host from its model cache, the browser
//! from OPFS) and hands over their bytes as [`ModelFiles`].

pub(crate) mod attention;
mod batch;
mod bert;
mod bert_checkpoint;
mod bounded_wordpiece;
mod burn_embedder;
mod burn_ranker;
pub mod config;
mod dense;
mod device;
mod embedder;
pub(crate) mod heap;
mod kernel_device;
mod kernel_embedder;
mod kernel_ranker;
mod load;
mod loadable;
mod passes;
mod reranker;
mod tokenize;

pub use bert_checkpoint::quantized_weights;
pub use burn;
pub use burn::tensor::Device;
pub use burn_embedder::BurnEmbedder;
pub use burn_ranker::BurnRanker;
pub use device::{DeviceChoice, ModelDevice};
pub use embedder::TextEmbedder;
pub use kernel_device::KernelDevice;
pub use kernel_embedder::KernelEmbedder;
pub use kernel_ranker::KernelRanker;
pub use loadable::Loadable;
pub use reranker::TextReranker;
pub use tokenize::{MAX_BYTES_PER_TOKEN, TextTokenizer, window_prefix};

/// The files of one Hugging Face model repository that loading reads.
/// Optional ones are sentence-transformers extras.
#[derive(Default)]
pub struct ModelFiles {
    pub config: Vec<u8>,
    pub tokenizer: Vec<u8>,
    pub weights: Vec<u8>,
    /// `1_Pooling/config.json`
    pub pooling: Option<Vec<u8>>,
    /// `sentence_bert_config.json`
    pub sentence_bert: Option<Vec<u8>>,
    /// `config_sentence_transformers.json`
    pub sentence_transformers: Option<Vec<u8>>,
    /// `modules.json`
    pub modules: Option<Vec<u8>>,
}

impl ModelFiles {
    /// The repository paths, in the order of the fields above.
    pub const REQUIRED: [&'static str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
    pub const OPTIONAL: [&'static str; 4] =
        ["1_Pooling/config.json", "sentence_bert_config.json", "config_sentence_transformers.json", "modules.json"];

    /// Builds from a reader of repository paths (`Ok(None)` = absent).
    pub fn read_with(mut read: impl FnMut(&str) -> crate::Result<Option<Vec<u8>>>) -> crate::Result<ModelFiles> {
        let mut required =
            |name: &str| read(name)?.ok_or_else(|| crate::Error::not_found(format!("model file {name} is missing")));
        let (config, tokenizer, weights) =
            (required("config.json")?, required("tokenizer.json")?, required("model.safetensors")?);
        Ok(ModelFiles {
            config,
            tokenizer,
            weights,
            pooling: read("1_Pooling/config.json")?,
            sentence_bert: read("sentence_bert_config.json")?,
            sentence_transformers: read("config_sentence_transformers.json")?,
            modules: read("modules.json")?,
        })
    }
}
