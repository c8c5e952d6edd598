//! `embed`: chunk vectors for every content that has none (qmd §4.4).
//!
//! An [`EmbedJob`] hands out texts and takes their embeddings, so the
//! caller decides how models run (the component calls its host, the
//! browser awaits WebGPU). Work goes in batches of documents; each finished
//! batch is committed as a vector segment, so an interrupted run loses at
//! most one batch and the next run resumes after the last commit. A
//! content's vectors are written together or not at all.

use std::collections::{HashSet, VecDeque};

use super::Engine;
use crate::chunk::{Chunk, TokenChunking};
use crate::document::content_hash;
use crate::error::{Error, Result};
use crate::index::{DocAddress, Index};
use crate::inference::{EmbedderInfo, Embedding, Inference};
use crate::vector::{ChunkVector, VectorChange, VectorSegmentBuilder, commit_vectors};

/// Texts per embedding call (qmd's `embedBatch` size).
const TEXTS_PER_CALL: usize = 32;

#[derive(Clone, Debug)]
pub struct EmbedOptions {
    /// Drop existing vectors first (`-f`).
    pub force: bool,
    /// Only this collection (`-c`).
    pub collection: Option<String>,
    pub max_docs_per_batch: usize,
    pub max_batch_bytes: u64,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions { force: false, collection: None, max_docs_per_batch: 64, max_batch_bytes: 64 << 20 }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EmbedReport {
    /// Contents that needed vectors when the run started.
    pub pending: u64,
    pub docs: u64,
    pub chunks: u64,
    /// Texts that were re-split because they exceeded the model's window.
    pub resplit: u64,
    pub bytes: u64,
    pub total_bytes: u64,
    pub cleared: bool,
}

struct Pending {
    hash: String,
    address: DocAddress,
    bytes: u64,
}

struct WorkChunk {
    chunk: Chunk,
    vector: Option<Vec<f32>>,
}

struct WorkContent {
    hash: String,
    chunks: Vec<WorkChunk>,
}

pub struct EmbedJob {
    embedder: EmbedderInfo,
    fingerprint: String,
    chunking: TokenChunking,
    pending: VecDeque<Pending>,
    batch: Vec<WorkContent>,
    /// (content, chunk) of each text handed out and not yet answered.
    asked: Vec<(usize, usize)>,
    max_docs: usize,
    max_bytes: u64,
    pub report: EmbedReport,
}

/// qmd's `embed_fingerprint`: what besides the model changes the vectors.
pub fn embed_fingerprint(embedder: &EmbedderInfo) -> String {
    let chunking = TokenChunking::for_window(embedder.max_tokens);
    let lines = format!(
        "model:{}\nquery:{}__qmd_embedding_query_probe__\ndoc:{}__qmd_embedding_document_probe__\nchunk_tokens:{}\nchunk_overlap_tokens:{}",
        embedder.model, embedder.query_prompt, embedder.document_prompt, chunking.size, chunking.overlap
    );
    content_hash(lines.as_bytes())[..6].to_string()
}

impl Engine {
    /// Plans a run: clears vectors when forced, checks the model against
    /// the index's vectors, and lists the contents that need vectors.
    pub fn embed_start(&self, embedder: EmbedderInfo, options: &EmbedOptions) -> Result<EmbedJob> {
        let config = self.config()?;
        if let Some(name) = &options.collection {
            self.scope(&config, std::slice::from_ref(name))?;
        }
        let fingerprint = embed_fingerprint(&embedder);
        let mut report = EmbedReport::default();
        let index = self.index()?;
        let in_scope = |collection: &str| options.collection.as_deref().is_none_or(|c| c == collection);
        if options.force && index.manifest.vectors.is_some() {
            let change = match &options.collection {
                None => VectorChange::ClearAll,
                Some(_) => VectorChange::Remove(exclusive_hashes(&index, &in_scope)?),
            };
            commit_vectors(&index, change)?;
            report.cleared = true;
        }
        let index = self.index()?;
        let have: HashSet<String> = match index.vectors()? {
            Some(set) => {
                set.manifest.check_model(&embedder.model, embedder.dimension, &fingerprint)?;
                set.hashes().into_iter().map(str::to_string).collect()
            }
            None => HashSet::new(),
        };
        let mut entries: Vec<_> =
            index.catalog()?.iter().filter(|e| in_scope(&e.record.collection) && !have.contains(&e.record.hash)).collect();
        entries.sort_by(|a, b| (&a.record.collection, &a.record.path).cmp(&(&b.record.collection, &b.record.path)));
        let mut seen = HashSet::new();
        let mut pending = VecDeque::new();
        for entry in entries {
            if seen.insert(entry.record.hash.clone()) {
                let bytes = index.segments[entry.address.segment].body(&entry.record)?.len() as u64;
                report.total_bytes += bytes;
                pending.push_back(Pending { hash: entry.record.hash.clone(), address: entry.address, bytes });
            }
        }
        report.pending = pending.len() as u64;
        Ok(EmbedJob {
            chunking: TokenChunking::for_window(embedder.max_tokens),
            embedder,
            fingerprint,
            pending,
            batch: Vec::new(),
            asked: Vec::new(),
            max_docs: options.max_docs_per_batch.max(1),
            max_bytes: options.max_batch_bytes.max(1),
            report,
        })
    }

