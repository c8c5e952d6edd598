//! The models the edge service runs itself, on its CPU (WebAssembly SIMD
//! and relaxed SIMD: `host/build.rs` builds the component with both), from
//! the folder `qmd edge build` wrote at `/.qmd/models` (described in
//! [`crate::serve::deployment`]). Each model loads on first use (a request
//! with keyword searches only never loads one) and stays for the
//! instance's life; an instance reused for many requests pays it once.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::inference::{EmbedderInfo, Embedding, Inference};
use crate::model::{Loadable, ModelDevice, ModelFiles, TextEmbedder, TextReranker};
use crate::serve::deployment::{DeployedModel as Entry, GGUF_FILE, MODELS_MANIFEST, ModelsManifest};

pub const MODELS_DIR: &str = "/.qmd/models";

/// One role's model: loaded once, or the reason it cannot be.
struct Slot<T> {
    entry: Option<Entry>,
    loaded: OnceCell<std::result::Result<T, String>>,
}

impl<T> Slot<T> {
    fn new(entry: Option<Entry>) -> Self {
        Slot { entry, loaded: OnceCell::new() }
    }

    fn get(&self, role: &str, load: impl FnOnce(&Entry, &Path) -> Result<T>) -> std::result::Result<&T, String> {
        let loaded = self.loaded.get_or_init(|| {
            let entry =
                self.entry.as_ref().ok_or_else(|| format!("this deployment has no {role} model (qmd edge build)"))?;
            let dir = models_dir().join(entry.folder().map_err(|e| format!("{role} model {}: {e}", entry.id))?);
            load(entry, &dir).map_err(|e| format!("{role} model {}: {}", entry.id, e.message))
        });
        loaded.as_ref().map_err(Clone::clone)
    }
}

fn models_dir() -> PathBuf {
    PathBuf::from(crate::wasi::mount("QMD_MODELS_DIR", MODELS_DIR))
}

fn read_file(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))),
    }
}

/// The GGUF file in `dir`, if the model is one.
fn gguf(dir: &Path) -> Result<Option<crate::arch::ModelBytes>> {
    Ok(read_file(&dir.join(GGUF_FILE))?.map(|bytes| Arc::new(bytes) as crate::arch::ModelBytes))
}

fn safetensors(dir: &Path) -> Result<ModelFiles> {
    ModelFiles::read_with(|name| read_file(&dir.join(name)))
}

pub struct EdgeModels {
    /// What the build recorded of the embedder: answers `embedder()`
    /// without loading it.
    embed_info: Option<EmbedderInfo>,
    embed: Slot<(TextEmbedder, String)>,
    rerank: Slot<(TextReranker, String)>,
}

impl EdgeModels {
    /// The models `models.json` names; none when the deployment has no
    /// such file (keyword search only).
    fn from_manifest() -> EdgeModels {
        let manifest = std::fs::read(models_dir().join(MODELS_MANIFEST))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ModelsManifest>(&bytes).ok())
            .unwrap_or_default();
        EdgeModels {
            embed_info: manifest.embed.as_ref().map(|e| e.info.clone()),
            embed: Slot::new(manifest.embed.map(|e| e.model)),
            rerank: Slot::new(manifest.rerank),
        }
    }

    fn loaded_embedder(&self) -> std::result::Result<&(TextEmbedder, String), String> {
        self.embed.get("embedding", load)
    }

    fn loaded_ranker(&self) -> std::result::Result<&(TextReranker, String), String> {
        self.rerank.get("reranking", load)
    }
}

/// The model in `dir`, on this instance's CPU, with the id it goes by.
fn load<T: Loadable>(entry: &Entry, dir: &Path) -> Result<(T, String)> {
    let device = ModelDevice::cpu();
    let model = match gguf(dir)? {
        Some(bytes) => T::load_gguf(&entry.id, bytes, &device)?,
        None => T::load(safetensors(dir)?, &device)?,
    };
    Ok((model, entry.id.clone()))
}

fn model_error(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

impl Inference for EdgeModels {
    fn embedder(&self) -> Result<EmbedderInfo> {
        self.embed_info
            .clone()
            .ok_or_else(|| model_error("this deployment has no embedding model (qmd edge build)".into()))
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.loaded_embedder().map_err(model_error)?.0.embed_counted(texts)
    }

    fn reranker(&self) -> Option<String> {
        self.rerank.entry.as_ref().map(|entry| entry.id.clone())
    }

    fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
        self.loaded_ranker().map_err(model_error)?.0.score(query, &refs)
    }
}

thread_local! {
    static MODELS: EdgeModels = EdgeModels::from_manifest();
}

/// Loads every model the deployment has (pre-initialisation).
pub fn preload() -> Result<()> {
    MODELS.with(|models| {
        if models.embed.entry.is_some() {
            models.loaded_embedder().map_err(model_error)?;
        }
        if models.rerank.entry.is_some() {
            models.loaded_ranker().map_err(model_error)?;
        }
        Ok(())
    })
}

/// Runs `f` with this instance's models.
pub fn with_models<R>(f: impl FnOnce(&dyn Inference) -> R) -> R {
    MODELS.with(|models| f(models))
}
