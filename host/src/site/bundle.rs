//! Writes a built site under `<out>/qmd/`: every file gzip-compressed
//! (the page inflates them with `DecompressionStream`, so any static host
//! serves the same bytes), content-hashed names written once, the entry
//! file last (atomically), then files of earlier builds removed.
//!
//! Deploying: everything but `entry.json` and `qmd-search.js` is named by
//! its content and never changes, so it can be cached forever
//! (`Cache-Control: public, max-age=31536000, immutable`); those two must
//! be revalidated (`no-cache`).
//!
//! The command owns `<out>/qmd/` and nothing else: it refuses that folder
//! when it is a link (or a file), and never follows a link inside it. It
//! removes only files it wrote: named as it names them ([`ours`]) and
//! listed in the folder's marker ([`OwnedDir`]). A bundle folder of an
//! earlier version (no marker) is written into, and nothing in it removed.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::files::{OwnedDir, Owner};
use qmd_core::site::SiteFiles;
use qmd_core::site::format::{file_id, id_hex};

/// The keyword engine, built from `web/site` by build.rs.
static ENGINE: &[u8] = include_bytes!(env!("QMD_SITE_ENGINE_PATH"));
/// The metadata-filter module (`web/site/filter`), fetched only by a
/// search with a filter.
static FILTER: &[u8] = include_bytes!(env!("QMD_SITE_FILTER_PATH"));
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

/// Who owns the bundle folder.
pub const OWNER: Owner = Owner { command: "qmd site build", adopt_unmarked: true };

/// Whether `name` (relative to the bundle folder) is a file this command
/// writes: only those (and of them only what the marker lists) are ever
/// removed.
fn ours(name: &str) -> bool {
    let hashed = |prefix: &str, suffix: &str| name.strip_prefix(prefix).and_then(|r| r.strip_suffix(suffix)).is_some();
    hashed("t/", ".bin")
        || hashed("p/", ".bin")
        || hashed("f/", ".json")
        || hashed("meta.", ".bin")
        || hashed("engine.", ".wasm")
        || hashed("filter.", ".wasm")
        || hashed("sem.", ".bin")
        || hashed("w/", ".bin")
        || hashed("vocab.", ".txt") // an earlier version's single vocabulary file
        || hashed("m/", ".json")
        || hashed("r/", ".bin")
        || hashed("v/", ".bin")
        || name.ends_with(".partial")
}

/// A bundle file's kind, as the page reads it from the name: what comes
/// before its first `.` or `/` (`t` for `t/…/3.bin`, `meta` for
/// `meta.….bin`). The entry lists each kind's largest file (inflated),
/// the most the page inflates a file of that kind to: a shard swapped for
/// a gzip bomb fails at its kind's size, not at the tab's memory.
fn kind(name: &str) -> &str {
    name.split(['.', '/']).next().unwrap_or(name)
}

pub fn write(out: &Path, site: SiteFiles) -> Result<Written> {
    // The bundle folder is the only one written: never a link, and nothing
    // in it followed (see `OwnedDir`).
    let dir = OwnedDir::open(out, Path::new("qmd"), OWNER)?;
    let engine = format!("engine.{}.wasm", id_hex(&file_id(ENGINE)));
    let filter = format!("filter.{}.wasm", id_hex(&file_id(FILTER)));
    let mut keep: HashSet<String> = HashSet::new();
    let mut limits: BTreeMap<&str, usize> = BTreeMap::new();
    let mut bytes = 0u64;
    let all = site
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.bytes.as_slice()))
        .chain([(engine.as_str(), ENGINE), (filter.as_str(), FILTER)]);
    // Listed at once (one marker write, not one a file).
    dir.claim(all.clone().map(|(name, _)| name).chain(["qmd-search.js", "entry.json"]))?;
    for (name, data) in all {
        let limit = limits.entry(kind(name)).or_default();
        *limit = (*limit).max(data.len());
        let stored = gzip(data)?;
        bytes += stored.len() as u64;
        // Same name, same content: a file from an earlier build is reused.
        if !dir.has_file(name, stored.len() as u64) {
            dir.write(name, &stored)?;
        }
        keep.insert(name.to_string());
    }
    dir.write("qmd-search.js", MODULE.as_bytes())?;
    let entry = serde_json::json!({
        "format": FORMAT,
        "generator": concat!("qmd ", env!("CARGO_PKG_VERSION")),
        "engine": engine,
        "filter": filter,
        "meta": site.meta,
        "semantic": site.semantic,
        "docs": site.docs,
        "limits": limits,
    });
    let entry = serde_json::to_vec_pretty(&entry)?;
    dir.write("entry.json", &entry)?;
    bytes += (MODULE.len() + entry.len()) as u64;

    // The new entry is in place: files only the old one named can go
    // (with the fragment and row folders they empty).
    let stale: Vec<String> = dir.listed().into_iter().filter(|n| ours(n) && !keep.contains(n)).collect();
    let removed = dir.remove_all(stale.iter().map(String::as_str))?;
    Ok(Written { dir: dir.path().to_path_buf(), bytes, files: keep.len() + 2, removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_names_first_part() {
        assert_eq!(
            ["t/0a1b/3.bin", "meta.12.bin", "engine.34.wasm", "f/0011/3.json", "sem.9.bin", "x"].map(kind),
            ["t", "meta", "engine", "f", "sem", "x"]
        );
    }

    #[test]
    fn only_bundle_files_are_ever_removed() {
        for name in
            ["t/ab.bin", "p/ab.bin", "f/0011/3.json", "meta.12.bin", "engine.34.wasm", "filter.5.wasm", "t/x.partial"]
        {
            assert!(ours(name), "{name}");
        }
        for name in ["index.html", "entry.json", "qmd-search.js", "t/notes.txt", "my.bin", "custom.css"] {
            assert!(!ours(name), "{name}");
        }
    }

    /// Every visitor who searches downloads the keyword engine: its budget
    /// is 150 KB gzipped. Metadata filters (JSON, the filter tree) are in
    /// the filter module, fetched only by a search with a filter.
    #[test]
    fn the_keyword_engine_stays_within_its_download_budget() {
        let exports = |wasm: &[u8], name: &str| wasm.windows(name.len()).any(|w| w == name.as_bytes());
        let gzipped = gzip(ENGINE).unwrap().len();
        assert!(gzipped <= 150 * 1024, "the keyword engine is {gzipped} bytes gzipped, over its 150 KB budget");
        assert!(exports(ENGINE, "qmd_search") && !exports(ENGINE, "qmd_metadata_passing"));
        assert!(exports(FILTER, "qmd_metadata_passing") && !exports(FILTER, "qmd_search"));
    }
}
