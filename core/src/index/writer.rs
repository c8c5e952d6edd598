//! Commits changes to the index: one new segment for added documents,
//! deletion files for removed ones, merges, then the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::manifest::{MANIFEST, Manifest, SegmentMeta};
use super::merge::{FULL_SEGMENT_BYTES, SEGMENT_TEXT_BYTES, merge_candidates};
use super::segment::{DocInput, SegmentBuilder, SegmentReader};
use super::{DocAddress, Index};
use crate::directory::Directory;
use crate::error::{ErrorKind, Result};

/// What a commit did.
#[derive(Debug, Default, Clone)]
pub struct CommitStats {
    pub generation: u64,
    pub segments_merged: u32,
}

/// Buffers adds and deletes against one snapshot; nothing is visible until
/// [`IndexWriter::commit`] replaces the manifest. Segments that fill up are
/// written as the adds come, named by the manifest only at the commit.
pub struct IndexWriter<'a> {
    index: &'a Index,
    builder: SegmentBuilder,
    /// The manifest being built: new segments are added as they are written.
    next: Manifest,
    deletes: BTreeMap<usize, BTreeSet<u32>>,
    last_update: BTreeMap<String, i64>,
    dropped_collections: BTreeSet<String>,
}

impl<'a> IndexWriter<'a> {
    pub fn new(index: &'a Index) -> Self {
        IndexWriter {
            index,
            builder: SegmentBuilder::new(),
            next: next_generation(&index.manifest),
            deletes: BTreeMap::new(),
            last_update: BTreeMap::new(),
            dropped_collections: BTreeSet::new(),
        }
    }

    pub fn add(&mut self, doc: &DocInput<'_>) -> Result<()> {
        self.builder.add(doc);
        if self.builder.text_bytes() >= SEGMENT_TEXT_BYTES {
            let full = std::mem::take(&mut self.builder);
            let meta = write_segment(self.index.directory().as_ref(), &mut self.next, full)?;
            self.next.segments.push(meta);
        }
        Ok(())
    }

    pub fn delete(&mut self, address: DocAddress) {
        self.deletes.entry(address.segment).or_default().insert(address.doc);
    }

    /// Records that a collection was scanned at `now_ms`.
    pub fn mark_updated(&mut self, collection: &str, now_ms: i64) {
        self.last_update.insert(collection.to_string(), now_ms);
    }

    /// Forgets a collection's update time (after it is removed).
    pub fn drop_collection(&mut self, collection: &str) {
        self.dropped_collections.insert(collection.to_string());
    }

    /// Whether committing would change anything.
    pub fn is_empty(&self) -> bool {
        self.builder.is_empty()
            && self.next.segments.len() == self.index.manifest.segments.len()
            && self.deletes.is_empty()
            && self.last_update.is_empty()
            && self.dropped_collections.is_empty()
    }

    pub fn commit(self) -> Result<CommitStats> {
        let dir = self.index.directory();
        let mut next = self.next;
        for (name, time) in self.last_update {
            next.last_update.insert(name, time);
        }
        for name in &self.dropped_collections {
            next.last_update.remove(name);
        }

        // Deletions: a new bitset file per touched segment (old bits included).
        for (&segment, docs) in &self.deletes {
            let reader = &self.index.segments[segment];
            let mut bits = reader.deleted_bits()?;
            bits.resize(reader.meta.docs.div_ceil(8) as usize, 0);
            for &doc in docs {
                bits[doc as usize / 8] |= 1 << (doc % 8);
            }
            let deleted = bits.iter().map(|b| b.count_ones()).sum::<u32>();
            let meta = &mut next.segments[segment];
            if deleted != meta.deleted {
                let file = format!("{}.{}.del", meta.file.trim_end_matches(".qseg"), next.generation);
                write_new(dir.as_ref(), &file, &bits)?;
                meta.deletes = Some(file);
                meta.deleted = deleted;
                meta.deletes_crc32 = crc32fast::hash(&bits);
            }
        }
        next.segments.retain(|s| s.alive() > 0);

        if !self.builder.is_empty() {
            let meta = write_segment(dir.as_ref(), &mut next, self.builder)?;
            next.segments.push(meta);
        }

        let merged = merge(&dir, &mut next)?;
        publish(dir.as_ref(), &next)?;
        Ok(CommitStats { generation: next.generation, segments_merged: merged })
    }
}

/// The manifest a commit starts from: the next generation, remembering the
/// current files so readers of this one can finish.
pub(crate) fn next_generation(old: &Manifest) -> Manifest {
    let mut next = old.clone();
    next.generation += 1;
    next.previous_files = old.files();
    next
}

