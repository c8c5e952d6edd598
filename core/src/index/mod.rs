//! The on-disk index: immutable segments named by a manifest.
//!
//! Opening reads only `manifest.json`; segment sections load on first use.
//! Writes go through [`IndexWriter`]: new segment files and deletion files
//! first, then the manifest by atomic replace, then garbage collection of
//! files no manifest of the last two generations names.

pub(crate) mod codec;
mod manifest;
mod manifest_file;
mod merge;
pub mod segment;
pub(crate) mod validate;
mod writer;

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

pub use manifest::{FORMAT_VERSION, Manifest, SegmentMeta};
use segment::reader::cached;
pub use segment::{DocRecord, SegmentReader};
pub use writer::{CommitStats, IndexWriter, compact};
pub(crate) use writer::{new_file_name, next_generation, publish, write_new};

use crate::directory::Directory;
use crate::error::Result;
use crate::metadata::{Extraction, Filter};
use crate::vector::VectorSet;

/// A document's address: segment index in the snapshot, ordinal inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocAddress {
    pub segment: usize,
    pub doc: u32,
}

/// A live document as listed by the catalog.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    pub address: DocAddress,
    pub record: DocRecord,
}

/// A read-only view of one generation of the index.
pub struct Index {
    dir: Rc<dyn Directory>,
    pub manifest: Manifest,
    pub segments: Vec<SegmentReader>,
    catalog: OnceCell<Vec<CatalogEntry>>,
    counts: OnceCell<BTreeMap<String, u32>>,
    vectors: OnceCell<Option<VectorSet>>,
    /// Documents' metadata read so far (see [`Index::metadata`]).
    metadata: RefCell<HashMap<DocAddress, Rc<Extraction>>>,
}

impl Index {
    /// Opens the current generation: reads the manifest, nothing else.
    pub fn open(dir: Rc<dyn Directory>) -> Result<Index> {
        let manifest = Manifest::load(dir.as_ref())?;
        Ok(Self::from_manifest(dir, manifest))
    }

    /// A view of the generation `manifest` describes (not necessarily the
    /// stored one: a rebuild starts from an empty manifest).
    pub fn from_manifest(dir: Rc<dyn Directory>, manifest: Manifest) -> Index {
        let segments = manifest.segments.iter().map(|m| SegmentReader::open(dir.clone(), m.clone())).collect();
        Index {
            dir,
            manifest,
            segments,
            catalog: OnceCell::new(),
            counts: OnceCell::new(),
            vectors: OnceCell::new(),
            metadata: RefCell::default(),
        }
    }

    /// A document's `qmd.metadata` (see [`SegmentReader::metadata`]),
    /// kept for this view.
    pub fn metadata(&self, address: DocAddress) -> Result<Rc<Extraction>> {
        self.metadata_with(address, None)
    }

    /// [`Index::metadata`] for a caller that holds the document's text
    /// already (a result being shown): a segment from before metadata was
    /// stored reads it from that text, not a second read.
    pub fn metadata_of(&self, address: DocAddress, body: &str) -> Result<Rc<Extraction>> {
        self.metadata_with(address, Some(body))
    }

    fn metadata_with(&self, address: DocAddress, body: Option<&str>) -> Result<Rc<Extraction>> {
        if let Some(known) = self.metadata.borrow().get(&address) {
            return Ok(known.clone());
        }
        let extraction = Rc::new(self.segments[address.segment].metadata(address.doc, body)?);
        self.metadata.borrow_mut().insert(address, extraction.clone());
        Ok(extraction)
    }

    /// Whether the document passes `filter`: its metadata was read without
    /// error (a document whose frontmatter failed is in no filtered
    /// result, as in qmd) and matches.
    pub fn passes(&self, address: DocAddress, filter: &Filter) -> Result<bool> {
        let extraction = self.metadata(address)?;
        Ok(extraction.error.is_none() && filter.matches(&extraction.metadata))
    }

    pub fn directory(&self) -> Rc<dyn Directory> {
        self.dir.clone()
    }

    pub fn total_docs(&self) -> u64 {
        self.manifest.total_docs()
    }

    /// Tokens over all docs and fields, and docs (deleted ones included,
    /// as FTS5 and Lucene do for BM25 statistics).
    pub fn token_stats(&self) -> (u64, u64) {
        self.manifest.segments.iter().fold((0, 0), |(t, d), s| (t + s.tokens, d + u64::from(s.docs)))
    }

