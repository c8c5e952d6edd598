//! Ranking and result assembly.

pub mod lex;
pub mod snippet;
