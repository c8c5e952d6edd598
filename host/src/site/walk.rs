//! The files of a site folder, sorted, as `/`-separated relative paths:
//! hidden entries, `node_modules` and the bundle's own folder skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub fn files(root: &Path, skip: Option<&str>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    visit(root, "", skip, &mut seen, &mut out)?;
    out.sort();
    Ok(out)
}

fn visit(dir: &Path, rel: &str, skip: Option<&str>, seen: &mut HashSet<PathBuf>, out: &mut Vec<String>) -> Result<()> {
    // A linked folder is visited once: links back up cannot loop.
    if !seen.insert(dir.canonicalize().with_context(|| format!("cannot open {}", dir.display()))?) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        if Some(path.as_str()) == skip {
            continue;
        }
        // Follows links, as a web server would serve them.
        let meta =
            std::fs::metadata(entry.path()).with_context(|| format!("cannot read {}", entry.path().display()))?;
        if meta.is_dir() {
            visit(&entry.path(), &path, skip, seen, out)?;
        } else if meta.is_file() {
            out.push(path);
        }
    }
    Ok(())
}
