/*!
The qmd engine in the browser. [`QmdIndex`] is what the page's Worker
calls: the same [`Engine`] as the CLI, with its index in OPFS
([`opfs::OpfsDirectory`]) and its documents read from picked folders
([`source::BrowserSource`]). Runs in a dedicated Worker only: OPFS sync
access handles and `FileReaderSync` exist nowhere else.

Methods that write return Promises: the engine works synchronously in
memory, then the staged files are committed to OPFS before the Promise
resolves. The Worker must not start a call before the previous one
resolved (its message queue serialises them).
*/

mod expansion;
mod js;
mod models;
mod opfs;
mod source;
mod syntax;

/// `initThreadPool(n)` in the threaded module: starts its rayon pool of `n`
/// Web Workers (the engine's Worker calls it once, before any model).
#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Array, Float32Array, Function, Object, Promise};
use qmd_core::chunk::syntax_available;
use qmd_core::collection::PathFilter;
use qmd_core::metadata::Filter;
use qmd_core::source::FileStat;
use qmd_core::{
    EmbedJob, EmbedOptions, EmbedReport, Engine, Error, GetError, GetRequest, QueryModels, QueryRequest, QueryStep,
    SearchOptions,
};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use expansion::{CANCELLED, ExpansionCache, Hooks};
use js::{from_value, opfs_root, to_js, to_value};
use models::{BrowserEmbedder, BrowserGenerator, BrowserReranker};
use opfs::OpfsDirectory;
use source::{BrowserSource, FolderFilter};
use wasm_bindgen_futures::JsFuture;

/// OPFS layout: `qmd/<index>/config/index.yml` and `qmd/<index>/index/…`,
/// the two directories the CLI keeps apart too.
const OPFS_ROOT: &str = "qmd";
const CONFIG_FILE: &str = "index.yml";

struct Inner {
    engine: Engine,
    source: Rc<BrowserSource>,
    index_dir: Rc<OpfsDirectory>,
    config_dir: Rc<OpfsDirectory>,
    embedder: RefCell<Option<Rc<BrowserEmbedder>>>,
    /// The `query` reranker, once loaded; without one, queries rank by
    /// fused position as `--no-rerank` does.
    reranker: RefCell<Option<Rc<BrowserReranker>>>,
    /// The query-expansion model, once loaded (opt-in: qmd's is 1.2 GB);
    /// without one, plain queries use qmd's fallback expansion.
    generator: RefCell<Option<Rc<BrowserGenerator>>>,
    expansions: ExpansionCache,
    /// The `embed` run in progress, advanced one batch per `embedStep`.
    embed_job: RefCell<Option<EmbedJob>>,
}

impl Inner {
    async fn commit(&self) -> qmd_core::Result<()> {
        self.index_dir.commit().await?;
        self.config_dir.commit().await
    }

    /// Where a collection's files live in the engine's view: the browser
    /// has no paths, so each collection is a root of its own.
    fn root_of(&self, name: &str) -> qmd_core::Result<String> {
        Ok(self.engine.config()?.require(name)?.path.clone())
    }
}

/// Runs the module's static constructors once, at start-up. cubecl (burn's
/// GPU compiler) registers with `inventory`, which needs them. Calling
/// `__wasm_call_ctors` ourselves tells wasm-ld they are taken care of;
/// otherwise it wraps every export to run them again on each call from
/// JavaScript, which measured 0.5 ms a call and growing.
#[cfg(target_family = "wasm")]
#[wasm_bindgen(start)]
fn run_constructors() {
    unsafe extern "C" {
        fn __wasm_call_ctors();
    }
    // SAFETY: called once, by wasm-bindgen's start-up, before any export.
    unsafe { __wasm_call_ctors() }
    // The kernels time themselves once, to pick the faster of two that
    // give the same results (the relaxed-SIMD module's Q8_0 products).
    qmd_core::kernels::install_clock(performance_now);
}

