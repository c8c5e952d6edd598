//! `embed`: chunk vectors for every content that has none (qmd §4.4).
//!
//! An [`EmbedJob`] hands out texts and takes their embeddings, so the
//! caller decides how models run (the component calls its host, the
//! browser awaits WebGPU). Work goes in batches of documents; each finished
//! batch is committed as a vector segment, so an interrupted run loses at
//! most one batch and the next run resumes after the last commit. A
//! content's vectors are written together or not at all.

use std::collections::{HashMap, HashSet, VecDeque};

use super::Engine;
use crate::chunk::{Chunk, ChunkStrategy, Declarations, Language, StrategyPlan, TokenChunking, TokenDensity};
use crate::collection::Config;
use crate::document::content_hash;
use crate::error::{Error, Result};
use crate::index::{DocAddress, Index};
use crate::inference::{EmbedderInfo, Embedding, Inference};
use crate::vector::{ChunkVector, VectorChange, VectorSegmentBuilder, commit_vectors};

#[derive(Clone, Debug)]
pub struct EmbedOptions {
    /// Drop existing vectors first (`-f`).
    pub force: bool,
    /// Only this collection (`-c`).
    pub collection: Option<String>,
    pub max_docs_per_batch: usize,
    pub max_batch_bytes: u64,
    /// Texts per embedding call. qmd's `embedBatch` is 32; a native host
    /// asks for more, so its passes can fill every core or a GPU.
    pub texts_per_call: usize,
    /// Code files cut at their declarations too (`auto`) or not; `None`
    /// keeps the strategy the index's vectors were made with (`regex` for
    /// an index without vectors).
    pub chunk_strategy: Option<ChunkStrategy>,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            force: false,
            collection: None,
            max_docs_per_batch: 64,
            max_batch_bytes: 64 << 20,
            texts_per_call: 32,
            chunk_strategy: None,
        }
    }
}

/// What a run did.
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
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
    /// The run stopped at a batch boundary before finishing (a time
    /// limit); the next run resumes there.
    pub stopped: bool,
    /// Contents whose code chunking changed strategy, re-embedded.
    pub rechunked: u64,
    /// Code files `auto` could not parse, chunked by the markdown rules:
    /// one line per language (its first such file).
    pub fallbacks: Vec<String>,
}

struct Pending {
    hash: String,
    /// The first pending document's title (qmd embeds each content once,
    /// with the title of the document it meets first).
    title: String,
    address: DocAddress,
    /// The first pending document's path: its language under `auto`.
    path: String,
    /// How this content is cut: its first document's collection's strategy.
    strategy: ChunkStrategy,
    bytes: u64,
}

struct WorkChunk {
    chunk: Chunk,
    vector: Option<Vec<f32>>,
}

struct WorkContent {
    hash: String,
    title: String,
    chunks: Vec<WorkChunk>,
}

pub struct EmbedJob {
    embedder: EmbedderInfo,
    fingerprint: String,
    chunking: TokenChunking,
    /// Each collection's strategy, recorded with the vectors.
    plan: StrategyPlan,
    /// Languages a fallback was reported for (once each).
    fell_back: HashSet<Language>,
    density: TokenDensity,
    pending: VecDeque<Pending>,
    batch: Vec<WorkContent>,
    /// (content, chunk) of each text handed out and not yet answered.
    asked: Vec<(usize, usize)>,
    max_docs: usize,
    max_bytes: u64,
    texts_per_call: usize,
    /// `-f`'s clearing, committed with the first batch (or at the end of
    /// a run with nothing to embed): a model that fails on its first texts
    /// leaves the index as it was.
    clear: Option<VectorChange>,
    pub report: EmbedReport,
}

impl EmbedJob {
    /// Whether the run will read a code file's syntax: `auto` with a code
    /// file pending (the browser loads its grammars only then).
    pub fn reads_code(&self) -> bool {
        self.pending.iter().any(|p| p.strategy == ChunkStrategy::Auto && Language::of_path(&p.path).is_some())
    }

    /// Whether the batch in hand has no answer yet (it was just loaded).
    fn batch_untouched(&self) -> bool {
        self.batch.iter().all(|c| c.chunks.iter().all(|w| w.vector.is_none()))
    }
}

