//! Writes a built site under `<out>/qmd/`: every file gzip-compressed
//! (the page inflates them with `DecompressionStream`, so any static host
//! serves the same bytes), content-hashed names written once, the entry
//! file last (atomically), then files of earlier builds removed.
//!
//! Deploying: everything but `entry.json` and `qmd-search.js` is named by
//! its content and never changes, so it can be cached forever
//! (`Cache-Control: public, max-age=31536000, immutable`); those two must
//! be revalidated (`no-cache`).

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::files::write_atomically;
use qmd_core::site::SiteFiles;
use qmd_core::site::format::{file_id, id_hex};

/// The keyword engine, built from `web/site` by build.rs.
static ENGINE: &[u8] = include_bytes!(env!("QMD_SITE_ENGINE_PATH"));
/// The page's ES module: API and `<qmd-search>` element.
pub static MODULE: &str = include_str!("../../../www/site/qmd-search.js");

/// The bundle format the module reads.
pub const FORMAT: &str = "qmd-site/1";

/// What was written.
pub struct Written {
    pub dir: PathBuf,
    /// Bytes of every file of this build, as stored.
    pub bytes: u64,
    pub files: usize,
    pub removed: usize,
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::best());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}

/// Whether `name` (relative to the bundle folder) is a file this command
/// writes: only those are ever removed.
fn ours(name: &str) -> bool {
    let hashed = |prefix: &str, suffix: &str| name.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)).is_some();
    hashed("t/", ".bin")
        || hashed("p/", ".bin")
        || hashed("f/", ".json")
        || hashed("meta.", ".bin")
        || hashed("engine.", ".wasm")
        || hashed("sem.", ".bin")
        || hashed("w/", ".bin")
        || hashed("vocab.", ".txt") // an earlier version's single vocabulary file
        || hashed("r/", ".bin")
        || hashed("v/", ".bin")
        || name.ends_with(".partial")
}

fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            files_under(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

pub fn write(out: &Path, site: SiteFiles) -> Result<Written> {
    let dir = out.join("qmd");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let engine = format!("engine.{}.wasm", id_hex(&file_id(ENGINE)));
    let mut keep: HashSet<String> = HashSet::new();
    let mut bytes = 0u64;
    let all = site.files.iter().map(|f| (f.name.as_str(), f.bytes.as_slice())).chain([(engine.as_str(), ENGINE)]);
    for (name, data) in all {
        let path = dir.join(name);
        let stored = gzip(data)?;
        bytes += stored.len() as u64;
        // Same name, same content: a file from an earlier build is reused.
        if fs::metadata(&path).map(|m| m.len() != stored.len() as u64).unwrap_or(true) {
            write_atomically(&path, &stored)?;
        }
        keep.insert(name.to_string());
    }
    write_atomically(&dir.join("qmd-search.js"), MODULE.as_bytes())?;
    let entry = serde_json::json!({
        "format": FORMAT,
        "generator": concat!("qmd ", env!("CARGO_PKG_VERSION")),
        "engine": engine,
        "meta": site.meta,
        "semantic": site.semantic,
        "docs": site.docs,
    });
    let entry = serde_json::to_vec_pretty(&entry)?;
    write_atomically(&dir.join("entry.json"), &entry)?;
    bytes += (MODULE.len() + entry.len()) as u64;

    // The new entry is in place: files only the old one named can go.
    let mut existing = Vec::new();
    files_under(&dir, &dir, &mut existing)?;
    let mut removed = 0;
    for name in existing.iter().filter(|n| ours(n) && !keep.contains(*n)) {
        fs::remove_file(dir.join(name)).with_context(|| format!("cannot remove {name}"))?;
        removed += 1;
    }
    // Fragment and row folders of earlier builds, now empty.
    for sets in ["f", "r"] {
        if let Ok(entries) = fs::read_dir(dir.join(sets)) {
            for entry in entries.flatten() {
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
    Ok(Written { dir, bytes, files: keep.len() + 2, removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bundle_files_are_ever_removed() {
        for name in ["t/ab.bin", "p/ab.bin", "f/0011/3.json", "meta.12.bin", "engine.34.wasm", "t/x.partial"] {
            assert!(ours(name), "{name}");
        }
        for name in ["index.html", "entry.json", "qmd-search.js", "t/notes.txt", "my.bin", "custom.css"] {
            assert!(!ours(name), "{name}");
        }
    }
}
