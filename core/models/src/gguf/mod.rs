//! GGUF, llama.cpp's model file: a header of typed metadata, a table of
//! tensors, then the tensors' data, aligned. This module reads it from
//! bytes (a memory map natively, an OPFS file's contents in the browser)
//! without copying the tensor data: a [`TensorInfo`] names a byte range of
//! the file, and its quantized blocks are used where they lie.
//!
//! Every length and offset in the file is checked against the file's size
//! before it is used, so a damaged or truncated file is an error naming
//! the file and what is wrong, never a panic or a huge allocation.

pub(crate) mod dequant;
mod header;
pub(crate) mod quantize;
mod types;

pub use dequant::{dequantize, half_at};
pub use header::{GgufFile, TensorInfo};
pub use types::{GgmlType, Value};
pub mod tokenizer;
pub use tokenizer::{BpeTokenizer, SpmTokenizer, tokenizer_json};
