//! Loads the embedded engine component into wasmtime and instantiates it
//! with exactly the directories a command needs.

pub mod bindings;
mod open_guard;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use bindings::TypedSearch;
use bindings::qmd::engine::inference::{EmbedderInfo, Embedding};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::models::{ModelSources, Models};
use crate::paths::ConfigFile;

static COMPONENT: &[u8] = include_bytes!(env!("QMD_COMPONENT_PATH"));
const COMPONENT_HASH: &str = env!("QMD_COMPONENT_HASH");

/// Callback for the component's `progress` import.
pub type ProgressFn = Box<dyn FnMut(&str, u64, u64) + Send>;

pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    progress: Option<ProgressFn>,
    models: Arc<Models>,
    expansion: Expansion,
}

/// How a command wants plain queries expanded.
#[derive(Clone, Copy, Debug, Default)]
pub struct Expansion {
    /// `--no-expand`: qmd's fallback expansion, no model.
    pub off: bool,
    /// The CLI's progress lines on stderr (servers print none).
    pub narrate: Option<crate::cli::output::Narration>,
}

impl HostState {
    pub fn set_expansion(&mut self, expansion: Expansion) {
        self.expansion = expansion;
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl bindings::qmd::engine::host::Host for HostState {
    fn progress(&mut self, phase: String, done: u64, total: u64) {
        if let Some(report) = self.progress.as_mut() {
            report(&phase, done, total);
        }
    }
}

impl bindings::qmd::engine::types::Host for HostState {}

impl bindings::qmd::engine::inference::Host for HostState {
    fn embedder(&mut self) -> Result<EmbedderInfo, String> {
        let info = self.models.embedder()?;
        Ok(EmbedderInfo {
            model: info.model,
            dimension: info.dimension as u32,
            max_tokens: info.max_tokens as u32,
            query_prompt: info.query_prompt,
            document_prompt: info.document_prompt,
            weights: info.weights,
        })
    }

    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Embedding>, String> {
        let out = self.models.embed(&texts)?;
        Ok(out.into_iter().map(|e| Embedding { vector: e.vector, tokens: e.tokens }).collect())
    }

    fn reranker(&mut self) -> Option<String> {
        self.models.reranker()
    }

    fn rerank(&mut self, query: String, documents: Vec<String>) -> Result<Vec<f32>, String> {
        self.models.rerank(&query, &documents)
    }

    fn generator(&mut self) -> Option<String> {
        if self.expansion.off {
            return None;
        }
        self.models.generator()
    }

    fn expand(&mut self, query: String) -> Result<Vec<TypedSearch>, String> {
        use crate::cli::output::{EXPANDING, Narration, render_expansion};
        let narrate = self.expansion.narrate;
        if narrate == Some(Narration::Query) {
            eprint!("{EXPANDING}");
        }
        let started = std::time::Instant::now();
        let expansion = self.models.expand(&query);
        if let Some(narration) = narrate {
            eprint!("{}", render_expansion(narration, &query, &expansion, started.elapsed()));
        }
        Ok(expansion?.into_iter().map(typed_search).collect())
    }

    fn forget_expansion(&mut self, query: String) {
        self.models.forget_expansion(&query)
    }
}

fn typed_search(s: qmd_core::TypedSearch) -> TypedSearch {
    let kind = match s.kind {
        qmd_core::SearchType::Lex => bindings::SearchType::Lex,
        qmd_core::SearchType::Vec => bindings::SearchType::Vec,
        qmd_core::SearchType::Hyde => bindings::SearchType::Hyde,
    };
    TypedSearch { kind, query: s.query }
}

/// What one call may touch.
pub struct Grants {
    pub index_dir: PathBuf,
    pub config: ConfigFile,
    /// Index and config writable (update, collection and context commands).
    pub write: bool,
    /// Collection roots, mounted read-only at their own absolute paths.
    pub roots: Vec<PathBuf>,
}

/// One wasmtime engine and the compiled component, per process.
pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    component: Component,
    models: Arc<Models>,
}

impl Runtime {
    /// The process's models (shared by every instance).
    pub fn models(&self) -> Arc<Models> {
        self.models.clone()
    }

