//! `manifest.json`: the one small file that says which segment files make up
//! the index. It is replaced atomically after every segment file it names
//! has been written, so a reader sees the old index or the new, never a mix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::vector::VectorManifest;

pub const MANIFEST: &str = "manifest.json";
/// Bumped whenever a segment or manifest layout changes incompatibly.
/// 2: bodies in bounded lz4 blocks; a crc32 per body, per term's postings
/// and positions, per deletions file and per vector content.
pub const FORMAT_VERSION: u32 = 2;

/// Where a section lives inside a segment file, with its checksum.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Section {
    pub name: String,
    pub offset: u64,
    pub len: u64,
    pub crc32: u32,
}

/// One immutable segment file plus its current deletions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SegmentMeta {
    pub file: String,
    pub docs: u32,
    /// Tokens over all fields of all docs (BM25's average length).
    pub tokens: u64,
    /// Collection names; docs refer to them by index.
    pub collections: Vec<String>,
    pub sections: Vec<Section>,
    /// File holding the deleted-docs bitset, if any doc was deleted.
    #[serde(default)]
    pub deletes: Option<String>,
    #[serde(default)]
    pub deleted: u32,
    /// crc32 of the deletions file.
    #[serde(default)]
    pub deletes_crc32: u32,
}

impl SegmentMeta {
    pub fn alive(&self) -> u32 {
        self.docs.saturating_sub(self.deleted)
    }

    /// Bytes of the segment file (the sum of its sections).
    pub fn bytes(&self) -> u64 {
        self.sections.iter().map(|s| s.len).sum()
    }

    pub fn section(&self, name: &str) -> Result<&Section> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::corrupt(&self.file, format!("missing section {name}")))
    }

    /// Every file this segment needs.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.file.as_str()).chain(self.deletes.as_deref())
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format: u32,
    /// Incremented by every commit.
    pub generation: u64,
    /// Number for the next segment file name.
    pub next_segment: u64,
    pub segments: Vec<SegmentMeta>,
    /// Collection → milliseconds of the last update that scanned it.
    #[serde(default)]
    pub last_update: BTreeMap<String, i64>,
    /// Files of the previous generation, kept one commit longer so a reader
    /// that opened the old manifest can finish.
    #[serde(default)]
    pub previous_files: Vec<String>,
    /// Chunk vectors, once `embed` has run.
    #[serde(default)]
    pub vectors: Option<VectorManifest>,
    /// crc32 of the manifest's canonical form (compact JSON with this field
    /// 0): every value a reader trusts is covered, while a reformatted file
    /// still reads.
    #[serde(default)]
    pub checksum: u32,
}

impl Manifest {
    pub fn files(&self) -> Vec<String> {
        let vectors = self.vectors.iter().flat_map(VectorManifest::files);
        self.segments.iter().flat_map(|s| s.files()).chain(vectors).map(str::to_string).collect()
    }

    pub fn total_docs(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.alive())).sum()
    }
}
