//! `update`: scan collection roots, index new and changed files, tombstone
//! changed and removed ones, commit once.

use std::collections::{HashMap, HashSet};

use super::{Engine, Progress};
use crate::api::{CollectionReport, SkippedFile, UpdateReport};
use crate::collection::PathFilter;
use crate::document::{content_hash, extract_title};
use crate::error::Result;
use crate::index::segment::DocInput;
use crate::index::{CatalogEntry, IndexWriter};
use crate::source::{FileStat, ReadFailure, WalkEntry};

/// A file whose mtime falls this close to the previous scan may have been
/// changed again within the same clock tick (or the filesystem's coarser
/// one) after that scan read it, so it is re-read rather than trusted.
const RACY_WINDOW_MS: i64 = 3_000;

/// Whether a file can be taken as unchanged without reading it: same size
/// and mtime as when indexed, and modified well before the last scan.
fn unchanged_on_disk(entry: &CatalogEntry, stat: Option<FileStat>, last_scan_ms: Option<i64>) -> bool {
    let (Some(stat), Some(last_scan)) = (stat, last_scan_ms) else { return false };
    stat.size == entry.record.size
        && stat.modified_ms == entry.record.modified_ms
        && stat.modified_ms < last_scan.saturating_sub(RACY_WINDOW_MS)
}

impl Engine {
    /// Which of `files` (paths in `collection`, with their size and mtime)
    /// `update` will read rather than take as unchanged. For sources that
    /// fetch contents ahead of the update (the browser's are asynchronous).
    pub fn files_to_read<'a>(
        &self,
        collection: &str,
        files: impl Iterator<Item = (&'a str, FileStat)>,
    ) -> Result<Vec<String>> {
        let index = self.index()?;
        let catalog = index.catalog()?;
        let indexed: HashMap<&str, &CatalogEntry> =
            catalog.iter().filter(|e| e.record.collection == collection).map(|e| (e.record.path.as_str(), e)).collect();
        let last_scan = index.manifest.last_update.get(collection).copied();
        Ok(files
            .filter(|(path, stat)| !indexed.get(path).is_some_and(|e| unchanged_on_disk(e, Some(*stat), last_scan)))
            .map(|(path, _)| path.to_string())
            .collect())
    }

