//! Ranking and result assembly.

pub mod fusion;
pub mod lex;
pub mod snippet;
