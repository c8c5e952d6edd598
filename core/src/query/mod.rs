//! Query languages: the lex syntax (and, with the models issue, query documents).

pub mod lex;
