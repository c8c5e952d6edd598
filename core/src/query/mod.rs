//! Query languages: the lex syntax, query documents, and a generation
//! model's expansions.

pub mod document;
pub mod expansion;
pub mod lex;

use crate::error::{Error, Result};

/// The longest query text accepted (about 1,500 words): a query's cost
/// grows with its terms, and a server must not spend seconds of a worker,
/// or echo megabytes back, on one request.
pub const MAX_QUERY_CHARS: usize = 10_000;

/// Refuses a query text over [`MAX_QUERY_CHARS`], without echoing it.
pub fn check_length(what: &str, text: &str) -> Result<()> {
    // Bytes bound chars from above: count only when it could matter.
    if text.len() > MAX_QUERY_CHARS && text.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::invalid(format!(
            "{what} is too long: {} characters (the limit is {MAX_QUERY_CHARS})",
            text.chars().count()
        )));
    }
    Ok(())
}
