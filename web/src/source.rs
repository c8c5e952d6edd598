//! Source documents in the browser: the files of a picked folder, as
//! `File` objects. A `FileSystemDirectoryHandle` can only be walked
//! asynchronously, so [`BrowserSource::scan`] lists a collection's files
//! first; the engine's synchronous walk then runs over that list and
//! reads each file it needs with `FileReaderSync` (worker-only), so files
//! unchanged since the last update (same size and mtime) are never read.

use std::cell::RefCell;
use std::collections::BTreeMap;

use js_sys::{Array, Promise, Uint8Array};
use qmd_core::collection::PathFilter;
use qmd_core::source::{FileStat, walk_sorted_paths};
use qmd_core::{ReadFailure, Result, SourceFile, SourceTree, WalkEntry};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{File, FileReaderSync, FileSystemDirectoryHandle, FileSystemFileHandle};

use crate::js::{js_error, next_entries};

/// Bytes read ahead of an update at most; past this, files are read one
/// by one when the engine asks (slower, but memory stays bounded).
const PREFETCH_BYTES: u64 = 64 << 20;
/// Reads in flight at once.
const PREFETCH_BATCH: usize = 256;

/// Files of each scanned collection root, by relative path.
#[derive(Default)]
pub struct BrowserSource {
    roots: RefCell<BTreeMap<String, BTreeMap<String, File>>>,
    /// Contents read ahead, taken by the engine's first read.
    prefetched: RefCell<BTreeMap<(String, String), Vec<u8>>>,
}

impl BrowserSource {
    /// Lists the files under `dir` that `filter` admits (pruning the
    /// directories it skips) as the files of `root`.
    pub async fn scan(&self, root: &str, dir: &FileSystemDirectoryHandle, filter: &PathFilter) -> Result<usize> {
        let mut files = BTreeMap::new();
        let mut pending = vec![(String::new(), dir.clone())];
        while let Some((prefix, dir)) = pending.pop() {
            let entries = next_entries(&dir).await.map_err(|e| js_error(&format!("listing {root}/{prefix}"), e))?;
            let (mut names, requests) = (Vec::new(), Array::new());
            for (name, handle) in entries {
                let rel = format!("{prefix}{name}");
                if let Some(sub) = handle.dyn_ref::<FileSystemDirectoryHandle>() {
                    if filter.enter_dir(&rel) {
                        pending.push((format!("{rel}/"), sub.clone()));
                    }
                } else if let Some(file) = handle.dyn_ref::<FileSystemFileHandle>()
                    && filter.includes(&rel)
                {
                    requests.push(&file.get_file());
                    names.push(rel);
                }
            }
            // One round trip per directory, not per file: each getFile()
            // is a call to the browser process.
            let opened = JsFuture::from(Promise::all(&requests))
                .await
                .map_err(|e| js_error(&format!("reading {root}/{prefix}"), e))?;
            let opened: Array = opened.unchecked_into();
            for (rel, file) in names.into_iter().zip(opened.iter()) {
                files.insert(rel, file.unchecked_into());
            }
        }
        let count = files.len();
        self.roots.borrow_mut().insert(root.to_string(), files);
        Ok(count)
    }

    /// Takes the files of an `<input webkitdirectory>` as those of `root`:
    /// each `webkitRelativePath` less its first segment (the folder).
    pub fn set_files(&self, root: &str, files: impl Iterator<Item = File>, filter: &PathFilter) -> usize {
        let files: BTreeMap<String, File> = files
            .filter_map(|file| {
                let full = js_sys::Reflect::get(&file, &"webkitRelativePath".into()).ok()?.as_string()?;
                let rel = full.split_once('/').map_or(full.as_str(), |(_, rest)| rest).to_string();
                filter.includes(&rel).then_some((rel, file))
            })
            .collect();
        let count = files.len();
        self.roots.borrow_mut().insert(root.to_string(), files);
        count
    }

    /// Size and mtime of each file listed under `root`.
    pub fn stats(&self, root: &str) -> Vec<(String, FileStat)> {
        let roots = self.roots.borrow();
        let files = roots.get(root).into_iter().flatten();
        files.map(|(rel, file)| (rel.clone(), stat_of(file))).collect()
    }

    /// Reads `paths` of `root` concurrently, ahead of the engine's
    /// synchronous reads: each `FileReaderSync` read is a round trip to
    /// the browser process, which made indexing 7k files take half a
    /// minute.
    pub async fn prefetch(&self, root: &str, paths: &[String]) -> Result<()> {
        let mut budget = PREFETCH_BYTES;
        let wanted: Vec<(String, File)> = paths
            .iter()
            .filter_map(|rel| self.with_file(root, rel, |f| (rel.clone(), f.clone())))
            .take_while(|(_, file)| {
                budget = budget.saturating_sub(file.size() as u64);
                budget > 0
            })
            .collect();
        for batch in wanted.chunks(PREFETCH_BATCH) {
            let reads: Array = batch.iter().map(|(_, file)| file.array_buffer()).collect();
            let buffers: Array = JsFuture::from(Promise::all(&reads))
                .await
                .map_err(|e| js_error(&format!("reading files of {root}"), e))?
                .unchecked_into();
            let mut prefetched = self.prefetched.borrow_mut();
            for ((rel, _), buffer) in batch.iter().zip(buffers.iter()) {
                prefetched.insert((root.to_string(), rel.clone()), Uint8Array::new(&buffer).to_vec());
            }
        }
        Ok(())
    }

    pub fn is_scanned(&self, root: &str) -> bool {
        self.roots.borrow().contains_key(root)
    }

    fn with_file<T>(&self, root: &str, relative: &str, f: impl FnOnce(&File) -> T) -> Option<T> {
        self.roots.borrow().get(root)?.get(relative).map(f)
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
        let file =
            self.with_file(root, relative, File::clone).ok_or_else(|| ReadFailure::Unreadable("ENOENT".into()))?;
        let reader = FileReaderSync::new().map_err(|_| ReadFailure::Unreadable("NO_FILE_READER".into()))?;
        // A file changed or removed since the scan fails here (NotReadableError).
        let buffer = reader.read_as_array_buffer(&file).map_err(|_| ReadFailure::Unreadable("EIO".into()))?;
        Ok(SourceFile { bytes: Uint8Array::new(&buffer).to_vec(), modified_ms: file.last_modified() as i64 })
    }

    fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
        self.with_file(root, relative, stat_of)
    }
}

fn stat_of(file: &File) -> FileStat {
    FileStat { size: file.size() as u64, modified_ms: file.last_modified() as i64 }
}
