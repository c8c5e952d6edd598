//! Cross-crate tests and the retrieval evaluation of the qmd engine.

pub mod eval;
pub mod models;
