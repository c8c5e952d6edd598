//! The engine and its models in process: code chunking against qmd's own
//! chunker, GGUF models against llama.cpp,
//! the burn models against NumPy, retrieval quality. One test binary (see
//! `end_to_end.rs`); `cargo test -p qmd-tests --test engine gguf::` runs
//! one module.

mod chunk_parity;
mod gguf;
mod models;
mod retrieval;
