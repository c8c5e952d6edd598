//! Collections (named roots with a mask) and their contexts, as configured
//! in qmd's `index.yml`.

mod config;
mod context;
mod glob;
mod paths;

pub use config::{Collection, Config, DEFAULT_PATTERN};
pub use context::{context_for, normalize_prefix};
pub(crate) use glob::compile as compile_glob;
pub use glob::{PathFilter, never_indexed};
pub use paths::{PathBase, resolve_path};