    /// Every live document, in segment order. Loaded once per snapshot.
    pub fn catalog(&self) -> Result<&[CatalogEntry]> {
        cached(&self.catalog, || {
            let mut entries = Vec::with_capacity(self.total_docs() as usize);
            for (segment, reader) in self.segments.iter().enumerate() {
                for doc in 0..reader.meta.docs {
                    if !reader.is_deleted(doc)? {
                        entries.push(CatalogEntry { address: DocAddress { segment, doc }, record: reader.doc(doc)? });
                    }
                }
            }
            Ok(entries)
        })
        .map(Vec::as_slice)
    }

    /// Content hashes of the live documents.
    pub fn live_hashes(&self) -> Result<HashSet<&str>> {
        Ok(self.catalog()?.iter().map(|e| e.record.hash.as_str()).collect())
    }

    /// Live documents per collection name, without decoding the catalog
    /// (what `ls`, `status` and `collection list` need).
    /// Computed once per snapshot.
    pub fn collection_counts(&self) -> Result<&BTreeMap<String, u32>> {
        cached(&self.counts, || {
            let mut counts = BTreeMap::new();
            for reader in &self.segments {
                for (name, n) in reader.meta.collections.iter().zip(reader.live_per_collection()?) {
                    *counts.entry(name.clone()).or_insert(0) += n;
                }
            }
            Ok(counts)
        })
    }

    /// The chunk vectors, if `embed` has run. Loaded once per snapshot.
    pub fn vectors(&self) -> Result<Option<&VectorSet>> {
        cached(&self.vectors, || self.manifest.vectors.as_ref().map(|m| VectorSet::open(&self.dir, m)).transpose())
            .map(Option::as_ref)
    }

    pub fn body(&self, entry: &CatalogEntry) -> Result<String> {
        self.segments[entry.address.segment].body(&entry.record)
    }

    /// Bytes of all files the manifest names.
    pub fn size_bytes(&self) -> u64 {
        self.manifest.files().iter().filter_map(|f| self.dir.size(f).ok()).sum::<u64>()
            + self.dir.size(manifest::MANIFEST).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::RamDirectory;
    use crate::index::segment::{DocInput, SegmentBuilder};
    use crate::metadata::extract;

    const NOTES: [(&str, &str); 3] = [
        ("a.md", "---\nqmd:\n  metadata:\n    status: published\n    topics: [rust, wasm]\n---\n# A\n"),
        ("b.md", "---\nqmd:\n  metadata:\n    gone: null\n---\n# B\n"),
        ("c.md", "# C, none\n"),
    ];

    /// One segment of [`NOTES`]; `stored: false` cuts it to the layout of
    /// segments written before metadata was stored.
    fn index(stored: bool) -> Index {
        let mut builder = SegmentBuilder::new();
        for (path, body) in NOTES {
            let metadata = extract(path, body);
            let doc =
                DocInput { collection: "c", path, title: "", hash: "", modified_ms: 0, body, metadata: &metadata };
            builder.add(&doc);
        }
        let (mut bytes, mut meta) = builder.finish("seg-000000.qseg").unwrap();
        if !stored {
            let at = meta.sections.iter().position(|s| s.name == "metaoffs").unwrap();
            bytes.truncate(meta.sections[at].offset as usize);
            meta.sections.truncate(at);
        }
        let dir = RamDirectory::new();
        dir.write(&meta.file, &bytes).unwrap();
        let manifest = Manifest { format: FORMAT_VERSION, next_segment: 1, segments: vec![meta], ..Default::default() };
        validate::check(&manifest).unwrap();
        Index::from_manifest(Rc::new(dir), manifest)
    }

    #[test]
    fn metadata_is_stored_and_older_segments_read_it_from_the_text() {
        for stored in [true, false] {
            let index = index(stored);
            for (doc, (path, body)) in NOTES.iter().enumerate() {
                let address = DocAddress { segment: 0, doc: doc as u32 };
                assert_eq!(*index.metadata(address).unwrap(), extract(path, body), "{path}, stored: {stored}");
                assert_eq!(index.segments[0].stored_metadata(doc as u32).unwrap().is_some(), stored);
            }
        }
    }
}
