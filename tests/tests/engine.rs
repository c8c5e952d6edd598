//! The engine and its models in process: GGUF models against llama.cpp,
//! the burn models against NumPy, retrieval quality. One test binary (see
//! `end_to_end.rs`); `cargo test -p qmd-tests --test engine gguf::` runs
//! one module.

mod gguf;
mod models;
mod retrieval;
