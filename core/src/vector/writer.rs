//! Committing vectors: a new vector segment (or removals), then the
//! manifest by atomic replace, exactly as text commits do. Segments are
//! merged like a binary counter (the newest two whenever the newer is at
//! least as large as the older), so an embed run of many small batches
//! rewrites each vector O(log n) times; merges drop vectors of contents no
//! live document has any more.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::rc::Rc;

use super::VectorManifest;
use super::segment::{VectorSegment, VectorSegmentBuilder, VectorSegmentMeta};
use crate::chunk::StrategyPlan;
use crate::directory::Directory;
use crate::error::Result;
use crate::index::segment::reader::cached;
use crate::index::{Index, Manifest, new_file_name, next_generation, publish, write_new};

/// What a vector commit changes.
pub enum VectorChange {
    /// New contents' vectors, from the named model, each collection's
    /// code files chunked as `chunking` says.
    Add { model: String, fingerprint: String, chunking: StrategyPlan, builder: VectorSegmentBuilder, dimension: usize },
    /// Drops every vector (`embed -f`).
    ClearAll,
    /// Drops the vectors of these contents (`embed -f -c name`).
    Remove(HashSet<String>),
}

/// Applies `change` on top of `index` (which must be the current
/// generation, opened under the index write lock).
pub fn commit_vectors(index: &Index, change: VectorChange) -> Result<()> {
    let dir = index.directory();
    let mut next = next_generation(&index.manifest);
    // Hashes of live documents, for merges only: most commits need none.
    let live_cell = OnceCell::new();
    let live = || cached(&live_cell, || index.live_hashes());
    match change {
        VectorChange::ClearAll => next.vectors = None,
        VectorChange::Remove(hashes) => {
            if let Some(vectors) = next.vectors.take() {
                let live = live()?;
                let keep = |hash: &str| !hashes.contains(hash) && live.contains(hash);
                let all: Vec<usize> = (0..vectors.segments.len()).collect();
                next.vectors = Some(rewrite(&dir, &mut next, vectors, &all, &keep)?);
            }
        }
        VectorChange::Add { model, fingerprint, chunking, builder, dimension } => {
            let mut vectors = match next.vectors.take() {
                Some(v) => {
                    v.check_model(&model, dimension, &fingerprint)?;
                    v
                }
                None => VectorManifest {
                    model,
                    dimension: dimension as u32,
                    fingerprint,
                    chunk_strategy: chunking.default,
                    collection_chunk_strategies: chunking.collections.clone(),
                    segments: Vec::new(),
                },
            };
            // The run re-chunked every code content it found chunked
            // another way (`Engine::embed_start`).
            vectors.chunk_strategy = chunking.default;
            vectors.collection_chunk_strategies = chunking.collections;
            if !builder.is_empty() {
                let meta = write(dir.as_ref(), &mut next, builder)?;
                vectors.segments.push(meta);
            }
            while let [.., older, newer] = vectors.segments.as_slice() {
                if newer.docs < older.docs {
                    break;
                }
                let n = vectors.segments.len();
                let live = live()?;
                vectors = rewrite(&dir, &mut next, vectors, &[n - 2, n - 1], &|h| live.contains(h))?;
            }
            next.vectors = Some(vectors);
        }
    }
    publish(dir.as_ref(), &next)
}

fn write(dir: &dyn Directory, manifest: &mut Manifest, builder: VectorSegmentBuilder) -> Result<VectorSegmentMeta> {
    let file = new_file_name(manifest, "vec-", ".qvec")?;
    let (bytes, meta) = builder.finish(&file);
    write_new(dir, &file, &bytes)?;
    Ok(meta)
}

/// Replaces the `picked` segments by one holding the contents `keep` accepts.
fn rewrite(
    dir: &Rc<dyn Directory>,
    manifest: &mut Manifest,
    mut vectors: VectorManifest,
    picked: &[usize],
    keep: &dyn Fn(&str) -> bool,
) -> Result<VectorManifest> {
    let dim = vectors.dimension as usize;
    let mut builder = VectorSegmentBuilder::new(dim);
    for &i in picked {
        let segment = VectorSegment::open(dir.clone(), vectors.segments[i].clone(), dim)?;
        for content in segment.contents.iter().filter(|c| keep(&c.hash)) {
            builder.add(&content.hash, &segment.content_vectors(content)?)?;
        }
    }
    let mut kept = Vec::new();
    for (i, meta) in vectors.segments.drain(..).enumerate() {
        if !picked.contains(&i) {
            kept.push(meta);
        }
    }
    vectors.segments = kept;
    if !builder.is_empty() {
        let at = picked.first().copied().unwrap_or(0).min(vectors.segments.len());
        let meta = write(dir.as_ref(), manifest, builder)?;
        vectors.segments.insert(at, meta);
    }
    Ok(vectors)
}
