//! The models in the browser, fed files the page fetched and cached: GGUF
//! files (qmd's own models) and embedding repositories (quantized at load)
//! on the engine's own WebGPU kernels or its quantized kernels on the CPU
//! with WebAssembly SIMD; cross-encoder repositories on burn (WebGPU, or
//! its CPU backend where there is no adapter). All GPU readback is asynchronous; a browser cannot block on the
//! GPU.

use std::cell::RefCell;
use std::sync::Arc;

use js_sys::{Object, Reflect, Uint8Array};
use qmd_core::generate::QueryExpander;
use qmd_core::inference::{EmbedderInfo, Embedding};
use qmd_core::model::{DeviceChoice, Loadable, ModelDevice, ModelFiles, TextEmbedder, TextReranker};
use qmd_core::{Error, Result};
use serde::Serialize;

thread_local! {
    /// burn initialises its wgpu runtime once per thread (this Worker),
    /// so the device chosen first is kept for every later model.
    static DEVICE: RefCell<Option<ModelDevice>> = const { RefCell::new(None) };
}

/// The name under which the page hands over a GGUF model's one file.
const GGUF_FILE: &str = "model.gguf";

/// The model's files: repository path → bytes, from the page's object.
struct PageFiles<'a>(&'a Object);

impl PageFiles<'_> {
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let value = Reflect::get(self.0, &name.into()).map_err(|_| Error::invalid("model files must be an object"))?;
        Ok((!value.is_undefined() && !value.is_null()).then(|| Uint8Array::new(&value).to_vec()))
    }

    /// The GGUF file when the model is one.
    fn gguf(&self) -> Result<Option<Vec<u8>>> {
        self.get(GGUF_FILE)
    }

    fn safetensors(&self) -> Result<ModelFiles> {
        ModelFiles::read_with(|name| self.get(name))
    }
}

/// Model `id` from the page's files (repository path → `Uint8Array`, or
/// `model.gguf` alone) on the device `device` asks for (`auto`, `gpu` or
/// `cpu`), and where it runs, for the status line: on the engine's
/// kernels (a GGUF file, an embedding repository quantized at load) the
/// device's GPU when it has one, else the CPU; on burn (a cross-encoder)
/// burn's device.
async fn load_model<T: Loadable>(id: &str, files: &Object, device: &str) -> Result<(T, String)> {
    let files = PageFiles(files);
    let choice = DeviceChoice::parse(device)?;
    // The CPU kernels need no burn device (nor the one a page keeps).
    let device = if choice == DeviceChoice::Cpu { ModelDevice::cpu() } else { device_for(choice).await? };
    let model = match files.gguf()? {
        Some(bytes) => T::load_gguf(id, Arc::new(bytes), &device)?,
        None => T::load(files.safetensors()?, &device)?,
    };
    let description = if model.on_kernels() { device.kernels_description() } else { device.description.clone() };
    Ok((model, description))
}

pub struct BrowserEmbedder {
    embedder: TextEmbedder,
    pub info: EmbedderInfo,
    pub device: String,
}

/// What the page shows about a loaded model.
#[derive(Serialize)]
pub struct LoadedModel {
    pub model: String,
    pub dimension: usize,
    pub max_tokens: usize,
    pub device: String,
}

impl BrowserEmbedder {
    /// Loads `id` from the page's files (see [`load_model`]).
    pub async fn load(id: &str, files: &Object, device: &str) -> Result<BrowserEmbedder> {
        let (embedder, device) = load_model::<TextEmbedder>(id, files, device).await?;
        Ok(BrowserEmbedder { info: embedder.describe(id), embedder, device })
    }

    pub fn describe(&self) -> LoadedModel {
        LoadedModel {
            model: self.info.model.clone(),
            dimension: self.info.dimension,
            max_tokens: self.info.max_tokens,
            device: self.device.clone(),
        }
    }

    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.embedder.embed_counted_async(texts).await
    }
}

/// The reranker of the page's `query`, as the CLI's: a cross-encoder or a
/// GGUF ranking model such as Qwen3-Reranker.
pub struct BrowserReranker {
    reranker: TextReranker,
    pub model: String,
    pub device: String,
}