/// qmd's `embed_fingerprint`: what besides the model changes the vectors.
pub fn embed_fingerprint(embedder: &EmbedderInfo) -> String {
    let chunking = TokenChunking::for_window(embedder.max_tokens);
    let mut lines = format!(
        "model:{}\nquery:{}\ndoc:{}\nchunk_tokens:{}\nchunk_overlap_tokens:{}",
        embedder.model,
        embedder.query_text("__qmd_embedding_query_probe__"),
        embedder.document_text(Some("__qmd_embedding_title_probe__"), "__qmd_embedding_document_probe__"),
        chunking.size,
        chunking.overlap
    );
    // Only where qmd has no such case, so GGUF models keep qmd's value.
    if !embedder.weights.is_empty() {
        lines.push_str(&format!("\nweights:{}", embedder.weights));
    }
    content_hash(lines.as_bytes())[..6].to_string()
}

impl Engine {
    /// Whether a query chunking by `requested` (else the strategy the
    /// index records) may read a code file's syntax: `auto` over an index
    /// with code files.
    pub fn query_reads_code(&self, requested: Option<ChunkStrategy>) -> Result<bool> {
        let index = self.index()?;
        let plan = self.strategy_plan(&index, &self.config()?, requested)?;
        Ok(index.catalog()?.iter().any(|e| {
            plan.of(&e.record.collection) == ChunkStrategy::Auto && Language::of_path(&e.record.path).is_some()
        }))
    }