#[cfg(target_family = "wasm")]
#[wasm_bindgen]
extern "C" {
    /// `performance.now()`, in a Worker as in a window.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// One qmd index in this origin's OPFS.
#[wasm_bindgen]
pub struct QmdIndex {
    inner: Rc<Inner>,
}

/// `search` and keyword `query` options, as the CLI's flags.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SearchArgs {
    collections: Vec<String>,
    limit: Option<usize>,
    min_score: Option<f64>,
    full: bool,
    /// `query` only: false skips the reranker (`--no-rerank`).
    rerank: Option<bool>,
    /// `query` only: false keeps qmd's fallback expansion even with a
    /// model loaded (`--no-expand`).
    expand: Option<bool>,
    /// A metadata filter tree (`--filter`), as an object.
    filter: Option<serde_json::Value>,
    /// `query` only: `"auto"` or `"regex"` (`--chunk-strategy`), how the
    /// candidates are cut to pick each one's best chunk; the index's by
    /// default.
    chunk_strategy: Option<String>,
}

impl SearchArgs {
    fn options(self, default_limit: usize) -> Result<SearchOptions, JsError> {
        let filter =
            self.filter.map(|tree| Filter::parse(&tree)).transpose().map_err(|e| JsError::new(&e.to_string()))?;
        Ok(SearchOptions {
            collections: self.collections,
            limit: self.limit.unwrap_or(default_limit),
            min_score: self.min_score.unwrap_or(0.0),
            full: self.full,
            filter,
            ..SearchOptions::default()
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct GetArgs {
    from_line: Option<u32>,
    max_lines: Option<u32>,
    line_numbers: bool,
}

#[derive(serde::Serialize)]
struct EmbedProgress {
    done: bool,
    report: EmbedReport,
}

/// Runs `work` on the index and commits what it wrote, as a Promise.
fn writing<T, F>(inner: &Rc<Inner>, work: F) -> Promise
where
    T: serde::Serialize,
    F: AsyncFnOnce(&Inner) -> qmd_core::Result<T> + 'static,
{
    let inner = inner.clone();
    future_to_promise(async move {
        let result = work(&inner).await;
        // Commit even after a failure: whatever the engine staged is a
        // consistent state (it writes the manifest last).
        let committed = inner.commit().await;
        let value = result.map_err(to_js)?;
        committed.map_err(to_js)?;
        Ok(to_value(&value)?)
    })
}

#[wasm_bindgen]
impl QmdIndex {
    /// Opens (creating) the index `name` in OPFS. Rejects when another tab
    /// has it open.
    pub fn open(name: String) -> Promise {
        future_to_promise(async move {
            // The name becomes an OPFS folder: one plain segment.
            if let Some(why) = qmd_core::vpath::segment_problem(&name) {
                return Err(JsError::new(&format!("Invalid index name {name:?} ({why})")).into());
            }
            let root = opfs_root().await.map_err(to_js)?;
            let index_dir = Rc::new(OpfsDirectory::open(&root, &[OPFS_ROOT, &name, "index"]).await.map_err(to_js)?);
            let config_dir = Rc::new(OpfsDirectory::open(&root, &[OPFS_ROOT, &name, "config"]).await.map_err(to_js)?);
            let source = Rc::new(BrowserSource::default());
            let engine = Engine::new(index_dir.clone(), config_dir.clone(), CONFIG_FILE, source.clone());
            let inner = Inner {
                engine,
                source,
                index_dir,
                config_dir,
                embedder: RefCell::new(None),
                reranker: RefCell::new(None),
                generator: RefCell::new(None),
                expansions: ExpansionCache::default(),
                embed_job: RefCell::new(None),
            };
            Ok(QmdIndex { inner: Rc::new(inner) }.into())
        })
    }

    /// Collections with their document counts.
    pub fn collections(&self) -> Result<JsValue, JsError> {
        to_value(&self.inner.engine.collection_list().map_err(to_js)?)
    }

    /// Adds collection `name` (its files come from [`setFiles`]); `mask`
    /// defaults to qmd's (all markdown files).
    #[wasm_bindgen(js_name = addCollection)]
    pub fn add_collection(&self, name: String, mask: Option<String>) -> Promise {
        writing(&self.inner, async move |inner: &Inner| {
            inner.engine.collection_add(&format!("/{name}"), Some(&name), mask.as_deref())
        })
    }

    /// Removes a collection and its documents from the index.
    #[wasm_bindgen(js_name = removeCollection)]
    pub fn remove_collection(&self, name: String) -> Promise {
        writing(&self.inner, async move |inner: &Inner| inner.engine.collection_remove(&name))
    }

    /// The filter of collection `name`, for the Worker's folder walk.
    #[wasm_bindgen(js_name = folderFilter)]
    pub fn folder_filter(&self, name: String) -> Result<FolderFilter, JsError> {
        let config = self.inner.engine.config().map_err(to_js)?;
        let collection = config.require(&name).map_err(to_js)?;
        Ok(FolderFilter(PathFilter::new(&collection.pattern, &collection.ignore).map_err(to_js)?))
    }

    /// Takes the files at the relative `paths` (with their sizes and
    /// mtimes in ms), as the walk of a picked folder or an `<input
    /// webkitdirectory>` found them, as collection `name`'s;
    /// `read_file(path) -> Uint8Array` reads one synchronously. Returns
    /// the paths the next update will read (new, or changed in size or
    /// mtime), up to the read-ahead budget: the Worker reads them
    /// concurrently and hands them to [`readAhead`].
    #[wasm_bindgen(js_name = setFiles)]
    pub fn set_files(
        &self,
        name: String,
        paths: Vec<String>,
        sizes: &[f64],
        mtimes: &[f64],
        read_file: Function,
    ) -> Result<Vec<String>, JsError> {
        if paths.len() != sizes.len() || paths.len() != mtimes.len() {
            return Err(JsError::new("setFiles: paths, sizes and mtimes differ in length"));
        }
        let root = self.inner.root_of(&name).map_err(to_js)?;
        let files: Vec<(String, FileStat)> = paths
            .into_iter()
            .zip(sizes.iter().zip(mtimes))
            .map(|(rel, (&size, &mtime))| (rel, FileStat { size: size as u64, modified_ms: mtime as i64 }))
            .collect();
        let wanted = self
            .inner
            .engine
            .files_to_read(&name, files.iter().map(|(rel, stat)| (rel.as_str(), *stat)))
            .map_err(to_js)?;
        let sizes: HashMap<&str, u64> = files.iter().map(|(rel, stat)| (rel.as_str(), stat.size)).collect();
        let mut budget = source::READ_AHEAD_BYTES;
        let read_ahead = wanted
            .into_iter()
            .take_while(|rel| {
                budget = budget.saturating_sub(sizes.get(rel.as_str()).copied().unwrap_or(0));
                budget > 0
            })
            .collect();
        self.inner.source.set_files(&root, files, read_file);
        Ok(read_ahead)
    }

    /// The contents of `paths` of collection `name`, read ahead: `bytes`
    /// holds them back to back, `ends[i]` is where path i ends.
    #[wasm_bindgen(js_name = readAhead)]
    pub fn read_ahead(&self, name: String, paths: Vec<String>, bytes: &[u8], ends: &[u32]) -> Result<(), JsError> {
        let root = self.inner.root_of(&name).map_err(to_js)?;
        self.inner.source.read_ahead(&root, paths, bytes, ends);
        Ok(())
    }

    /// Re-indexes every collection whose files were given in this session
    /// (new and changed files by content hash; removed ones dropped).
    /// Collections without files given are left alone, never emptied.
    /// `on_progress(collection, done, total)` is called as files are read.
    pub fn update(&self, on_progress: Option<Function>) -> Promise {
        writing(&self.inner, async move |inner: &Inner| {
            let config = inner.engine.config()?;
            let scanned: Vec<String> =
                config.collections.iter().filter(|c| inner.source.has_files(&c.path)).map(|c| c.name.clone()).collect();
            if scanned.is_empty() {
                return Err(Error::invalid("no folder picked: pick a collection's folder to index or update it"));
            }
            let mut progress = |phase: &str, done: u64, total: u64| {
                if let Some(f) = &on_progress {
                    let _ = f.call3(&JsValue::NULL, &phase.into(), &(done as f64).into(), &(total as f64).into());
                }
            };
            inner.engine.update(&scanned, js_sys::Date::now() as i64, &mut progress)
        })
    }

    /// BM25 keyword search (`qmd search`).
    pub fn search(&self, query: String, options: JsValue) -> Result<JsValue, JsError> {
        let options = from_value::<SearchArgs>(options)?.options(5)?;
        to_value(&self.inner.engine.search(&query, &options).map_err(to_js)?)
    }

    /// The hybrid pipeline (`qmd query`): a plain query expanded by the
    /// expansion model once one is loaded (qmd's fallback until then, or
    /// when `options.expand` is false), keyword and, once a model is
    /// loaded, vector lists, fused, then reranked once a reranker is
    /// loaded (`--no-rerank` until then, or when `options.rerank` is
    /// false); with the explain detail. While the model expands,
    /// `on_progress(text so far, tokens, most tokens)` is called and
    /// `cancelled()` asked between tokens: true rejects with "query
    /// cancelled".
    pub fn query(
        &self,
        query: String,
        options: JsValue,
        on_progress: Option<Function>,
        cancelled: Option<Function>,
    ) -> Promise {
        let inner = self.inner.clone();
        let args = from_value::<SearchArgs>(options);
        future_to_promise(async move {
            let args = args?;
            let chunk_strategy = syntax::strategy_arg(args.chunk_strategy.as_deref()).map_err(|e| JsError::new(&e))?;
            // Once the grammars are in, the index need not be asked.
            if !syntax_available() && inner.engine.query_reads_code(chunk_strategy).map_err(to_js)? {
                syntax::ensure_loaded().await.map_err(to_js)?;
            }
            let hooks = Hooks { on_progress: on_progress.as_ref(), cancelled: cancelled.as_ref() };
            if hooks.is_cancelled() {
                return Err(JsError::new(CANCELLED).into());
            }
            let reranker = inner.reranker.borrow().clone().filter(|_| args.rerank.unwrap_or(true));
            let generator = inner.generator.borrow().clone().filter(|_| args.expand.unwrap_or(true));
            let request = QueryRequest {
                query: Some(query),
                parse_document: true,
                options: args.options(10)?,
                rerank: reranker.is_some(),
                chunk_strategy,
                ..QueryRequest::default()
            };
            let embedder = inner.embedder.borrow().clone();
            let models = QueryModels {
                embedder: embedder.as_ref().map(|e| e.info.clone()),
                reranker: reranker.as_ref().map(|r| r.model.clone()),
                generator: generator.as_ref().map(|g| g.model.clone()),
            };
            let engine = &inner.engine;
            let (mut job, mut step) = engine.query_start(&request, models).map_err(to_js)?;
            loop {
                step = match step {
                    QueryStep::Done => {
                        if let (Some(generator), Some(query)) = (&generator, job.fruitless_expansion()) {
                            inner.expansions.forget(query, &generator.model);
                        }
                        return Ok(to_value(&job.into_result())?);
                    }
                    QueryStep::Embed(texts) => {
                        let embedder = embedder.as_ref().ok_or_else(|| JsError::new("no embedding model loaded"))?;
                        let vectors = embedder.embed(&texts).await.map_err(to_js)?;
                        let vectors = vectors.into_iter().map(|e| e.vector).collect();
                        engine.query_answer_vectors(&mut job, vectors).map_err(to_js)?
                    }
                    QueryStep::Expand(text) => {
                        let generator = generator.as_ref().ok_or_else(|| JsError::new("no expansion model loaded"))?;
                        let answer = inner.expansions.expand(generator, &text, &hooks).await?;
                        engine.query_answer_expansion(&mut job, answer).map_err(to_js)?
                    }
                    QueryStep::Rerank { query, documents } => {
                        let reranker = reranker.as_ref().ok_or_else(|| JsError::new("no reranker loaded"))?;
                        let scores = reranker.score(&query, &documents).await.map_err(to_js)?;
                        engine.query_answer_scores(&mut job, scores).map_err(to_js)?
                    }
                };
            }
        })
    }

    /// Loads the query-expansion model from its one GGUF file (the page's
    /// `{"model.gguf": Uint8Array}`); resolves to its id and where it runs.
    #[wasm_bindgen(js_name = loadGenerator)]
    pub fn load_generator(&self, id: String, files: Object, device: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let generator = BrowserGenerator::load(&id, &files, &device).await.map_err(to_js)?;
            let loaded = generator.describe();
            *inner.generator.borrow_mut() = Some(Rc::new(generator));
            Ok(to_value(&loaded)?)
        })
    }

    /// The expansion model run along `reference`'s tokens after `text`
    /// (another runtime's greedy output; special tokens parsed, no chat
    /// form added): `{prompt, firstLogits, chosen, gaps}`, our token at each
    /// step and how far the reference's was below it in our logits. For
    /// checks against llama.cpp.
    #[wasm_bindgen(js_name = followTokens)]
    pub fn follow_tokens(&self, text: String, reference: Vec<u32>) -> Promise {
        let generator = self.inner.generator.borrow().clone();
        future_to_promise(async move {
            let generator = generator.ok_or_else(|| JsError::new("no expansion model loaded"))?;
            let run = generator.expander.follow(&text, &reference).await.map_err(to_js)?;
            let out = Object::new();
            let set = |name: &str, value: JsValue| js_sys::Reflect::set(&out, &name.into(), &value);
            set("prompt", js_sys::Uint32Array::from(run.prompt.as_slice()).into()).ok();
            set("firstLogits", Float32Array::from(run.first_logits.as_slice()).into()).ok();
            set("chosen", js_sys::Uint32Array::from(run.chosen.as_slice()).into()).ok();
            set("gaps", Float32Array::from(run.gaps.as_slice()).into()).ok();
            Ok(out.into())
        })
    }

    /// Loads the reranker from its files (as [`Self::load_embedder`]);
    /// resolves to its id and the device it runs on.
    #[wasm_bindgen(js_name = loadReranker)]
    pub fn load_reranker(&self, id: String, files: Object, device: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let reranker = BrowserReranker::load(&id, &files, &device).await.map_err(to_js)?;
            let loaded = reranker.describe();
            *inner.reranker.borrow_mut() = Some(Rc::new(reranker));
            Ok(to_value(&loaded)?)
        })
    }

