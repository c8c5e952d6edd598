//! Writing a file so that a reader never sees half of it.

use std::path::Path;

use anyhow::{Context, Result};

/// Writes `data` through a temporary file beside `path` (named for this
/// process, ending `.partial`) and a rename; parent folders are created.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let temp = path.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&temp, data).with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        anyhow::Error::new(e).context(format!("cannot write {}", path.display()))
    })
}