    /// The next texts to embed, or `None` when the run is complete.
    /// Commits each batch once all its chunks have vectors.
    pub fn embed_next(&self, job: &mut EmbedJob) -> Result<Option<Vec<String>>> {
        loop {
            if !job.asked.is_empty() {
                return Err(Error::invalid("embed_next called before the previous texts were answered"));
            }
            let missing: Vec<(usize, usize)> = job
                .batch
                .iter()
                .enumerate()
                .flat_map(|(c, content)| {
                    content.chunks.iter().enumerate().filter(|(_, w)| w.vector.is_none()).map(move |(i, _)| (c, i))
                })
                .take(TEXTS_PER_CALL)
                .collect();
            if !missing.is_empty() {
                let prompt = &job.embedder.document_prompt;
                let texts = missing.iter().map(|&(c, i)| format!("{prompt}{}", job.batch[c].chunks[i].chunk.text)).collect();
                job.asked = missing;
                return Ok(Some(texts));
            }
            if !job.batch.is_empty() {
                self.commit_batch(job)?;
            }
            if !self.load_batch(job)? {
                return Ok(None);
            }
        }
    }

    /// Takes the embeddings of the texts `embed_next` handed out. A chunk
    /// longer than the model's window is split again instead of kept
    /// truncated.
    pub fn embed_supply(&self, job: &mut EmbedJob, embeddings: Vec<Embedding>) -> Result<()> {
        let asked = std::mem::take(&mut job.asked);
        if embeddings.len() != asked.len() {
            return Err(Error::invalid(format!("expected {} embeddings, got {}", asked.len(), embeddings.len())));
        }
        let mut resplit: Vec<(usize, usize, u32)> = Vec::new();
        for (&(c, i), embedding) in asked.iter().zip(embeddings) {
            if embedding.vector.len() != job.embedder.dimension {
                return Err(crate::vector::dimension_mismatch(job.embedder.dimension, embedding.vector.len()));
            }
            if embedding.tokens as usize > job.chunking.size && job.batch[c].chunks[i].chunk.text.chars().count() > 1 {
                resplit.push((c, i, embedding.tokens));
            }
            job.batch[c].chunks[i].vector = Some(embedding.vector);
        }
        // Back to front so earlier indices stay valid.
        for &(c, i, tokens) in resplit.iter().rev() {
            let pieces = job.chunking.resplit(&job.batch[c].chunks[i].chunk, tokens as usize);
            if pieces.len() > 1 {
                job.report.resplit += 1;
                let work = pieces.into_iter().map(|chunk| WorkChunk { chunk, vector: None });
                job.batch[c].chunks.splice(i..=i, work);
            }
        }
        Ok(())
    }

    /// Runs a whole `embed` with synchronous models.
    pub fn embed_with(
        &self,
        inference: &dyn Inference,
        options: &EmbedOptions,
        progress: super::Progress,
    ) -> Result<EmbedReport> {
        let mut job = self.embed_start(inference.embedder()?, options)?;
        progress("embed", 0, job.report.total_bytes);
        while let Some(texts) = self.embed_next(&mut job)? {
            let embeddings = inference.embed(&texts)?;
            self.embed_supply(&mut job, embeddings)?;
            progress("embed", job.report.bytes, job.report.total_bytes);
        }
        Ok(job.report)
    }

    /// Reads and chunks the next batch of pending contents.
    fn load_batch(&self, job: &mut EmbedJob) -> Result<bool> {
        let index = self.index()?;
        let mut bytes = 0;
        while let Some(next) = job.pending.front() {
            if job.batch.len() >= job.max_docs || (!job.batch.is_empty() && bytes + next.bytes > job.max_bytes) {
                break;
            }
            let next = job.pending.pop_front().expect("front exists");
            bytes += next.bytes;
            let body = body_at(&index, next.address)?;
            let chunks = if body.trim().is_empty() { Vec::new() } else { job.chunking.first_pass(&body) };
            job.batch.push(WorkContent {
                hash: next.hash,
                chunks: chunks.into_iter().map(|chunk| WorkChunk { chunk, vector: None }).collect(),
            });
            job.report.bytes += next.bytes;
        }
        Ok(!job.batch.is_empty())
    }

    fn commit_batch(&self, job: &mut EmbedJob) -> Result<()> {
        let mut builder = VectorSegmentBuilder::new(job.embedder.dimension);
        for content in job.batch.drain(..) {
            let chunks: Vec<ChunkVector> = content
                .chunks
                .into_iter()
                .map(|w| ChunkVector { pos: w.chunk.pos as u32, vector: w.vector.expect("every chunk answered") })
                .collect();
            job.report.docs += 1;
            job.report.chunks += chunks.len() as u64;
            builder.add(&content.hash, &chunks)?;
        }
        let change = VectorChange::Add {
            model: job.embedder.model.clone(),
            fingerprint: job.fingerprint.clone(),
            dimension: job.embedder.dimension,
            builder,
        };
        commit_vectors(&*self.index()?, change)
    }
}

fn body_at(index: &Index, address: DocAddress) -> Result<String> {
    let segment = &index.segments[address.segment];
    segment.body(&segment.doc(address.doc)?)
}

/// Hashes used in scope and by no document outside it (qmd keeps vectors
/// that another collection still shares).
fn exclusive_hashes(index: &Index, in_scope: &dyn Fn(&str) -> bool) -> Result<HashSet<String>> {
    let catalog = index.catalog()?;
    let outside: HashSet<&str> =
        catalog.iter().filter(|e| !in_scope(&e.record.collection)).map(|e| e.record.hash.as_str()).collect();
    Ok(catalog
        .iter()
        .filter(|e| in_scope(&e.record.collection) && !outside.contains(e.record.hash.as_str()))
        .map(|e| e.record.hash.clone())
        .collect())
}
