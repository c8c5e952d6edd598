//! Cross-crate tests and the retrieval evaluation of the qmd engine.

pub mod allocation;
pub mod anchor;
pub mod bench;
pub mod code_eval;
pub mod data;
pub mod eval;
pub mod fuzz;
pub mod fuzz_models;
pub mod fuzz_site;
pub mod gguf;
pub mod gguf_file;
pub mod models;
