//! The bottom of the workspace: what the engine (`qmd-core`) and the model
//! code (`qmd-models`) share without depending on each other. The one error
//! type every crate returns, the embedding model as the engine sees it,
//! and WordPiece's greedy split (the models' tokenizer and the site's
//! semantic tier both cut words with it).

pub mod embedding;
pub mod error;
pub mod longest_match;

pub use error::{Error, ErrorKind, Result};
