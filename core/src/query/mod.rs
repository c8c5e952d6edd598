//! Query languages: the lex syntax and query documents.

pub mod document;
pub mod lex;
