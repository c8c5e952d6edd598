//! Source documents in the browser: the files of a picked folder. The
//! Worker walks the folder (asynchronous in the browser) asking
//! [`FolderFilter`] which entries belong to the collection, hands over the
//! paths with their sizes and mtimes ([`BrowserSource::set_files`]), then
//! reads the files the update will need (new, or changed in size or
//! mtime) concurrently and hands their bytes over in one buffer. The
//! engine's synchronous walk and reads run over that: files unchanged since
//! the last update are never read, and a file not read ahead (past the
//! read-ahead budget) is read through the Worker's `readFile(path)`
//! callback (`FileReaderSync`).
//!
//! The walk is in JavaScript because the directory handle's API is
//! asynchronous iteration, which JavaScript expresses directly. The `File`
//! objects stay there, and bulk data crosses in typed arrays: one copy per
//! batch rather than one JS object per file held in Rust.

use std::cell::RefCell;
use std::collections::BTreeMap;

use js_sys::{Function, Uint8Array};
use qmd_core::collection::PathFilter;
use qmd_core::source::{FileStat, walk_sorted_paths};
use qmd_core::{ReadFailure, Result, SourceFile, SourceTree, WalkEntry};
use wasm_bindgen::prelude::*;

/// Bytes read ahead of an update at most; past this, files are read one
/// by one when the engine asks (slower, but memory stays bounded).
pub const READ_AHEAD_BYTES: u64 = 64 << 20;

/// Which entries of a folder belong to a collection (its mask, its ignore
/// rules, qmd's skipped directories), for the Worker's walk.
#[wasm_bindgen]
pub struct FolderFilter(pub(crate) PathFilter);

#[wasm_bindgen]
impl FolderFilter {
    /// Whether the walk should enter directory `path` (relative).
    #[wasm_bindgen(js_name = entersDir)]
    pub fn enters_dir(&self, path: &str) -> bool {
        self.0.enter_dir(path)
    }

    /// Whether file `path` (relative) is one of the collection's.
    pub fn includes(&self, path: &str) -> bool {
        self.0.includes(path)
    }
}

/// Files of each collection root, by relative path.
#[derive(Default)]
pub struct BrowserSource {
    roots: RefCell<BTreeMap<String, BTreeMap<String, FileStat>>>,
    /// `readFile(path) -> Uint8Array` of each root, for files not read ahead.
    readers: RefCell<BTreeMap<String, Function>>,
    /// Contents read ahead, taken by the engine's first read.
    read_ahead: RefCell<BTreeMap<(String, String), Vec<u8>>>,
}

impl BrowserSource {
    /// Takes `files` (relative path, size and mtime) as the files of
    /// `root`; `read_file(path)` reads one on demand.
    pub fn set_files(&self, root: &str, files: Vec<(String, FileStat)>, read_file: Function) {
        self.roots.borrow_mut().insert(root.to_string(), files.into_iter().collect());
        self.readers.borrow_mut().insert(root.to_string(), read_file);
    }

    /// Keeps the contents of `paths` of `root`, read ahead by the Worker:
    /// `bytes` holds them back to back, `ends[i]` is where path i ends.
    pub fn read_ahead(&self, root: &str, paths: Vec<String>, bytes: &[u8], ends: &[u32]) {
        let mut read_ahead = self.read_ahead.borrow_mut();
        let mut start = 0usize;
        for (rel, &end) in paths.into_iter().zip(ends) {
            let end = (end as usize).min(bytes.len());
            read_ahead.insert((root.to_string(), rel), bytes[start.min(end)..end].to_vec());
            start = end;
        }
    }

    pub fn has_files(&self, root: &str) -> bool {
        self.roots.borrow().contains_key(root)
    }
}

impl SourceTree for BrowserSource {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
        let roots = self.roots.borrow();
        if let Some(files) = roots.get(root) {
            walk_sorted_paths(files.keys().map(String::as_str), visit);
        }
        Ok(())
    }

    fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure> {
        let stat = self.stat(root, relative).ok_or_else(|| ReadFailure::Unreadable("ENOENT".into()))?;
        let modified_ms = stat.modified_ms;
        if let Some(bytes) = self.read_ahead.borrow_mut().remove(&(root.to_string(), relative.to_string())) {
            return Ok(SourceFile { bytes, modified_ms });
        }
        let reader =
            self.readers.borrow().get(root).cloned().ok_or_else(|| ReadFailure::Unreadable("ENOENT".into()))?;
        // A file changed or removed since the walk fails here (NotReadableError).
        let bytes =
            reader.call1(&JsValue::NULL, &relative.into()).map_err(|_| ReadFailure::Unreadable("EIO".into()))?;
        Ok(SourceFile { bytes: Uint8Array::new(&bytes).to_vec(), modified_ms })
    }

    fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
        self.roots.borrow().get(root)?.get(relative).copied()
    }
}