    /// The reranker's relevance of each document to `query`, in [0, 1]
    /// (the documents as given: no chunking; a GGUF ranker fills its rank
    /// template as the CLI's does), for checks against other
    /// implementations.
    #[wasm_bindgen(js_name = rerankTexts)]
    pub fn rerank_texts(&self, query: String, documents: Vec<String>) -> Promise {
        let reranker = self.inner.reranker.borrow().clone();
        future_to_promise(async move {
            let reranker = reranker.ok_or_else(|| JsError::new("no reranker loaded"))?;
            let scores = reranker.score(&query, &documents).await.map_err(to_js)?;
            Ok(Float32Array::from(scores.as_slice()).into())
        })
    }

    /// Loads the embedding model from its files (repository path →
    /// `Uint8Array`) on `device` (`auto`, `gpu`, `cpu`). Resolves to the
    /// model's id, dimension, window and the device it runs on.
    #[wasm_bindgen(js_name = loadEmbedder)]
    pub fn load_embedder(&self, id: String, files: Object, device: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let embedder = BrowserEmbedder::load(&id, &files, &device).await.map_err(to_js)?;
            let loaded = embedder.describe();
            *inner.embedder.borrow_mut() = Some(Rc::new(embedder));
            Ok(to_value(&loaded)?)
        })
    }

    /// Unit vectors of `texts` as given (no prompt added), for checks
    /// against other implementations.
    #[wasm_bindgen(js_name = embedTexts)]
    pub fn embed_texts(&self, texts: Vec<String>) -> Promise {
        let embedder = self.inner.embedder.borrow().clone();
        future_to_promise(async move {
            let embedder = embedder.ok_or_else(|| JsError::new("no embedding model loaded"))?;
            let embeddings = embedder.embed(&texts).await.map_err(to_js)?;
            Ok(embeddings.iter().map(|e| Float32Array::from(e.vector.as_slice())).collect::<Array>().into())
        })
    }

    /// Unit vectors and untruncated token counts of `texts` (prompts
    /// already added): this Worker's share of a step spread over helpers.
    #[wasm_bindgen(js_name = embedShare)]
    pub fn embed_share(&self, texts: Vec<String>) -> Promise {
        let embedder = self.inner.embedder.borrow().clone();
        future_to_promise(async move {
            let embedder = embedder.ok_or_else(|| JsError::new("no embedding model loaded"))?;
            embeddings_for_js(&embedder, &texts).await
        })
    }

    /// Plans an `embed` run (`force`: drop existing vectors first, `-f`;
    /// `collection`: only its documents, `-c`; `max_docs_per_batch`, as
    /// `--max-docs-per-batch`; `chunk_strategy`, `"auto"` or `"regex"` as
    /// `--chunk-strategy`, the index's by default). Loads the code grammars
    /// when the run will chunk a code file under `auto`. Resolves to its
    /// report so far (contents pending, bytes, code files to re-chunk).
    #[wasm_bindgen(js_name = embedStart)]
    pub fn embed_start(
        &self,
        force: bool,
        collection: Option<String>,
        max_docs_per_batch: Option<u32>,
        chunk_strategy: Option<String>,
    ) -> Promise {
        let chunk_strategy = syntax::strategy_arg(chunk_strategy.as_deref());
        writing(&self.inner, async move |inner: &Inner| {
            let chunk_strategy = chunk_strategy.map_err(Error::invalid)?;
            let embedder =
                inner.embedder.borrow().clone().ok_or_else(|| Error::invalid("no embedding model loaded"))?;
            let mut options = EmbedOptions { force, collection, chunk_strategy, ..EmbedOptions::default() };
            if let Some(max) = max_docs_per_batch {
                options.max_docs_per_batch = max.max(1) as usize;
            }
            let job = inner.engine.embed_start(embedder.info.clone(), &options)?;
            if job.reads_code() {
                syntax::ensure_loaded().await?;
            }
            let report = job.report.clone();
            *inner.embed_job.borrow_mut() = Some(job);
            Ok(report)
        })
    }

    /// Embeds the next texts of the run and commits each finished batch.
    /// Resolves to `{done, report}`; stopping between steps loses at most
    /// the uncommitted batch, which the next run redoes. `share`, when
    /// given, embeds the texts instead (`texts → Promise<{vectors,
    /// tokens}>`): the Worker spreads them over helper Workers, one core
    /// each.
    #[wasm_bindgen(js_name = embedStep)]
    pub fn embed_step(&self, share: Option<Function>) -> Promise {
        writing(&self.inner, async move |inner: &Inner| {
            let mut job = inner.embed_job.borrow_mut().take().ok_or_else(|| Error::invalid("no embed run started"))?;
            let embedder =
                inner.embedder.borrow().clone().ok_or_else(|| Error::invalid("no embedding model loaded"))?;
            let done = match inner.engine.embed_next(&mut job)? {
                None => true,
                Some(texts) => {
                    let embeddings = match &share {
                        Some(share) => shared_embeddings(share, &texts).await?,
                        None => embedder.embed(&texts).await?,
                    };
                    inner.engine.embed_supply(&mut job, embeddings)?;
                    false
                }
            };
            let step = EmbedProgress { done, report: job.report.clone() };
            if !done {
                *inner.embed_job.borrow_mut() = Some(job);
            }
            Ok(step)
        })
    }

    /// One document by path, `qmd://` path or docid (`qmd get`).
    pub fn get(&self, file: String, options: JsValue) -> Result<JsValue, JsError> {
        let args: GetArgs = from_value(options)?;
        let request =
            GetRequest { file, from_line: args.from_line, max_lines: args.max_lines, line_numbers: args.line_numbers };
        match self.inner.engine.get(&request) {
            Ok(doc) => to_value(&doc),
            Err(GetError::NotFound { query, similar }) => {
                let mut message = format!("Document not found: {query}");
                if !similar.is_empty() {
                    message.push_str("\nSimilar files:");
                    for path in similar {
                        message.push_str(&format!("\n  {path}"));
                    }
                }
                Err(JsError::new(&message))
            }
            Err(GetError::Excluded { query, rule, .. }) => {
                Err(JsError::new(&format!("Document is excluded by ignore rule: {query} ({rule})")))
            }
            Err(GetError::Failed(e)) => Err(to_js(e)),
        }
    }

    /// Documents, vectors, index size, collections (`qmd status`).
    pub fn status(&self) -> Result<JsValue, JsError> {
        to_value(&self.inner.engine.status().map_err(to_js)?)
    }
}