    /// Re-indexes the named collections (all when empty).
    pub fn update(&self, only: &[String], now_ms: i64, progress: Progress<'_>) -> Result<UpdateReport> {
        let config = self.config()?;
        for name in only {
            config.require(name)?;
        }
        let index = self.index()?;
        let catalog = index.catalog()?;
        let mut existing: HashMap<(&str, &str), &CatalogEntry> =
            catalog.iter().map(|e| ((e.record.collection.as_str(), e.record.path.as_str()), e)).collect();
        let mut writer = IndexWriter::new(&index);
        let mut report = UpdateReport::default();

        for collection in config.collections.iter().filter(|c| only.is_empty() || only.contains(&c.name)) {
            let filter = PathFilter::new(&collection.pattern, &collection.ignore)?;
            let mut files = Vec::new();
            self.source.walk(&collection.path, &mut |entry| match entry {
                WalkEntry::Dir(dir) => filter.enter_dir(dir),
                WalkEntry::File(file) => {
                    if filter.includes(file) {
                        files.push(file.to_string());
                    }
                    true
                }
            })?;
            files.sort();
            let total = files.len() as u64;
            progress(&collection.name, 0, total);

            let last_scan = index.manifest.last_update.get(&collection.name).copied();
            let mut stats = CollectionReport { name: collection.name.clone(), ..Default::default() };
            let mut seen: HashSet<String> = HashSet::new();
            for (i, rel) in files.iter().enumerate() {
                if i % 64 == 0 {
                    progress(&collection.name, i as u64, total);
                }
                let previous = existing.get(&(collection.name.as_str(), rel.as_str()));
                if previous.is_some_and(|e| unchanged_on_disk(e, self.source.stat(&collection.path, rel), last_scan)) {
                    seen.insert(rel.clone());
                    stats.unchanged += 1;
                    continue;
                }
                let file = match self.source.read(&collection.path, rel) {
                    Ok(file) => file,
                    Err(ReadFailure::OutsideCollection) => {
                        stats.skipped.push(SkippedFile { path: rel.clone(), reason: "OUTSIDE_COLLECTION".into() });
                        continue;
                    }
                    Err(ReadFailure::Unreadable(code)) => {
                        // Keep the indexed version: the file may be back next time.
                        seen.insert(rel.clone());
                        stats.skipped.push(SkippedFile { path: rel.clone(), reason: code });
                        continue;
                    }
                };
                let text = String::from_utf8_lossy(&file.bytes);
                if text.trim().is_empty() {
                    continue;
                }
                seen.insert(rel.clone());
                let hash = content_hash(&file.bytes);
                match previous {
                    Some(e) if e.record.hash == hash => {
                        stats.unchanged += 1;
                        continue;
                    }
                    Some(e) => {
                        writer.delete(e.address);
                        stats.updated += 1;
                    }
                    None => stats.added += 1,
                }
                let title = extract_title(&text, rel);
                writer.add(&DocInput {
                    collection: &collection.name,
                    path: rel,
                    title: &title,
                    hash: &hash,
                    modified_ms: file.modified_ms,
                    body: &text,
                });
            }
            progress(&collection.name, total, total);
            existing.retain(|(c, path), entry| {
                if *c == collection.name && !seen.contains(*path) {
                    writer.delete(entry.address);
                    stats.removed += 1;
                    return false;
                }
                *c != collection.name
            });
            writer.mark_updated(&collection.name, now_ms);
            report.collections.push(stats);
        }
        if only.is_empty() {
            // Documents of collections no longer configured.
            for entry in existing.values().filter(|e| config.collection(&e.record.collection).is_none()) {
                writer.delete(entry.address);
            }
        }
        if !writer.is_empty() {
            let stats = writer.commit()?;
            report.generation = stats.generation;
            report.segments_merged = stats.segments_merged;
        } else {
            report.generation = index.manifest.generation;
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::directory::RamDirectory;
    use crate::source::{MemorySource, SourceFile, SourceTree};

    /// A source the test can change between updates.
    struct Shared(RefCell<MemorySource>);

    impl SourceTree for Shared {
        fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
            self.0.borrow().walk(root, visit)
        }
        fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure> {
            self.0.borrow().read(root, relative)
        }
        fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
            self.0.borrow().stat(root, relative)
        }
    }

    fn update(engine: &Engine, now_ms: i64) -> CollectionReport {
        engine.update(&[], now_ms, &mut |_, _, _| {}).unwrap().collections.remove(0)
    }

    #[test]
    fn unchanged_size_and_mtime_skip_the_read_outside_the_racy_window() {
        let source = Rc::new(Shared(RefCell::new(MemorySource::new())));
        source.0.borrow_mut().insert("/n", "a.md", "alpha", 1_000);
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", source.clone());
        engine.collection_add("/n", Some("n"), None).unwrap();
        assert_eq!(update(&engine, 2_000).added, 1);

        // Same size, same mtime, but the last scan was within the racy
        // window of that mtime: the file is read and the change found.
        source.0.borrow_mut().insert("/n", "a.md", "bravo", 1_000);
        assert_eq!(update(&engine, 60_000).updated, 1);
        assert_eq!(engine.search("bravo", &Default::default()).unwrap().len(), 1);

        // Now the last scan (60 s) is well after the mtime: a same-size,
        // same-mtime file is trusted without reading (hence "charl" unseen).
        source.0.borrow_mut().insert("/n", "a.md", "charl", 1_000);
        let report = update(&engine, 120_000);
        assert_eq!((report.unchanged, report.updated), (1, 0));
        assert!(engine.search("charl", &Default::default()).unwrap().is_empty());

        // A new mtime is read again.
        source.0.borrow_mut().insert("/n", "a.md", "charl", 5_000);
        assert_eq!(update(&engine, 180_000).updated, 1);
        assert_eq!(engine.search("charl", &Default::default()).unwrap().len(), 1);
    }
}