/// Makes `next` the current generation (atomic manifest replace), then
/// removes files no longer named.
pub(crate) fn publish(dir: &dyn Directory, next: &Manifest) -> Result<()> {
    next.store(dir)?;
    collect_garbage(dir, next);
    Ok(())
}

/// The name for a new segment or vector file (`seg-NNNNNN.qseg`), taking
/// its number from the manifest.
pub(crate) fn new_file_name(manifest: &mut Manifest, prefix: &str, suffix: &str) -> Result<String> {
    let number = manifest.next_segment;
    manifest.next_segment =
        number.checked_add(1).ok_or_else(|| crate::Error::corrupt(MANIFEST, "next_segment is at its maximum"))?;
    Ok(format!("{prefix}{number:06}{suffix}"))
}

/// Writes a file no manifest names yet. Never overwrites: a file already
/// there under a fresh number can only be what a crashed commit left
/// (numbers are never reused once published), so it is removed first.
pub(crate) fn write_new(dir: &dyn Directory, name: &str, data: &[u8]) -> Result<()> {
    match dir.write(name, data) {
        Err(e) if e.kind == ErrorKind::AlreadyExists => {
            dir.delete(name)?;
            dir.write(name, data)
        }
        other => other,
    }
}

fn write_segment(dir: &dyn Directory, manifest: &mut Manifest, builder: SegmentBuilder) -> Result<SegmentMeta> {
    let file = new_file_name(manifest, "seg-", ".qseg")?;
    let (bytes, meta) = builder.finish(&file)?;
    write_new(dir, &file, &bytes)?;
    Ok(meta)
}

/// Rewrites the segments the policy picks into one, live docs only.
fn merge(dir: &Rc<dyn Directory>, manifest: &mut Manifest) -> Result<u32> {
    let picked = merge_candidates(&manifest.segments);
    merge_segments(dir, manifest, &picked)
}

/// Rewrites every segment with deleted documents and merges the ones not
/// yet full, as one commit (`cleanup`). Returns how many were rewritten.
pub fn compact(index: &Index) -> Result<u32> {
    let dir = index.directory();
    let mut next = next_generation(&index.manifest);
    let picked: Vec<usize> = (0..next.segments.len())
        .filter(|&i| next.segments[i].deleted > 0 || next.segments[i].bytes() < FULL_SEGMENT_BYTES)
        .collect();
    if picked.len() < 2 && picked.iter().all(|&i| next.segments[i].deleted == 0) {
        return Ok(0);
    }
    let merged = merge_segments(&dir, &mut next, &picked)?;
    publish(dir.as_ref(), &next)?;
    Ok(merged)
}

/// Replaces the `picked` segments by their live documents, rewritten.
fn merge_segments(dir: &Rc<dyn Directory>, manifest: &mut Manifest, picked: &[usize]) -> Result<u32> {
    if picked.is_empty() {
        return Ok(0);
    }
    let mut builder = SegmentBuilder::new();
    let mut written = Vec::new();
    for &i in picked {
        let reader = SegmentReader::open(dir.clone(), manifest.segments[i].clone());
        for doc in 0..reader.meta.docs {
            if reader.is_deleted(doc)? {
                continue;
            }
            let record = reader.doc(doc)?;
            let body = reader.body(&record)?;
            let metadata = reader.metadata(doc, Some(&body))?;
            builder.add(&DocInput {
                collection: &record.collection,
                path: &record.path,
                title: &record.title,
                hash: &record.hash,
                modified_ms: record.modified_ms,
                body: &body,
                metadata: &metadata,
            });
            if builder.text_bytes() >= SEGMENT_TEXT_BYTES {
                written.push(write_segment(dir.as_ref(), manifest, std::mem::take(&mut builder))?);
            }
        }
    }
    if !builder.is_empty() {
        written.push(write_segment(dir.as_ref(), manifest, builder)?);
    }
    let mut kept: Vec<SegmentMeta> = Vec::new();
    for (i, meta) in manifest.segments.drain(..).enumerate() {
        if !picked.contains(&i) {
            kept.push(meta);
        }
    }
    kept.extend(written);
    manifest.segments = kept;
    Ok(picked.len() as u32)
}

/// Deletes index files that neither this generation nor the previous one
/// names (leftovers of replaced generations or of a crashed update).
/// Failures are ignored: a stray file costs space, not correctness.
fn collect_garbage(dir: &dyn Directory, manifest: &Manifest) {
    let keep: BTreeSet<String> = manifest.files().into_iter().chain(manifest.previous_files.iter().cloned()).collect();
    let Ok(files) = dir.list() else { return };
    for file in files {
        let ours = file.starts_with("seg-") || file.starts_with("vec-") || file.ends_with(".tmp");
        if ours && file != MANIFEST && !keep.contains(&file) {
            let _ = dir.delete(&file);
        }
    }
}
