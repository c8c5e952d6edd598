//! Cross-crate tests and the retrieval evaluation of the qmd engine.

pub mod bench;
pub mod eval;
pub mod models;
