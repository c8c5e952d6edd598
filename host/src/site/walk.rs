//! The files of a site folder, sorted, as `/`-separated relative paths:
//! hidden entries, `node_modules` and the bundle's own folder skipped.
//! Links are followed while their real path stays under the folder (the
//! rule of [`crate::files::contained`]); a link that leads out of it, to
//! a file or a folder, is skipped. What is skipped (such a link, a
//! dangling or looping one, a name that is not UTF-8, a folder that
//! cannot be listed, a FIFO, socket or device) is named in a warning on
//! stderr (escaped: see [`crate::files::escape`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::files::{contained, escape, regular};

/// `root` is a real path (canonical).
pub fn files(root: &Path, skip: Option<&str>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    seen.insert(root.to_path_buf());
    let walk = Walk { root, skip };
    walk.visit(root, "", &mut seen, &mut out).with_context(|| format!("cannot read {}", root.display()))?;
    out.sort();
    Ok(out)
}

/// A skipped entry, named (as shown) relative to the site folder.
pub fn warn(shown: &str, why: impl std::fmt::Display) {
    eprintln!("Warning: skipped {shown}: {why}");
}

struct Walk<'a> {
    root: &'a Path,
    skip: Option<&'a str>,
}

impl Walk<'_> {
    fn visit(&self, dir: &Path, rel: &str, seen: &mut HashSet<PathBuf>, out: &mut Vec<String>) -> Result<()> {
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
            if Some(path.as_str()) == self.skip {
                continue;
            }
            // Where the entry really is: a link is followed only to a place
            // under the root.
            let real = match entry.path().canonicalize() {
                Ok(real) => real,
                Err(e) if entry.file_type().is_ok_and(|t| t.is_symlink()) => {
                    warn(&shown, format_args!("a broken or looping link ({e})"));
                    continue;
                }
                Err(e) => {
                    warn(&shown, e);
                    continue;
                }
            };
            if let Err(e) = contained::check_under(self.root, &real) {
                warn(&shown, e);
                continue;
            }
            let kind = match std::fs::metadata(&real) {
                Ok(meta) => meta.file_type(),
                Err(e) => {
                    warn(&shown, e);
                    continue;
                }
            };
            if kind.is_dir() {
                // A linked folder is visited once: links back up cannot loop.
                if seen.insert(real)
                    && let Err(e) = self.visit(&entry.path(), &path, seen, out)
                {
                    warn(&format!("{shown}/"), e);
                }
            } else if kind.is_file() {
                out.push(path);
            } else {
                warn(&shown, regular::not_regular(kind));
            }
        }
        Ok(())
    }
}
