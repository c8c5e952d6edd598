//! The documents being indexed, as the engine sees them. Implemented over
//! WASI preopens in the component, a directory handle in the browser, and a
//! map in tests.

use crate::error::Result;

/// One entry met while walking a collection root.
pub enum WalkEntry<'a> {
    /// A directory (relative path, `/`-separated). Returning `false` from the
    /// visitor skips its contents.
    Dir(&'a str),
    /// A regular file (or a symlink to one; containment is checked on read).
    File(&'a str),
}

/// A file's bytes and metadata.
pub struct SourceFile {
    pub bytes: Vec<u8>,
    /// Milliseconds since the epoch.
    pub modified_ms: i64,
}

/// Size and modification time of a regular file, for skipping unchanged
/// files without reading them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    /// Milliseconds since the epoch.
    pub modified_ms: i64,
}

/// Why a file could not be read; reported per file, never fatal for a run.
pub enum ReadFailure {
    /// The file resolves outside the collection root (symlink or `..`).
    OutsideCollection,
    /// Any other failure, with a short code (errno name where known).
    Unreadable(String),
}

/// Read-only access to collection roots.
///
/// Implementations must not follow symlinked directories while walking, and
/// must refuse (with [`ReadFailure::OutsideCollection`]) any file whose real
/// path is outside `root`.
pub trait SourceTree {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()>;
    fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure>;

    /// Size and mtime of a regular file that is not a symlink (a symlink
    /// must always be read, so containment is checked again). `None` when
    /// unknown; the file is then read and hashed.
    fn stat(&self, _root: &str, _relative: &str) -> Option<FileStat> {
        None
    }
}

/// A [`SourceTree`] held in memory: `(root, relative path) → (text, mtime)`.
/// For tests, benchmarks and the retrieval eval.
#[derive(Default)]
pub struct MemorySource {
    files: std::collections::BTreeMap<(String, String), (Vec<u8>, i64)>,
}

impl MemorySource {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, root: &str, relative: &str, text: impl Into<Vec<u8>>, modified_ms: i64) {
        self.files.insert((root.to_string(), relative.to_string()), (text.into(), modified_ms));
    }

    pub fn remove(&mut self, root: &str, relative: &str) {
        self.files.remove(&(root.to_string(), relative.to_string()));
    }
}

impl SourceTree for MemorySource {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
        walk_sorted_paths(self.files.keys().filter(|(r, _)| r == root).map(|(_, rel)| rel.as_str()), visit);
        Ok(())
    }

    fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure> {
        self.files
            .get(&(root.to_string(), relative.to_string()))
            .map(|(bytes, modified_ms)| SourceFile { bytes: bytes.clone(), modified_ms: *modified_ms })
            .ok_or_else(|| ReadFailure::Unreadable("ENOENT".into()))
    }

    fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
        let (bytes, modified_ms) = self.files.get(&(root.to_string(), relative.to_string()))?;
        Some(FileStat { size: bytes.len() as u64, modified_ms: *modified_ms })
    }
}

/// Walks a tree known as a list of file paths (relative, `/`-separated,
/// sorted): announces each ancestor directory once before its files and
/// leaves out everything under a directory the visitor declined. For
/// sources that list their files up front (memory, the browser).
pub fn walk_sorted_paths<'a>(paths: impl Iterator<Item = &'a str>, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) {
    let mut skipped: Vec<String> = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    for rel in paths {
        let mut pruned = false;
        let mut end = 0;
        while let Some(i) = rel[end..].find('/') {
            let dir = &rel[..end + i];
            end += i + 1;
            if skipped.iter().any(|s| dir == s || dir.starts_with(&format!("{s}/"))) {
                pruned = true;
                break;
            }
            if seen_dirs.insert(dir.to_string()) && !visit(WalkEntry::Dir(dir)) {
                skipped.push(dir.to_string());
                pruned = true;
                break;
            }
        }
        if !pruned {
            visit(WalkEntry::File(rel));
        }
    }
}