/// What the page shows about a loaded reranker or expansion model.
#[derive(Serialize)]
pub struct LoadedReranker {
    pub model: String,
    pub device: String,
}

impl BrowserReranker {
    /// As [`BrowserEmbedder::load`].
    pub async fn load(id: &str, files: &Object, device: &str) -> Result<BrowserReranker> {
        let (reranker, device) = load_model::<TextReranker>(id, files, device).await?;
        Ok(BrowserReranker { reranker, model: id.to_string(), device })
    }

    pub fn describe(&self) -> LoadedReranker {
        LoadedReranker { model: self.model.clone(), device: self.device.clone() }
    }

    /// Relevance of each document to the query, in [0, 1], input order.
    pub async fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>> {
        let documents: Vec<&str> = documents.iter().map(String::as_str).collect();
        self.reranker.score_async(query, &documents).await
    }
}

/// The page's query-expansion model (qmd's is a Qwen3-1.7B fine-tune, one
/// GGUF file): decoded on the page's device (WebGPU, or the CPU kernels),
/// a token per step so the Worker can report progress and stop between
/// tokens.
pub struct BrowserGenerator {
    pub expander: QueryExpander,
    pub model: String,
    pub device: String,
}

impl BrowserGenerator {
    /// From the page's `model.gguf`, on `device` as [`BrowserEmbedder::load`].
    pub async fn load(id: &str, files: &Object, device: &str) -> Result<BrowserGenerator> {
        if !Reflect::has(files, &GGUF_FILE.into()).unwrap_or(false) {
            return Err(Error::invalid(format!("{id}: a query-expansion model is one GGUF file (`{GGUF_FILE}`)")));
        }
        let (expander, device) = load_model::<QueryExpander>(id, files, device).await?;
        Ok(BrowserGenerator { expander, model: id.to_string(), device })
    }

    pub fn describe(&self) -> LoadedReranker {
        LoadedReranker { model: self.model.clone(), device: self.device.clone() }
    }
}

async fn device_for(choice: DeviceChoice) -> Result<ModelDevice> {
    if let Some(device) = DEVICE.with_borrow(Clone::clone) {
        let is_cpu = device.description.starts_with("CPU");
        if choice == DeviceChoice::Gpu && is_cpu || choice == DeviceChoice::Cpu && !is_cpu {
            return Err(Error::invalid(format!(
                "this page already runs models on {}; reload it to change the device",
                device.description
            )));
        }
        return Ok(device);
    }
    let device = ModelDevice::select_async(choice).await?;
    DEVICE.with_borrow_mut(|slot| *slot = Some(device.clone()));
    Ok(device)
}

/// Embeddings as they cross between Workers: `{vectors: Float32Array[],
/// tokens: Uint32Array}`.
pub fn embeddings_to_js(embeddings: &[Embedding]) -> Object {
    let vectors: js_sys::Array = embeddings.iter().map(|e| js_sys::Float32Array::from(e.vector.as_slice())).collect();
    let tokens: Vec<u32> = embeddings.iter().map(|e| e.tokens).collect();
    let out = Object::new();
    let _ = Reflect::set(&out, &"vectors".into(), &vectors);
    let _ = Reflect::set(&out, &"tokens".into(), &js_sys::Uint32Array::from(tokens.as_slice()));
    out
}

/// The inverse of [`embeddings_to_js`], with what is malformed named.
pub fn embeddings_from_js(value: &wasm_bindgen::JsValue) -> Result<Vec<Embedding>> {
    let field = |name: &str| {
        Reflect::get(value, &name.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
            .ok_or_else(|| Error::invalid(format!("helper embeddings lack `{name}`")))
    };
    let vectors = js_sys::Array::from(&field("vectors")?);
    let tokens = js_sys::Uint32Array::new(&field("tokens")?).to_vec();
    if tokens.len() != vectors.length() as usize {
        return Err(Error::invalid(format!(
            "helper gave {} vectors and {} token counts",
            vectors.length(),
            tokens.len()
        )));
    }
    Ok(vectors
        .iter()
        .zip(tokens)
        .map(|(vector, tokens)| Embedding { vector: js_sys::Float32Array::new(&vector).to_vec(), tokens })
        .collect())
}