    pub fn new(models: &ModelSources) -> Result<Runtime> {
        let engine = Engine::new(&Config::new()).map_err(anyhow::Error::from)?;
        let component = load_component(&engine)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(anyhow::Error::from)?;
        open_guard::add_to_linker(&mut linker)?;
        bindings::Engine::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(anyhow::Error::from)?;
        Ok(Runtime { engine, linker, component, models: Arc::new(Models::new(models)) })
    }

    /// A fresh instance with the given grants.
    pub fn instantiate(
        &self,
        index_name: &str,
        grants: &Grants,
        progress: Option<ProgressFn>,
    ) -> Result<(Store<HostState>, bindings::Engine)> {
        let mut wasi = WasiCtxBuilder::new();
        // File I/O on the calling thread: handing every WASI filesystem call to
        // tokio's blocking pool costs two thread wake-ups per call (14 s of a
        // no-op update over 38k files went there).
        wasi.inherit_stderr()
            .env("QMD_INDEX_NAME", index_name)
            .env("QMD_CONFIG_FILE", &grants.config.name)
            .allow_blocking_current_thread(true);
        let base = grants.config.path_base();
        wasi.env("QMD_PATH_BASE", &base.base);
        if let Some(home) = &base.home {
            wasi.env("QMD_HOME", home);
        }
        let perms = if grants.write { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
        // Mounted at their own paths, as the roots are, so every message the
        // engine words names the user's real path.
        for (host, var) in [(&grants.index_dir, "QMD_INDEX_DIR"), (&grants.config.dir, "QMD_CONFIG_DIR")] {
            std::fs::create_dir_all(host).with_context(|| format!("cannot create {}", host.display()))?;
            let guest = guest_path(host);
            wasi.preopened_dir(host, &guest, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("cannot open {}", host.display()))?;
            wasi.env(var, &guest);
        }
        for root in grants.roots.iter().filter(|r| **r != grants.index_dir && **r != grants.config.dir) {
            // A missing or unreadable root is reported by the engine, per
            // collection, when it cannot walk it.
            let _ = wasi.preopened_dir(root, &*guest_path(root), FsPerms::ReadOnly);
        }
        let state = HostState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            progress,
            models: self.models.clone(),
            expansion: Expansion::default(),
        };
        let mut store = Store::new(&self.engine, state);
        let instance =
            bindings::Engine::instantiate(&mut store, &self.component, &self.linker).map_err(anyhow::Error::from)?;
        Ok((store, instance))
    }
}

/// A failed call into the component as the user sees it. A trap (a panic
/// in the engine) becomes one line: its wasm backtrace is for developers,
/// and must reach neither a terminal nor an MCP client. The engine's own
/// panic message is on stderr already. Nothing was committed: a write
/// publishes its manifest last.
pub fn call_failed(error: impl Into<anyhow::Error>) -> anyhow::Error {
    let error: anyhow::Error = error.into();
    match error.chain().find_map(|e| e.downcast_ref::<wasmtime::Trap>()) {
        Some(trap) => anyhow::anyhow!(
            "internal error: the qmd engine stopped ({trap}); the index is unchanged. This is a bug: please report it with the command that caused it"
        ),
        None => error,
    }
}

/// Where a host directory is mounted in the guest: at its own path.
fn guest_path(host: &Path) -> String {
    host.to_string_lossy().into_owned()
}

/// The compiled component, from the on-disk cache when it matches this
/// wasmtime build and component; compiled and cached otherwise.
fn load_component(engine: &Engine) -> Result<Component> {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let key = format!("{COMPONENT_HASH}-{:016x}", hasher.finish());
    let cache = crate::paths::cache_dir().join("components");
    let file = cache.join(format!("qmd-engine-{key}.cwasm"));
    if file.exists() {
        // SAFETY: the file was written by `precompile_component` of a
        // wasmtime with the same compatibility hash (it is in the name).
        match unsafe { Component::deserialize_file(engine, &file) } {
            Ok(component) => return Ok(component),
            Err(_) => {
                let _ = std::fs::remove_file(&file);
            }
        }
    }
    let compiled = engine.precompile_component(COMPONENT).map_err(anyhow::Error::from)?;
    // A cache that cannot be written costs the next start a compile.
    let _ = crate::files::write_atomically(&file, &compiled);
    // SAFETY: bytes just produced by this engine's `precompile_component`.
    unsafe { Component::deserialize(engine, &compiled) }.map_err(anyhow::Error::from)
}
