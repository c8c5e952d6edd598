//! The files of a site folder, sorted, as `/`-separated relative paths:
//! hidden entries, `node_modules` and the bundle's own folder skipped.
//! What cannot be read (a dangling or looping link, a name that is not
//! UTF-8, a folder that cannot be listed) is skipped with a warning on
//! stderr naming it (escaped: see [`crate::files::escape`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::files::escape;

pub fn files(root: &Path, skip: Option<&str>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    seen.insert(root.canonicalize().with_context(|| format!("cannot open {}", root.display()))?);
    visit(root, "", skip, &mut seen, &mut out).with_context(|| format!("cannot read {}", root.display()))?;
    out.sort();
    Ok(out)
}

/// A skipped entry, named (as shown) relative to the site folder.
pub fn warn(shown: &str, why: impl std::fmt::Display) {
    eprintln!("Warning: skipped {shown}: {why}");
}

fn visit(dir: &Path, rel: &str, skip: Option<&str>, seen: &mut HashSet<PathBuf>, out: &mut Vec<String>) -> Result<()> {
    let shown_rel = escape(rel.as_bytes());
    for entry in std::fs::read_dir(dir)? {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                warn(&format!("{shown_rel}/"), e);
                continue;
            }
        };
        let raw = entry.file_name();
        let bytes = raw.as_encoded_bytes();
        if bytes.starts_with(b".") || bytes == b"node_modules" {
            continue;
        }
        let shown = if rel.is_empty() { escape(bytes) } else { format!("{shown_rel}/{}", escape(bytes)) };
        let Some(name) = raw.to_str() else {
            warn(&shown, "the name is not valid UTF-8");
            continue;
        };
        let path = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
        if Some(path.as_str()) == skip {
            continue;
        }
        // Follows links, as a web server would serve them.
        let meta = match std::fs::metadata(entry.path()) {
            Ok(meta) => meta,
            Err(e) if entry.file_type().is_ok_and(|t| t.is_symlink()) => {
                warn(&shown, format_args!("a broken or looping link ({e})"));
                continue;
            }
            Err(e) => {
                warn(&shown, e);
                continue;
            }
        };
        if meta.is_dir() {
            // A linked folder is visited once: links back up cannot loop.
            match entry.path().canonicalize() {
                Ok(real) => {
                    if seen.insert(real)
                        && let Err(e) = visit(&entry.path(), &path, skip, seen, out)
                    {
                        warn(&format!("{shown}/"), e);
                    }
                }
                Err(e) => warn(&format!("{shown}/"), e),
            }
        } else if meta.is_file() {
            out.push(path);
        }
    }
    Ok(())
}
