//! The engine's error type: `qmd-base`'s, which the model code returns too,
//! so a model's error passes through the engine unchanged.

pub use qmd_base::error::{Error, ErrorKind, Result};
