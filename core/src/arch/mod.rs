//! Model architectures over GGUF weights, one module each, on the
//! quantized kernels of [`crate::kernels`]: [`bert`] (sentence encoders
//! such as all-MiniLM-L6-v2 converted by llama.cpp). The shared
//! operations (norms, activations, attention, pooling) are in [`ops`].

pub mod bert;
mod ops;
mod weights;

pub use weights::{ModelBytes, Weights};
