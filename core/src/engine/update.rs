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
use crate::source::{ReadFailure, WalkEntry};

impl Engine {
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

            let mut stats = CollectionReport { name: collection.name.clone(), ..Default::default() };
            let mut seen: HashSet<String> = HashSet::new();
            for (i, rel) in files.iter().enumerate() {
                if i % 64 == 0 {
                    progress(&collection.name, i as u64, total);
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
                let previous = existing.get(&(collection.name.as_str(), rel.as_str()));
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
