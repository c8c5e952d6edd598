//! The embedding model in the browser: burn on WebGPU (or its CPU backend
//! where there is no adapter), fed files the page fetched and cached. All
//! readback is asynchronous; a browser cannot block on the GPU.

use std::cell::RefCell;

use js_sys::{Object, Reflect, Uint8Array};
use qmd_core::inference::{EmbedderInfo, Embedding};
use qmd_core::model::{DeviceChoice, ModelDevice, ModelFiles, SentenceEncoder};
use qmd_core::{Error, Result};
use serde::Serialize;

thread_local! {
    /// burn initialises its wgpu runtime once per thread (this Worker),
    /// so the device chosen first is kept for every later model.
    static DEVICE: RefCell<Option<ModelDevice>> = const { RefCell::new(None) };
}

pub struct BrowserEmbedder {
    encoder: SentenceEncoder,
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
    /// Loads `id`'s files (an object of repository path → `Uint8Array`) on
    /// the device `device` asks for (`auto`, `gpu` or `cpu`).
    pub async fn load(id: &str, files: &Object, device: &str) -> Result<BrowserEmbedder> {
        let files = ModelFiles::read_with(|name| {
            let value =
                Reflect::get(files, &name.into()).map_err(|_| Error::invalid("model files must be an object"))?;
            Ok((!value.is_undefined() && !value.is_null()).then(|| Uint8Array::new(&value).to_vec()))
        })?;
        let device = device_for(DeviceChoice::parse(device)?).await?;
        let encoder = SentenceEncoder::load(files, &device.device)?;
        Ok(BrowserEmbedder { info: encoder.describe(id), encoder, device: device.description })
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
        self.encoder.embed_counted_async(texts).await
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