/// `{vectors, tokens}` of `texts`: what a Worker hands back for its share.
async fn embeddings_for_js(embedder: &BrowserEmbedder, texts: &[String]) -> Result<JsValue, JsValue> {
    Ok(models::embeddings_to_js(&embedder.embed(texts).await.map_err(to_js)?).into())
}

/// Embeddings of `texts` from the Worker's `share` function.
async fn shared_embeddings(
    share: &Function,
    texts: &[String],
) -> qmd_core::Result<Vec<qmd_core::inference::Embedding>> {
    let failed = |e: JsValue| js::js_error("embedding on helper Workers", e);
    let array: Array = texts.iter().map(|t| JsValue::from_str(t)).collect();
    let promise = Promise::from(share.call1(&JsValue::NULL, &array).map_err(failed)?);
    let value = JsFuture::from(promise).await.map_err(failed)?;
    let embeddings = models::embeddings_from_js(&value)?;
    if embeddings.len() != texts.len() {
        return Err(Error::invalid(format!(
            "helper Workers gave {} embeddings for {} texts",
            embeddings.len(),
            texts.len()
        )));
    }
    Ok(embeddings)
}

/// The embedding model alone, in a helper Worker that embeds a share of
/// each step's texts on its own core (the CPU backend is single-threaded
/// in wasm; the index stays with the engine's Worker).
#[wasm_bindgen]
pub struct ModelWorker {
    embedder: Rc<BrowserEmbedder>,
}

#[wasm_bindgen]
impl ModelWorker {
    /// Loads `id` from its files (repository path → `Uint8Array`) on
    /// `device`; resolves to the `ModelWorker`.
    pub fn load(id: String, files: Object, device: String) -> Promise {
        future_to_promise(async move {
            let embedder = BrowserEmbedder::load(&id, &files, &device).await.map_err(to_js)?;
            Ok(ModelWorker { embedder: Rc::new(embedder) }.into())
        })
    }

    /// `{vectors, tokens}` of `texts`, as [`QmdIndex::embed_share`].
    pub fn embed(&self, texts: Vec<String>) -> Promise {
        let embedder = self.embedder.clone();
        future_to_promise(async move { embeddings_for_js(&embedder, &texts).await })
    }
}
