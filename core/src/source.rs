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
    /// A directory (`""` for the root) that could not be listed, or listed
    /// only in part: what the walk did not see under it is unknown, not
    /// gone, so documents indexed under it are kept. With a short reason.
    Incomplete { dir: &'a str, reason: &'a str },
    /// An entry of `dir` whose name is not UTF-8: it cannot be indexed (a
    /// document path is text), and since no indexed path can name it, the
    /// rest of `dir` is complete. `name` is the name with its bytes escaped
    /// ([`crate::display::escape_bytes`]) where the source can tell it;
    /// WASI's directory listing carries only UTF-8 names, so inside the
    /// component it is `None` and the host names it.
    BadName { dir: &'a str, name: Option<&'a str> },
}

/// [`SkippedFile::reason`](crate::SkippedFile) of an entry whose name is
/// not UTF-8. Its `path` is the escaped path, or the directory (ending in
/// `/`, empty for the root) where the source could not tell the name.
pub const NAME_NOT_UTF8: &str = "NAME_NOT_UTF8";

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

/// Files larger than this are skipped with a message, not indexed: the
/// engine holds a file, its text and its compressed form in memory at once,
/// in wasm32's 4 GiB address space, and such files are rarely notes.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Why a file could not be read; reported per file, never fatal for a run.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadFailure {
    /// The file resolves outside the collection root (symlink or `..`).
    OutsideCollection,
    /// Not a regular file (a FIFO, socket or device, reached through a
    /// symlink): never opened, as opening a FIFO blocks.
    NotAFile,
    /// Larger than [`MAX_FILE_BYTES`] (its size).
    TooLarge(u64),
    /// Any other failure, with a short code (errno name where known).
    Unreadable(String),
}

impl ReadFailure {
    /// The reason `update` reports.
    pub fn reason(&self) -> String {
        const MIB: f64 = (1 << 20) as f64;
        match self {
            ReadFailure::OutsideCollection => "OUTSIDE_COLLECTION".into(),
            ReadFailure::NotAFile => "NOT_A_REGULAR_FILE".into(),
            ReadFailure::TooLarge(size) => {
                format!("FILE_TOO_LARGE: {:.1} MiB, the limit is {} MiB", *size as f64 / MIB, MAX_FILE_BYTES >> 20)
            }
            ReadFailure::Unreadable(code) => code.clone(),
        }
    }

    /// Whether the indexed version stays: a file that cannot be read right
    /// now may be back next time; one outside the collection, not a file or
    /// too large is gone from the index.
    pub fn keeps_indexed_version(&self) -> bool {
        matches!(self, ReadFailure::Unreadable(_))
    }
}

/// Read-only access to collection roots.
///
/// Implementations must not follow symlinked directories while walking,
/// must refuse (with [`ReadFailure::OutsideCollection`]) any file whose real
/// path is outside `root`, must open nothing but regular files (also through
/// symlinks), and should refuse files over [`MAX_FILE_BYTES`] before reading
/// them. `walk` fails only when the root itself cannot be opened; a walk
/// that stops early must say so ([`WalkEntry::Incomplete`]), because what
/// it did not report is taken as deleted.
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

/// A source that changes between calls (tests edit files between updates).
impl<T: SourceTree> SourceTree for std::cell::RefCell<T> {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
        self.borrow().walk(root, visit)
    }
    fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure> {
        self.borrow().read(root, relative)
    }
    fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
        self.borrow().stat(root, relative)
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
