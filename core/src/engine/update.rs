//! `update`: scan collection roots, index new and changed files, tombstone
//! changed and removed ones, commit once.

use std::collections::{HashMap, HashSet};

use std::rc::Rc;

use super::{Engine, Progress};
use crate::api::{CollectionReport, SkippedFile, UpdateReport};
use crate::collection::{Config, PathFilter};
use crate::directory::Directory;
use crate::document::{content_hash, extract_title};
use crate::error::Result;
use crate::index::segment::DocInput;
use crate::index::validate::file_number;
use crate::index::{CatalogEntry, FORMAT_VERSION, Index, IndexWriter, Manifest};
use crate::source::{FileStat, MAX_FILE_BYTES, NAME_NOT_UTF8, ReadFailure, WalkEntry};
use crate::vector::VectorSet;

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
        self.scan(&config, &index, only, now_ms, progress, false)
    }

    /// Rebuilds the index from the collection folders, trusting nothing of
    /// the current one but vectors that verify: the recovery from any
    /// damage. Writes a new generation; the old files are collected after.
    pub fn rebuild(&self, now_ms: i64, progress: Progress<'_>) -> Result<UpdateReport> {
        let config = self.config()?;
        let (base, notes) = rebuild_base(&self.index_dir)?;
        let index = Index::from_manifest(self.index_dir.clone(), base);
        let mut report = self.scan(&config, &index, &[], now_ms, progress, true)?;
        report.notes = notes;
        Ok(report)
    }

    /// Walks and indexes the collections (`only`, or all) against `index`,
    /// then commits once (always when `commit_always`).
    fn scan(
        &self,
        config: &Config,
        index: &Index,
        only: &[String],
        now_ms: i64,
        progress: Progress<'_>,
        commit_always: bool,
    ) -> Result<UpdateReport> {
        let catalog = index.catalog()?;
        let mut existing: HashMap<(&str, &str), &CatalogEntry> =
            catalog.iter().map(|e| ((e.record.collection.as_str(), e.record.path.as_str()), e)).collect();
        let mut writer = IndexWriter::new(index);
        let mut report = UpdateReport::default();

        for collection in config.collections.iter().filter(|c| only.is_empty() || only.contains(&c.name)) {
            let mut stats = CollectionReport { name: collection.name.clone(), ..Default::default() };
            let walked = PathFilter::new(&collection.pattern, &collection.ignore).and_then(|filter| {
                let mut files = Vec::new();
                let mut incomplete_dirs = Vec::new();
                self.source.walk(&collection.path, &mut |entry| match entry {
                    WalkEntry::Dir(dir) => filter.enter_dir(dir),
                    WalkEntry::File(file) => {
                        if filter.includes(file) {
                            files.push(file.to_string());
                        }
                        true
                    }
                    WalkEntry::Incomplete { dir, reason } => {
                        let prefix = dir_prefix(dir);
                        stats.skipped.push(SkippedFile { path: prefix.clone(), reason: reason.to_string() });
                        incomplete_dirs.push(prefix);
                        true
                    }
                    WalkEntry::BadName { dir, name } => {
                        // No indexed path can name it; the rest of `dir` is seen.
                        let path = match name {
                            Some(name) => format!("{}{name}", dir_prefix(dir)),
                            None => dir_prefix(dir),
                        };
                        if !stats.skipped.iter().any(|s| s.path == path && s.reason == NAME_NOT_UTF8) {
                            stats.skipped.push(SkippedFile { path, reason: NAME_NOT_UTF8.to_string() });
                        }
                        true
                    }
                })?;
                Ok((files, incomplete_dirs))
            });
            let (mut files, incomplete_dirs) = match walked {
                Ok(walked) => walked,
                Err(e) => {
                    // Nothing of this collection changes: its documents stay
                    // until the folder is back or the collection is removed.
                    existing.retain(|(c, _), _| *c != collection.name);
                    stats.error = Some(format!(
                        "{}; its {} indexed documents are kept. Fix the folder, or remove the collection with 'qmd collection remove {}'",
                        e.message,
                        catalog.iter().filter(|d| d.record.collection == collection.name).count(),
                        collection.name
                    ));
                    report.collections.push(stats);
                    continue;
                }
            };
            files.sort();
            let total = files.len() as u64;
            progress(&collection.name, 0, total);

            let last_scan = index.manifest.last_update.get(&collection.name).copied();
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
                let read = self.source.read(&collection.path, rel).and_then(|file| {
                    let size = file.bytes.len() as u64;
                    if size > MAX_FILE_BYTES { Err(ReadFailure::TooLarge(size)) } else { Ok(file) }
                });
                let file = match read {
                    Ok(file) => file,
                    Err(failure) => {
                        if failure.keeps_indexed_version() {
                            seen.insert(rel.clone());
                        }
                        stats.skipped.push(SkippedFile { path: rel.clone(), reason: failure.reason() });
                        continue;
                    }
                };
                let text = match crate::encoding::note_text(&file.bytes) {
                    Ok((text, None)) => text,
                    Ok((text, Some(loss))) => {
                        stats.lossy_text.push(SkippedFile { path: rel.clone(), reason: loss });
                        text
                    }
                    Err(reason) => {
                        stats.skipped.push(SkippedFile { path: rel.clone(), reason });
                        continue;
                    }
                };
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
                let metadata = crate::metadata::extract(rel, &text);
                if let Some(error) = &metadata.error {
                    stats.invalid_metadata.push(SkippedFile { path: rel.clone(), reason: error.clone() });
                }
                writer.add(&DocInput {
                    collection: &collection.name,
                    path: rel,
                    title: &title,
                    hash: &hash,
                    modified_ms: file.modified_ms,
                    body: &text,
                    metadata: &metadata,
                })?;
            }
            progress(&collection.name, total, total);
            existing.retain(|(c, path), entry| {
                if *c != collection.name {
                    return true;
                }
                let kept = seen.contains(*path) || incomplete_dirs.iter().any(|dir| path.starts_with(dir.as_str()));
                if !kept {
                    writer.delete(entry.address);
                    stats.removed += 1;
                }
                false
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
        if commit_always || !writer.is_empty() {
            let stats = writer.commit()?;
            report.generation = stats.generation;
            report.segments_merged = stats.segments_merged;
        } else {
            report.generation = index.manifest.generation;
        }
        Ok(report)
    }
}

/// `dir/` for a walked directory, `""` for the root: as a prefix of the
/// collection-relative paths under it.
fn dir_prefix(dir: &str) -> String {
    if dir.is_empty() { String::new() } else { format!("{dir}/") }
}

/// The manifest a rebuild starts from: no segments; the vectors of the old
/// manifest if it loads and every vector file verifies; file numbers and
/// the generation above everything in the directory, so nothing is reused.
fn rebuild_base(dir: &Rc<dyn Directory>) -> Result<(Manifest, Vec<String>)> {
    let mut notes = Vec::new();
    let old = Manifest::load(dir.as_ref());
    let listed = dir.list()?;
    let highest = |prefix: &str, suffix: &str| {
        listed.iter().filter_map(|f| file_number(f.split('.').next().unwrap_or(f), prefix, suffix)).max()
    };
    // From the files alone: the old manifest's counter may be what is damaged.
    let next_segment =
        [highest("seg-", ""), highest("vec-", "")].into_iter().flatten().max().map_or(0, |n| n.saturating_add(1));
    let generation = old.as_ref().map_or(0, |m| m.generation);
    let vectors = match &old {
        Ok(m) => m.vectors.clone().filter(|v| match VectorSet::open(dir, v).and_then(|set| set.verify()) {
            Ok(()) => {
                notes.push(format!("Kept {} verified chunk vectors.", v.rows()));
                true
            }
            Err(e) => {
                notes.push(format!("Dropped the chunk vectors ({}); run 'qmd embed' to embed again.", e.message));
                false
            }
        }),
        Err(_) => {
            notes
                .push("Dropped the chunk vectors (the manifest is unreadable); run 'qmd embed' to embed again.".into());
            None
        }
    };
    let base = Manifest { format: FORMAT_VERSION, generation, next_segment, vectors, ..Default::default() };
    Ok((base, notes))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::directory::RamDirectory;
    use crate::source::{MemorySource, SourceTree};

    fn update(engine: &Engine, now_ms: i64) -> CollectionReport {
        engine.update(&[], now_ms, &mut |_, _, _| {}).unwrap().collections.remove(0)
    }

    /// A source whose walk also reports what a real directory listing can
    /// hit: folders listed only in part, and names that are not UTF-8.
    struct Listed {
        files: MemorySource,
        incomplete: Vec<&'static str>,
        bad_names: Vec<(&'static str, Option<&'static str>)>,
        /// Files the listing does not show (the part it could not list).
        unseen: Vec<&'static str>,
    }

    impl SourceTree for Listed {
        fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
            for dir in &self.incomplete {
                visit(WalkEntry::Incomplete { dir, reason: "EIO" });
            }
            for (dir, name) in &self.bad_names {
                visit(WalkEntry::BadName { dir, name: *name });
            }
            self.files.walk(root, &mut |entry| match entry {
                WalkEntry::File(path) if self.unseen.contains(&path) => true,
                entry => visit(entry),
            })
        }
        fn read(&self, root: &str, relative: &str) -> std::result::Result<crate::source::SourceFile, ReadFailure> {
            self.files.read(root, relative)
        }
    }

    fn listed_engine(source: Rc<RefCell<Listed>>) -> Engine {
        let engine = Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", source);
        engine.collection_add("/n", Some("n"), None).unwrap();
        engine
    }

    fn notes() -> MemorySource {
        let mut files = MemorySource::new();
        for path in ["a.md", "b.md", "sub/c.md", "sub/d.md", "sub/deeper/e.md", "other/f.md"] {
            files.insert("/n", path, format!("note {path}"), 1_000);
        }
        files
    }

    #[test]
    fn a_folder_listed_in_part_keeps_what_the_walk_did_not_see() {
        let source =
            Rc::new(RefCell::new(Listed { files: notes(), incomplete: vec![], bad_names: vec![], unseen: vec![] }));
        let engine = listed_engine(source.clone());
        assert_eq!(update(&engine, 10_000).added, 6);

        // The listing of `sub` stops early: c.md and e.md go unseen. They
        // are unknown, not gone; other/f.md, really deleted, is removed.
        source.borrow_mut().incomplete = vec!["sub"];
        source.borrow_mut().unseen = vec!["sub/c.md", "sub/deeper/e.md"];
        source.borrow_mut().files.remove("/n", "other/f.md");
        let report = update(&engine, 20_000);
        assert_eq!(report.removed, 1, "{:?}", report.skipped);
        assert!(report.skipped.iter().any(|s| s.path == "sub/" && s.reason == "EIO"), "{:?}", report.skipped);
        assert_eq!(engine.status().unwrap().total_documents, 5);

        // The root listed in part: nothing unseen anywhere is removed.
        source.borrow_mut().incomplete = vec![""];
        source.borrow_mut().unseen = vec!["a.md", "b.md", "sub/c.md", "sub/d.md", "sub/deeper/e.md"];
        let report = update(&engine, 30_000);
        assert_eq!(report.removed, 0);
        assert_eq!(engine.status().unwrap().total_documents, 5);
    }

    #[test]
    fn a_name_that_is_not_utf8_is_skipped_and_named_and_the_rest_is_indexed() {
        let source = Rc::new(RefCell::new(Listed {
            files: notes(),
            incomplete: vec![],
            bad_names: vec![("sub", None), ("sub", None), ("", Some("caf\\xff.md"))],
            unseen: vec![],
        }));
        let engine = listed_engine(source.clone());
        let report = update(&engine, 10_000);
        assert_eq!((report.added, report.removed), (6, 0));
        let skipped: Vec<_> = report.skipped.iter().map(|s| (s.path.as_str(), s.reason.as_str())).collect();
        assert_eq!(skipped, [("sub/", NAME_NOT_UTF8), ("caf\\xff.md", NAME_NOT_UTF8)], "one line per folder or name");

        // The rest of the folder is complete: a real deletion beside the
        // bad name is still a deletion.
        source.borrow_mut().files.remove("/n", "sub/d.md");
        assert_eq!(update(&engine, 20_000).removed, 1);
    }

    #[test]
    fn unchanged_size_and_mtime_skip_the_read_outside_the_racy_window() {
        let source = Rc::new(RefCell::new(MemorySource::new()));
        source.borrow_mut().insert("/n", "a.md", "alpha", 1_000);
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", source.clone());
        engine.collection_add("/n", Some("n"), None).unwrap();
        assert_eq!(update(&engine, 2_000).added, 1);

        // Same size, same mtime, but the last scan was within the racy
        // window of that mtime: the file is read and the change found.
        source.borrow_mut().insert("/n", "a.md", "bravo", 1_000);
        assert_eq!(update(&engine, 60_000).updated, 1);
        assert_eq!(engine.search("bravo", &Default::default()).unwrap().len(), 1);

        // Now the last scan (60 s) is well after the mtime: a same-size,
        // same-mtime file is trusted without reading (hence "charl" unseen).
        source.borrow_mut().insert("/n", "a.md", "charl", 1_000);
        let report = update(&engine, 120_000);
        assert_eq!((report.unchanged, report.updated), (1, 0));
        assert!(engine.search("charl", &Default::default()).unwrap().is_empty());

        // A new mtime is read again.
        source.borrow_mut().insert("/n", "a.md", "charl", 5_000);
        assert_eq!(update(&engine, 180_000).updated, 1);
        assert_eq!(engine.search("charl", &Default::default()).unwrap().len(), 1);
    }
}
