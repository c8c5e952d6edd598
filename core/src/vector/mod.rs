//! Chunk vectors in the index: segment files beside the text segments,
//! named by the same manifest (so they commit atomically with it), and an
//! exact scan over int8 codes with f32 rescoring.

mod quantize;
mod search;
pub mod segment;
mod writer;

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

pub use search::{VectorMatch, search};
pub use segment::{ChunkVector, VectorSegment, VectorSegmentBuilder, VectorSegmentMeta, dimension_mismatch};
pub use writer::{VectorChange, commit_vectors};

use crate::chunk::{ChunkStrategy, StrategyPlan};
use crate::directory::Directory;
use crate::error::{Error, Result};

/// The vectors of an index, as its manifest records them: which model made
/// them (vectors of different models are not comparable) and where.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VectorManifest {
    /// The embedding model's id (Hugging Face repo or local path).
    pub model: String,
    pub dimension: u32,
    /// What else changes the vectors: prompts, chunk sizes (qmd's
    /// `embed_fingerprint`).
    pub fingerprint: String,
    /// How code files were chunked (`--chunk-strategy`); qmd keeps no such
    /// record, so switching there mixes chunkings. Absent: `regex`.
    #[serde(default, skip_serializing_if = "ChunkStrategy::is_regex")]
    pub chunk_strategy: ChunkStrategy,
    /// Collections whose code was cut by a `chunk_strategy:` of their own
    /// (`index.yml`), and by which.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub collection_chunk_strategies: BTreeMap<String, ChunkStrategy>,
    pub segments: Vec<VectorSegmentMeta>,
}

impl VectorManifest {
    /// How the code of each collection was cut.
    pub fn strategy_plan(&self) -> StrategyPlan {
        StrategyPlan { default: self.chunk_strategy, collections: self.collection_chunk_strategies.clone() }
    }

    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().map(|s| s.file.as_str())
    }

    pub fn rows(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.rows)).sum()
    }

    /// Checks that vectors made now would be comparable with these.
    pub fn check_model(&self, model: &str, dimension: usize, fingerprint: &str) -> Result<()> {
        if self.dimension as usize != dimension {
            return Err(dimension_mismatch(self.dimension as usize, dimension));
        }
        if self.model != model || self.fingerprint != fingerprint {
            return Err(Error::invalid(format!(
                "Embedding model changed: the index has vectors from {} ({}) but the current model is {model} ({fingerprint}). Run 'qmd embed -f' to re-embed with the new model.",
                self.model, self.fingerprint
            )));
        }
        Ok(())
    }
}

/// All vector segments of one index generation, loaded.
pub struct VectorSet {
    pub manifest: VectorManifest,
    pub segments: Vec<VectorSegment>,
}

impl VectorSet {
    pub fn open(dir: &Rc<dyn Directory>, manifest: &VectorManifest) -> Result<VectorSet> {
        let segments = manifest
            .segments
            .iter()
            .map(|m| VectorSegment::open(dir.clone(), m.clone(), manifest.dimension as usize))
            .collect::<Result<_>>()?;
        Ok(VectorSet { manifest: manifest.clone(), segments })
    }

    /// Reads every vector row and checks it against its checksum, and
    /// that its values are finite (a damaged model's NaN matches nothing,
    /// in silence).
    pub fn verify(&self) -> Result<()> {
        let mut non_finite = 0usize;
        for segment in &self.segments {
            for content in &segment.contents {
                let rows = segment.exact(content)?;
                non_finite += usize::from(rows.iter().flatten().any(|v| !v.is_finite()));
            }
        }
        if non_finite > 0 {
            return Err(Error::invalid(format!(
                "the vectors of {non_finite} documents hold NaN or infinite values (made by a damaged embedding \
                 model): run 'qmd embed -f' with a working model"
            )));
        }
        Ok(())
    }

    /// Content hashes that have vectors.
    pub fn hashes(&self) -> HashSet<&str> {
        self.segments.iter().flat_map(|s| s.contents.iter().map(|c| c.hash.as_str())).collect()
    }
}
