//! The one error type the engine returns.

use std::fmt;

/// What went wrong, coarse enough for a host to map to exit codes or MCP errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    InvalidArgument,
    AlreadyExists,
    CorruptIndex,
    Io,
    Internal,
}

/// An engine error: a kind plus a message meant for the user, already worded
/// the way qmd words it (e.g. `Collection not found: x`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

/// How a user rebuilds a damaged index from the collection folders.
pub const REBUILD_HINT: &str = "Run 'qmd update --rebuild' to rebuild the index from the collection folders";

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn exists(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::AlreadyExists, message)
    }
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, message)
    }
    /// A file of the index is damaged or of an unknown format. The message
    /// names the one recovery that works from any damage.
    pub fn corrupt(file: &str, comment: impl fmt::Display) -> Self {
        Self::new(ErrorKind::CorruptIndex, format!("index file {file} is damaged: {comment}. {REBUILD_HINT}"))
    }

    /// A file the manifest names that is not there is damage, not a
    /// missing document.
    pub fn missing_is_damage(self, file: &str) -> Self {
        if self.kind == ErrorKind::NotFound { Error::corrupt(file, "the file is missing") } else { self }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
