//! The host's clock, and qmd's date and size formats (from the engine).

pub use qmd_core::clock::*;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