    /// How each collection's code is cut by a run asking for `requested`
    /// (`--chunk-strategy`): a collection's own `chunk_strategy:` first,
    /// then the flag, then the strategy the index records.
    pub(crate) fn strategy_plan(
        &self,
        index: &Index,
        config: &Config,
        requested: Option<ChunkStrategy>,
    ) -> Result<StrategyPlan> {
        let stored = index.vectors()?.map(|set| set.manifest.chunk_strategy);
        Ok(StrategyPlan::new(requested.or(stored).unwrap_or_default(), config))
    }

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
        let mut clear = match (options.force && index.manifest.vectors.is_some(), &options.collection) {
            (false, _) => None,
            (true, None) => Some(VectorChange::ClearAll),
            (true, Some(_)) => Some(VectorChange::Remove(exclusive_hashes(&index, &in_scope)?)),
        };
        let stored = index.vectors()?;
        let plan = self.strategy_plan(&index, &config, options.chunk_strategy)?;
        // A code content is cut as its first document's collection says.
        let code = code_owners(&index)?;
        // Vectors of code files chunked another way are dropped, in every
        // collection (the record is the index's); markdown is cut the same
        // either way and keeps its vectors.
        if let Some(set) = stored
            && set.manifest.strategy_plan() != plan
            && !matches!(clear, Some(VectorChange::ClearAll))
        {
            let (stored, was) = (set.hashes(), set.manifest.strategy_plan());
            let mut stale: HashSet<String> = code
                .iter()
                .filter(|(hash, owner)| stored.contains(hash.as_str()) && was.of(owner) != plan.of(owner))
                .map(|(hash, _)| hash.clone())
                .collect();
            report.rechunked = stale.len() as u64;
            if let Some(VectorChange::Remove(forced)) = clear.take() {
                stale.extend(forced);
            }
            if !stale.is_empty() {
                clear = Some(VectorChange::Remove(stale));
            }
        }
        // The vectors the run keeps: those the pending clear leaves.
        let have: HashSet<String> = match (index.vectors()?, &clear) {
            (None, _) | (Some(_), Some(VectorChange::ClearAll)) => HashSet::new(),
            (Some(set), clear) => {
                let cleared = |hash: &str| matches!(clear, Some(VectorChange::Remove(gone)) if gone.contains(hash));
                let kept: HashSet<String> =
                    set.hashes().into_iter().filter(|h| !cleared(h)).map(str::to_string).collect();
                if !kept.is_empty() {
                    set.manifest.check_model(&embedder.model, embedder.dimension, &fingerprint)?;
                }
                kept
            }
        };
        let mut entries: Vec<_> = index
            .catalog()?
            .iter()
            .filter(|e| in_scope(&e.record.collection) && !have.contains(&e.record.hash))
            .collect();
        entries.sort_by(|a, b| (&a.record.collection, &a.record.path).cmp(&(&b.record.collection, &b.record.path)));
        let mut seen = HashSet::new();
        let mut pending = VecDeque::new();
        for entry in entries {
            if seen.insert(entry.record.hash.clone()) {
                // The file's size: what progress and batch limits count,
                // without decoding every pending body up front.
                let bytes = entry.record.size;
                report.total_bytes += bytes;
                let strategy = code.get(&entry.record.hash).map_or(ChunkStrategy::Regex, |owner| plan.of(owner));
                pending.push_back(Pending {
                    hash: entry.record.hash.clone(),
                    title: entry.record.title.clone(),
                    address: entry.address,
                    path: entry.record.path.clone(),
                    strategy,
                    bytes,
                });
            }
        }
        report.pending = pending.len() as u64;
        Ok(EmbedJob {
            chunking: TokenChunking::for_window(embedder.max_tokens),
            plan,
            fell_back: HashSet::new(),
            density: TokenDensity::default(),
            embedder,
            fingerprint,
            pending,
            batch: Vec::new(),
            asked: Vec::new(),
            max_docs: options.max_docs_per_batch.max(1),
            max_bytes: options.max_batch_bytes.max(1),
            texts_per_call: options.texts_per_call.max(1),
            clear,
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
                .take(job.texts_per_call)
                .collect();
            if !missing.is_empty() {
                let texts = missing
                    .iter()
                    .map(|&(c, i)| {
                        job.embedder.document_text(Some(&job.batch[c].title), &job.batch[c].chunks[i].chunk.text)
                    })
                    .collect();
                job.asked = missing;
                return Ok(Some(texts));
            }
            if !job.batch.is_empty() {
                self.commit_batch(job)?;
            }
            if !self.load_batch(job)? {
                self.commit_clear(job)?;
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
            // Checked where every model's vectors enter the index: a NaN
            // would be stored, and then match nothing, in silence.
            if embedding.vector.iter().any(|v| !v.is_finite()) {
                return Err(Error::invalid(format!(
                    "the embedding model {} gave a vector with NaN or infinite values (for a chunk of {}): \
                     its weights are damaged; nothing from this batch was stored",
                    job.embedder.model,
                    crate::display::escape_controls(&job.batch[c].title)
                )));
            }
            let chars = job.batch[c].chunks[i].chunk.text.chars().count();
            job.density.record(chars, embedding.tokens as usize);
            if embedding.tokens as usize > job.chunking.size && chars > 1 {
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
        self.embed_until(inference, options, progress, &mut || true)
    }

    /// [`Self::embed_with`], asking `go_on` before each batch: `false`
    /// stops there (every batch before it committed) with `stopped` set.
    pub fn embed_until(
        &self,
        inference: &dyn Inference,
        options: &EmbedOptions,
        progress: super::Progress,
        go_on: &mut dyn FnMut() -> bool,
    ) -> Result<EmbedReport> {
        let mut job = self.embed_start(inference.embedder()?, options)?;
        progress("embed", 0, job.report.total_bytes);
        while let Some(texts) = self.embed_next(&mut job)? {
            if job.batch_untouched() && !go_on() {
                job.report.stopped = true;
                break;
            }
            let embeddings = inference.embed(&texts)?;
            self.embed_supply(&mut job, embeddings)?;
            progress("embed", job.report.bytes, job.report.total_bytes);
        }
        Ok(job.report)
    }

    /// Reads and chunks the next batch of pending contents.
    fn load_batch(&self, job: &mut EmbedJob) -> Result<bool> {
        let index = self.index()?;
        // What the run has measured so far; it changes only as answers come.
        let chars_per_token = job.density.chars_per_token();
        let mut bytes = 0;
        while let Some(next) = job.pending.front() {
            if job.batch.len() >= job.max_docs || (!job.batch.is_empty() && bytes + next.bytes > job.max_bytes) {
                break;
            }
            let next = job.pending.pop_front().expect("front exists");
            bytes += next.bytes;
            let body = body_at(&index, next.address)?;
            let chunks = if body.trim().is_empty() {
                Vec::new()
            } else {
                let declarations = Declarations::of(&body, &next.path, next.strategy).unwrap_or_else(|fallback| {
                    if job.fell_back.insert(fallback.language) {
                        let path = crate::display::escape_controls(&next.path);
                        job.report.fallbacks.push(format!("{path}: {fallback}"));
                    }
                    Declarations::default()
                });
                job.chunking.first_pass(&body, chars_per_token, &declarations)
            };
            job.batch.push(WorkContent {
                hash: next.hash,
                title: next.title,
                chunks: chunks.into_iter().map(|chunk| WorkChunk { chunk, vector: None }).collect(),
            });
            job.report.bytes += next.bytes;
        }
        Ok(!job.batch.is_empty())
    }

    /// Commits `-f`'s pending clearing, once.
    fn commit_clear(&self, job: &mut EmbedJob) -> Result<()> {
        if let Some(clear) = job.clear.take() {
            commit_vectors(&*self.index()?, clear)?;
            job.report.cleared = true;
        }
        Ok(())
    }

    fn commit_batch(&self, job: &mut EmbedJob) -> Result<()> {
        self.commit_clear(job)?;
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
            chunking: job.plan.clone(),
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

/// The live code contents (by extension), which `auto` and `regex` chunk
/// apart, each with the collection of its first document in (collection,
/// path) order: the one whose strategy cuts it.
fn code_owners(index: &Index) -> Result<HashMap<String, String>> {
    let catalog = index.catalog()?;
    let mut code: Vec<_> = catalog.iter().filter(|e| Language::of_path(&e.record.path).is_some()).collect();
    code.sort_by(|a, b| (&a.record.collection, &a.record.path).cmp(&(&b.record.collection, &b.record.path)));
    let mut owners = HashMap::new();
    for entry in code {
        owners.entry(entry.record.hash.clone()).or_insert_with(|| entry.record.collection.clone());
    }
    Ok(owners)
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

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::api::{QueryRequest, SearchOptions};
    use crate::source::MemorySource;

    /// A stand-in embedder for engine logic (real models are tested in
    /// `tests/tests/models.rs`): words hashed into 32 buckets, normalised;
    /// one token per word.
    pub(crate) struct WordHash {
        pub model: String,
        pub max_tokens: usize,
        pub calls: Cell<usize>,
        /// None: no reranker; Some(true): scores by word overlap;
        /// Some(false): a reranker that fails.
        pub reranker: Option<bool>,
        pub document_prompt: String,
        /// A recorded generation: what the expansion model "says" for
        /// every query (`None`: no expansion model; `"!fail"`: it fails).
        pub expansion: Option<String>,
        /// Queries whose cached expansion the engine asked to drop.
        pub forgotten: std::cell::RefCell<Vec<String>>,
    }

    impl WordHash {
        pub(crate) fn new(max_tokens: usize) -> Self {
            WordHash {
                model: "test/word-hash".into(),
                max_tokens,
                calls: Cell::new(0),
                reranker: None,
                document_prompt: String::new(),
                expansion: None,
                forgotten: Default::default(),
            }
        }
    }

    impl Inference for WordHash {
        fn embedder(&self) -> Result<EmbedderInfo> {
            Ok(EmbedderInfo {
                model: self.model.clone(),
                dimension: 32,
                max_tokens: self.max_tokens,
                query_prompt: String::new(),
                document_prompt: self.document_prompt.clone(),
                weights: String::new(),
            })
        }
        fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
            self.calls.set(self.calls.get() + 1);
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = [0f32; 32];
                    let words: Vec<String> = t
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|w| w.len() > 2)
                        .map(str::to_lowercase)
                        .collect();
                    for w in &words {
                        let h = content_hash(w.as_bytes());
                        v[usize::from_str_radix(&h[..2], 16).unwrap() % 32] += 1.0;
                    }
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    Embedding {
                        vector: v.iter().map(|x| x / norm).collect(),
                        tokens: t.split_whitespace().count() as u32,
                    }
                })
                .collect())
        }
        fn reranker(&self) -> Option<String> {
            self.reranker.map(|_| "test/overlap".into())
        }
        fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
            if self.reranker != Some(true) {
                return Err(Error::invalid("reranker crashed"));
            }
            let q: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
            Ok(documents
                .iter()
                .map(|d| {
                    let d = d.to_lowercase();
                    q.iter().filter(|w| d.contains(w.as_str())).count() as f32 / q.len().max(1) as f32
                })
                .collect())
        }
        fn generator(&self) -> Option<String> {
            self.expansion.as_ref().map(|_| "test/recorded".into())
        }
        fn expand(&self, query: &str) -> Result<Vec<crate::api::TypedSearch>> {
            match self.expansion.as_deref() {
                Some("!fail") | None => Err(Error::invalid("generation failed")),
                Some(output) => Ok(crate::query::expansion::parse_expansion(output, query, true)),
            }
        }
        fn forget_expansion(&self, query: &str) {
            self.forgotten.borrow_mut().push(query.to_string());
        }
    }

    pub(crate) fn engine() -> Engine {
        let mut notes = MemorySource::new();
        notes.insert("/n", "raft.md", "# Raft\n\nLeader election and log replication keep replicas consistent.", 0);
        notes.insert("/n", "bread.md", "# Bread\n\nFlour, water, salt, yeast and patience make sourdough.", 0);
        notes.insert("/m", "copy.md", "# Bread\n\nFlour, water, salt, yeast and patience make sourdough.", 0);
        let long: String = (0..60).map(|i| format!("paragraph {i} talks about gardening tomatoes\n\n")).collect();
        notes.insert("/m", "garden.md", long.as_str(), 0);
        crate::engine::indexed_in_memory(notes, &[("/n", "n"), ("/m", "m")])
    }

    fn rows(engine: &Engine) -> u64 {
        engine.index().unwrap().manifest.vectors.as_ref().map_or(0, |v| v.rows())
    }

    #[test]
    fn embeds_every_content_once_and_resumes() {
        let engine = engine();
        let model = WordHash::new(64);
        let report = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        // copy.md shares bread.md's content: 3 contents for 4 documents.
        assert_eq!((report.pending, report.docs), (3, 3));
        assert!(report.chunks > 4, "the long document has several chunks");
        assert_eq!(rows(&engine), report.chunks);
        let again = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert_eq!((again.pending, again.chunks), (0, 0));

        // Vector search finds meaning and maps shared contents to each document.
        let options = SearchOptions { limit: 5, ..Default::default() };
        let hits = engine.vsearch_with("sourdough flour yeast patience salt water", &options, &model).unwrap();
        let paths: Vec<&str> = hits.iter().take(2).map(|h| h.path.as_str()).collect();
        assert!(paths.contains(&"bread.md") && paths.contains(&"copy.md"), "{hits:#?}");
        let scoped = SearchOptions { collections: vec!["n".into()], ..options };
        assert!(engine.vsearch_with("sourdough flour", &scoped, &model).unwrap().iter().all(|h| h.collection == "n"));
    }

    #[test]
    fn an_interrupted_run_keeps_finished_batches_and_adds_no_duplicates() {
        let engine = engine();
        let model = WordHash::new(64);
        let options = EmbedOptions { max_docs_per_batch: 1, ..Default::default() };
        let mut job = engine.embed_start(model.embedder().unwrap(), &options).unwrap();
        let embedded = || engine.index().unwrap().vectors().unwrap().map_or(0, |set| set.hashes().len());
        // Two batches (one content each) committed, the third handed out
        // and never answered: the process died.
        loop {
            let texts = engine.embed_next(&mut job).unwrap().unwrap();
            if embedded() == 2 {
                break;
            }
            engine.embed_supply(&mut job, model.embed(&texts).unwrap()).unwrap();
        }
        drop(job);
        assert_eq!(embedded(), 2);
        let rest = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert_eq!(rest.pending, 1);
        let full = engine.embed_with(&model, &EmbedOptions { force: true, ..Default::default() }, &mut |_, _, _| {});
        let full = full.unwrap();
        assert!(full.cleared);
        assert_eq!(rows(&engine), full.chunks, "same rows as a clean run: no duplicates");
        let set = engine.index().unwrap();
        let set = set.vectors().unwrap().unwrap();
        let mut hashes: Vec<&str> =
            set.segments.iter().flat_map(|s| s.contents.iter().map(|c| c.hash.as_str())).collect();
        let n = hashes.len();
        hashes.dedup();
        assert_eq!(n, 3);
    }

    #[test]
    fn a_run_told_to_stop_keeps_its_batches_and_the_next_resumes() {
        let engine = engine();
        let model = WordHash::new(512);
        let options = EmbedOptions { max_docs_per_batch: 1, ..Default::default() };
        let mut batches = 0;
        let first = engine
            .embed_until(&model, &options, &mut |_, _, _| {}, &mut || {
                batches += 1;
                batches <= 2
            })
            .unwrap();
        assert!(first.stopped && first.docs == 2, "{first:?}");
        let rest = engine.embed_with(&model, &options, &mut |_, _, _| {}).unwrap();
        assert!(!rest.stopped && rest.docs == first.pending - 2, "{rest:?}");
    }

    #[test]
    fn long_chunks_are_split_to_fit_the_window() {
        let engine = engine();
        // A 12-token window: chunks of 10 tokens, first pass 30 chars.
        let model = WordHash::new(12);
        let report = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert!(report.chunks > 20);
        let set = engine.index().unwrap();
        let set = set.vectors().unwrap().unwrap();
        assert!(set.segments.iter().all(|s| s.positions.windows(2).all(|w| w[0] != w[1] || w[0] == 0)));
    }

    /// Under `auto`, code files the chunker cannot read as their language
    /// fall back to the markdown rules with one line per language, and
    /// every document is embedded all the same.
    #[test]
    #[cfg(feature = "code-chunks")]
    fn hostile_code_files_fall_back_once_per_language_and_all_embed() {
        use crate::chunk::MAX_SOURCE_BYTES;
        use std::rc::Rc;
        let mut files = MemorySource::new();
        let minified = "var a=function(b){return b+1};".repeat(MAX_SOURCE_BYTES / 30 + 1);
        files.insert("/c", "big.js", minified.as_str(), 0);
        files.insert("/c", "big2.js", format!("{minified}//2").as_str(), 0);
        files.insert("/c", "nested.ts", format!("{}x{}", "{".repeat(10_000), "}".repeat(10_000)).as_str(), 0);
        files.insert(
            "/c",
            "binary.py",
            (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect::<Vec<_>>(),
            0,
        );
        files.insert("/c", "prose.rs", "The garden { opens } in March, \"unless\" it rains.\n".repeat(400).as_str(), 0);
        files.insert("/c", "ok.go", "package main\n\nfunc main() {}\n", 0);
        files.insert("/c", "notes.md", "# Notes\n\nPlain text.\n", 0);
        let engine = Engine::new(
            Rc::new(crate::RamDirectory::new()),
            Rc::new(crate::RamDirectory::new()),
            "index.yml",
            Rc::new(files),
        );
        engine.collection_add("/c", Some("c"), Some("**/*")).unwrap();
        engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
        let options = EmbedOptions { chunk_strategy: Some(ChunkStrategy::Auto), ..Default::default() };
        let report = engine.embed_with(&WordHash::new(256), &options, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.docs, 7, "{report:?}");
        assert_eq!(report.fallbacks.len(), 1, "{:?}", report.fallbacks);
        assert!(report.fallbacks[0].starts_with("big"), "{:?}", report.fallbacks);
        assert!(report.fallbacks[0].contains("javascript chunked by the markdown rules only: the file is over 1 MB"));
        let index = engine.index().unwrap();
        assert_eq!(index.vectors().unwrap().unwrap().hashes().len(), 7);
    }

    /// Where each stored chunk of `content` starts.
    fn stored_positions(engine: &Engine, content: &str) -> Vec<u32> {
        let hash = content_hash(content.as_bytes());
        let index = engine.index().unwrap();
        let set = index.vectors().unwrap().unwrap();
        let mut positions = Vec::new();
        for segment in &set.segments {
            for c in segment.contents.iter().filter(|c| c.hash == hash) {
                positions.extend_from_slice(&segment.positions[c.first as usize..(c.first + c.rows) as usize]);
            }
        }
        positions
    }

    /// A collection's own `chunk_strategy:` cuts its code whatever the run
    /// asks for; changing it re-embeds that collection's code alone.
    #[test]
    fn a_collections_own_strategy_cuts_its_code_and_a_change_rechunks_it_alone() {
        use crate::chunk::install_syntax_finder;
        use std::rc::Rc;
        // A declaration at every `def ` (a stand-in for the grammars, so
        // this runs in builds without them too).
        install_syntax_finder(Some(Box::new(|content: &str, _| {
            let chars: Vec<char> = content.chars().collect();
            Ok((0..chars.len()).filter(|&i| chars[i..].starts_with(&['d', 'e', 'f', ' '])).map(|i| (i, 90)).collect())
        })));
        let code =
            |name: &str| (0..80).map(|i| format!("def {name}{i}(x):\n    return x + {i}\n\n")).collect::<String>();
        let (mine, theirs) = (code("mine"), code("theirs"));
        let mut files = MemorySource::new();
        files.insert("/own", "a.py", mine.as_str(), 0);
        files.insert("/rest", "b.py", theirs.as_str(), 0);
        files.insert("/rest", "n.md", "# Note\n\nPlain text.\n", 0);
        let engine = Engine::new(
            Rc::new(crate::RamDirectory::new()),
            Rc::new(crate::RamDirectory::new()),
            "index.yml",
            Rc::new(files),
        );
        engine.collection_add("/own", Some("own"), Some("**/*")).unwrap();
        engine.collection_add("/rest", Some("rest"), Some("**/*")).unwrap();
        let set_own = |strategy: Option<ChunkStrategy>| {
            let mut config = engine.config().unwrap();
            config.collections.iter_mut().find(|c| c.name == "own").unwrap().chunk_strategy = strategy;
            engine.save_config(&config).unwrap();
        };
        set_own(Some(ChunkStrategy::Auto));
        engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
        let model = WordHash::new(64);
        let expected = |content: &str, strategy| -> Vec<u32> {
            let declarations = Declarations::of(content, "x.py", strategy).unwrap();
            let chunks = TokenChunking::for_window(64).first_pass(content, 3.0, &declarations);
            chunks.iter().map(|c| c.pos as u32).collect()
        };
        assert_ne!(expected(&mine, ChunkStrategy::Auto), expected(&mine, ChunkStrategy::Regex), "the two cut apart");

        // The run asks for regex: `own` keeps its auto, `rest` follows the flag.
        let regex = EmbedOptions { chunk_strategy: Some(ChunkStrategy::Regex), ..Default::default() };
        let report = engine.embed_with(&model, &regex, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.docs, 3);
        assert_eq!(stored_positions(&engine, &mine), expected(&mine, ChunkStrategy::Auto));
        assert_eq!(stored_positions(&engine, &theirs), expected(&theirs, ChunkStrategy::Regex));
        let recorded = engine.index().unwrap().vectors().unwrap().unwrap().manifest.strategy_plan();
        assert_eq!(recorded.of("own"), ChunkStrategy::Auto);
        assert_eq!(recorded.of("rest"), ChunkStrategy::Regex);
        assert!(engine.query_reads_code(None).unwrap(), "a query picks `own`'s chunks by its syntax");

        // Nothing changed: nothing to do. The key dropped: `own`'s code alone is cut again.
        let again = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert_eq!((again.pending, again.rechunked), (0, 0));
        set_own(None);
        let report = engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert_eq!((report.rechunked, report.docs), (1, 1), "{report:?}");
        assert_eq!(stored_positions(&engine, &mine), expected(&mine, ChunkStrategy::Regex));
        assert!(!engine.query_reads_code(None).unwrap());
        assert!(engine.index().unwrap().vectors().unwrap().unwrap().manifest.collection_chunk_strategies.is_empty());
        install_syntax_finder(None);
    }

    #[test]
    fn dense_text_is_chunked_at_its_measured_density() {
        // 2 chars per token ("x " per word): at qmd's fixed 3 chars/token
        // every first-pass chunk would overflow and be embedded twice.
        let mut notes = MemorySource::new();
        for d in 0..40 {
            let words: String = (0..400).map(|i| format!("{} ", (b'a' + ((d + i) % 26) as u8) as char)).collect();
            notes.insert("/d", &format!("{d:02}.md"), format!("{d}\n{words}").as_str(), 0);
        }
        let engine = crate::engine::indexed_in_memory(notes, &[("/d", "d")]);
        let model = WordHash::new(64);
        let options = EmbedOptions { max_docs_per_batch: 1, ..Default::default() };
        let report = engine.embed_with(&model, &options, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.docs, 40);
        // Only the first documents (before 16 chunks were measured) are
        // re-split; at 186 chars every chunk would be 93 tokens, over 62.
        assert!(report.resplit > 0, "{report:?}");
        assert!(report.resplit * 10 < report.chunks, "later documents fit the first time: {report:?}");
    }

    #[test]
    fn another_model_is_refused_with_the_fix() {
        let engine = engine();
        engine.embed_with(&WordHash::new(64), &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        let mut other = WordHash::new(64);
        other.model = "other/model".into();
        let err = engine.embed_with(&other, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap_err();
        assert!(err.message.contains("Run 'qmd embed -f'"), "{}", err.message);
        let err = engine.vsearch_with("bread", &SearchOptions::default(), &other).unwrap_err();
        assert!(err.message.starts_with("Embedding model changed"), "{}", err.message);
        // -f re-embeds with the new model.
        engine.embed_with(&other, &EmbedOptions { force: true, ..Default::default() }, &mut |_, _, _| {}).unwrap();
        assert_eq!(engine.index().unwrap().manifest.vectors.as_ref().unwrap().model, "other/model");
        // A scoped force keeps contents another collection shares.
        let scoped = EmbedOptions { force: true, collection: Some("n".into()), ..Default::default() };
        let report = engine.embed_with(&other, &scoped, &mut |_, _, _| {}).unwrap();
        assert_eq!(report.pending, 1, "raft; bread is shared with m");
        let err = engine.embed_with(
            &other,
            &EmbedOptions { collection: Some("x".into()), ..Default::default() },
            &mut |_, _, _| {},
        );
        assert_eq!(err.unwrap_err().message, "Collection not found: x");
    }

    #[test]
    fn hybrid_query_adds_vector_lists() {
        let engine = engine();
        let model = WordHash::new(64);
        engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        let request =
            QueryRequest { query: Some("vec: sourdough yeast".into()), parse_document: true, ..Default::default() };
        let result = engine.query_with(&request, Some(&model)).unwrap();
        assert_eq!(result.lists.len(), 1);
        assert_eq!((result.lists[0].source.as_str(), result.lists[0].weight), ("vec", 2.0));
        assert!(["bread.md", "copy.md"].contains(&result.hits[0].hit.path.as_str()));
        // A plain query: BM25 probe + fallback lex, then original/hyde/vec vector lists.
        let plain = QueryRequest { query: Some("tomatoes".into()), parse_document: true, ..Default::default() };
        let result = engine.query_with(&plain, Some(&model)).unwrap();
        let kinds: Vec<(&str, &str, f64)> =
            result.lists.iter().map(|l| (l.source.as_str(), l.query_type.as_str(), l.weight)).collect();
        assert!(kinds.contains(&("vec", "original", 2.0)), "{kinds:?}");
        assert_eq!(result.hits[0].hit.path, "garden.md");
        // Without models the same query skips vectors, with a note.
        let result = engine.query(&plain).unwrap();
        assert!(result.lists.iter().all(|l| l.source == "fts"));
    }

    #[test]
    fn rerank_scores_blend_with_the_fused_position() {
        let engine = engine();
        let mut model = WordHash::new(64);
        model.reranker = Some(true);
        engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        let request = QueryRequest {
            query: Some("lex: flour water\nlex: tomatoes".into()),
            parse_document: true,
            rerank: true,
            ..Default::default()
        };
        // Step by step, as an asynchronous caller would.
        let models = crate::engine::QueryModels {
            embedder: Some(model.embedder().unwrap()),
            reranker: model.reranker(),
            ..Default::default()
        };
        let (mut job, step) = engine.query_start(&request, models).unwrap();
        let crate::QueryStep::Rerank { query, documents } = step else {
            panic!("expected a rerank step, got {step:?}")
        };
        assert_eq!(query, "flour water");
        // bread.md and copy.md have the same chunk: scored once.
        assert_eq!(documents.len(), 2, "{documents:?}");
        let scores = model.rerank(&query, &documents).unwrap();
        // Answers out of order or of the wrong size are refused, and the
        // job still takes the right one.
        assert!(engine.query_answer_vectors(&mut job, vec![vec![0.0; 32]]).is_err());
        assert!(engine.query_answer_scores(&mut job, vec![0.5]).is_err());
        assert_eq!(engine.query_answer_scores(&mut job, scores.clone()).unwrap(), crate::QueryStep::Done);
        assert!(engine.query_answer_scores(&mut job, scores).is_err(), "a finished query takes no more answers");
        let result = job.into_result();
        for hit in &result.hits {
            let rerank = hit.rerank_score.expect("reranked");
            let w = hit.blend_weight;
            let expected = w / f64::from(hit.rrf_rank) + (1.0 - w) * rerank;
            assert!((hit.hit.score - expected).abs() < 1e-12);
        }
        assert!(result.hits.windows(2).all(|p| p[0].hit.score >= p[1].hit.score));
        // A reranker that fails: qmd's 0.5 for every document, with a warning.
        model.reranker = Some(false);
        let result = engine.query_with(&request, Some(&model)).unwrap();
        assert!(result.hits.iter().all(|h| h.rerank_score == Some(0.5)));
        assert!(result.notes.iter().any(|n| n.starts_with("Reranker unavailable")));
        // --no-rerank: position only, weight 1.
        let plain = QueryRequest { rerank: false, ..request };
        let result = engine.query_with(&plain, Some(&model)).unwrap();
        assert!(result.hits.iter().all(|h| h.rerank_score.is_none() && h.blend_weight == 1.0));
    }
}
