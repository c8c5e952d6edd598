//! The models for evals and benchmarks, natively, as the engine's
//! [`Inference`] (what the host does behind the WIT import).

use std::path::{Path, PathBuf};
use std::process::Command;

use qmd_core::inference::{EmbedderInfo, Embedding, Inference};
use qmd_core::model::{DeviceChoice, Loadable, ModelDevice, ModelFiles, TextEmbedder};
use qmd_core::{Error, Result};

/// Runs one of the project's `scripts/` that set something up once and
/// print its path (`test-weights.sh`, `python-env.sh`); returns the path.
pub fn script_path(name: &str) -> PathBuf {
    script_path_with(name, &[])
}

/// [`script_path`] with arguments (`test-weights.sh smollm2`).
pub fn script_path_with(name: &str, args: &[&str]) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(name);
    let out = Command::new("bash")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(out.status.success(), "{name} failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim())
}

/// The test model's directory: `$QMD_TEST_MODEL_DIR`, else what
/// `scripts/test-weights.sh` fetches (once) and prints.
pub fn test_model_dir() -> PathBuf {
    std::env::var_os("QMD_TEST_MODEL_DIR").map_or_else(|| script_path("test-weights.sh"), PathBuf::from)
}

/// The process's wgpu device (burn sets its runtime up once per
/// process): a hardware GPU if there is one, else Mesa's lavapipe.
pub fn gpu_device() -> &'static ModelDevice {
    static DEVICE: std::sync::OnceLock<ModelDevice> = std::sync::OnceLock::new();
    DEVICE.get_or_init(|| {
        let device = ModelDevice::select(DeviceChoice::Gpu)
            .unwrap_or_else(|e| panic!("{}: run scripts/setup-system.sh (Mesa's Vulkan drivers)", e.message));
        eprintln!("models on {}", device.description);
        device
    })
}

pub fn model_files(dir: &Path) -> ModelFiles {
    ModelFiles::read_with(|name| match std::fs::read(dir.join(name)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::new(qmd_core::ErrorKind::Io, format!("{name}: {e}"))),
    })
    .expect("model files")
}

/// An embedding model on the CPU, no reranker, loaded as `qmd` loads it:
/// a safetensors repository (`path` a directory) or a GGUF file.
pub struct NativeEmbedder {
    pub encoder: TextEmbedder,
    pub id: String,
}

impl NativeEmbedder {
    pub fn load(path: &Path) -> NativeEmbedder {
        let id = path.to_string_lossy().into_owned();
        let encoder = if path.is_file() {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{id}: {e}"));
            TextEmbedder::load_gguf(&id, std::sync::Arc::new(bytes), &ModelDevice::cpu())
        } else {
            TextEmbedder::load(model_files(path), &ModelDevice::cpu())
        };
        NativeEmbedder { encoder: encoder.expect("load the embedding model"), id }
    }
}

impl Inference for NativeEmbedder {
    fn embedder(&self) -> Result<EmbedderInfo> {
        Ok(self.encoder.describe(&self.id))
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.encoder.embed_counted(texts)
    }

    fn reranker(&self) -> Option<String> {
        None
    }

    fn rerank(&self, _: &str, _: &[String]) -> Result<Vec<f32>> {
        Err(Error::invalid("no reranker"))
    }
}

/// Cosine similarity in f64 (the tests' measure of how close two vectors are).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}
