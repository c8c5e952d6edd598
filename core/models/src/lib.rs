//! qmd's model code: the embedding models, rerankers and query expansion
//! the engine reaches through its `inference` interface, on the project's
//! own kernels (every GGUF model, the default embedder) and on burn (the
//! safetensors cross-encoder, the f32 reference path, the wgpu device).
//!
//! From the bottom up: `gguf` (the file format and its tokenizers),
//! `kernels` (quantized and f32 products by ISA, the element-wise math,
//! the thread pool), `gpu` (the same on wgpu, feature `gpu`), `arch` (the
//! architectures over a backend), `model` (embedders and rerankers, burn's
//! stack, devices) and `generate` (query expansion). Errors are
//! `qmd-base`'s, the engine's own type.

// Paths inside the model code name the error module as the engine's did.
pub(crate) use qmd_base::error;
pub use qmd_base::{Error, ErrorKind, Result};

pub mod arch;
pub mod generate;
pub mod gguf;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod kernels;
pub mod model;
