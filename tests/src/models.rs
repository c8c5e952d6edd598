//! The models for evals and benchmarks, natively, as the engine's
//! [`Inference`] (what the host does behind the WIT import).

use std::path::{Path, PathBuf};
use std::process::Command;

use qmd_core::inference::{EmbedderInfo, Embedding, Inference};
use qmd_core::model::{Device, ModelFiles, SentenceEncoder};
use qmd_core::{Error, Result};

/// The test model's directory: `$QMD_TEST_MODEL_DIR`, else what
/// `scripts/test-weights.sh` fetches (once) and prints.
pub fn test_model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("QMD_TEST_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test-weights.sh");
    let out = Command::new("bash").arg(script).output().expect("run scripts/test-weights.sh");
    assert!(out.status.success(), "test-weights.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim())
}

pub fn model_files(dir: &Path) -> ModelFiles {
    ModelFiles::read_with(|name| match std::fs::read(dir.join(name)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::new(qmd_core::ErrorKind::Io, format!("{name}: {e}"))),
    })
    .expect("model files")
}

/// A sentence encoder on burn's CPU backend, no reranker.
pub struct NativeEmbedder {
    pub encoder: SentenceEncoder,
    pub id: String,
}

impl NativeEmbedder {
    pub fn load(dir: &Path) -> NativeEmbedder {
        let encoder = SentenceEncoder::load(model_files(dir), &Device::flex()).expect("load the embedding model");
        NativeEmbedder { encoder, id: dir.to_string_lossy().into_owned() }
    }
}

impl Inference for NativeEmbedder {
    fn embedder(&self) -> Result<EmbedderInfo> {
        let settings = self.encoder.settings();
        Ok(EmbedderInfo {
            model: self.id.clone(),
            dimension: self.encoder.dimension(),
            max_tokens: self.encoder.tokenizer().max_tokens(),
            query_prompt: settings.query_prompt.clone(),
            document_prompt: settings.document_prompt.clone(),
        })
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.encoder.embed(&refs)?;
        let tokens = self.encoder.tokenizer().count(&refs)?;
        Ok(vectors.into_iter().zip(tokens).map(|(vector, t)| Embedding { vector, tokens: t as u32 }).collect())
    }

    fn reranker(&self) -> Option<String> {
        None
    }

    fn rerank(&self, _: &str, _: &[String]) -> Result<Vec<f32>> {
        Err(Error::invalid("no reranker"))
    }
}
