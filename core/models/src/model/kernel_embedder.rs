//! Sentence embeddings on the engine's own kernels ([`crate::arch`]):
//! from a GGUF file (its tokenizer, its architecture), or from a
//! safetensors BERT repository quantized to Q8_0 at load
//! ([`super::bert_checkpoint`]); unit vectors out, on the CPU or the
//! device's GPU.

use super::bert_checkpoint::{QUANTIZED_AT_LOAD, quantized_bert};
use super::burn_embedder::Repository;
use super::burn_embedder::counted;
use super::kernel_device::{KernelDevice, Pass};
use super::passes::{KERNEL_EMBED, PassTokens, cpu_pass_tokens};
use super::tokenize::TextTokenizer;
use super::{ModelDevice, ModelFiles};
use crate::arch::backend::now;
use crate::arch::{EmbeddingModel, ModelBytes};
use crate::error::Result;
use crate::gguf::GgufFile;
use crate::kernels::parallel;
use qmd_base::embedding::{EmbedderInfo, Embedding};

pub struct KernelEmbedder {
    model: EmbeddingModel,
    tokenizer: TextTokenizer,
    device: KernelDevice,
    /// The query and document prompts.
    prompts: (String, String),
    /// [`EmbedderInfo::weights`]: empty for a GGUF file, run as stored.
    weights: &'static str,
}

impl KernelEmbedder {
    /// Loads from the file's bytes, to run on the CPU; `name` is how
    /// errors call the file.
    pub fn load(name: &str, bytes: ModelBytes) -> Result<KernelEmbedder> {
        Self::load_on(name, bytes, &ModelDevice::cpu())
    }

    /// Loads to run on `device`'s GPU when it has one.
    pub fn load_on(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<KernelEmbedder> {
        super::heap::keep_freed_pages();
        let file = GgufFile::parse(name, (*bytes).as_ref())?;
        let model = EmbeddingModel::load(&file, bytes.clone())?;
        let tokenizer = TextTokenizer::from_gguf(&file, model.context())?;
        let (query, document) = model.prompts();
        let prompts = (query.to_string(), document.to_string());
        Ok(KernelEmbedder { model, tokenizer, device: KernelDevice::on(device), prompts, weights: "" })
    }

    /// A sentence-transformers BERT repository, its matrices quantized to
    /// Q8_0 at load; its own tokenizer, window and prompts kept.
    pub fn from_repository(files: &ModelFiles, device: &ModelDevice) -> Result<KernelEmbedder> {
        super::heap::keep_freed_pages();
        let Repository { config, pooling, settings, tokenizer } = Repository::read(files)?;
        let model = EmbeddingModel::Bert(quantized_bert(&config, pooling, &files.weights)?);
        Ok(KernelEmbedder {
            model,
            tokenizer,
            device: KernelDevice::on(device),
            prompts: (settings.query_prompt, settings.document_prompt),
            weights: QUANTIZED_AT_LOAD,
        })
    }

    pub fn dimension(&self) -> usize {
        self.model.dimension()
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    pub fn describe(&self, model: &str) -> EmbedderInfo {
        EmbedderInfo {
            model: model.to_string(),
            dimension: self.dimension(),
            max_tokens: self.tokenizer.max_tokens(),
            query_prompt: self.prompts.0.clone(),
            document_prompt: self.prompts.1.clone(),
            weights: self.weights.to_string(),
        }
    }

    /// Unit vectors with each text's untruncated token count.
    pub fn embed_counted(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        now(self.embed_counted_async(texts))
    }

    /// [`embed_counted`](Self::embed_counted), waiting for a GPU without
    /// blocking (the browser).
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let (passes, counts) = self.passes(texts)?;
        Ok(counted(self.device.embed_all_async(&self.model, &passes).await?, counts))
    }

    /// The texts' token ids in forward passes, and each text's untruncated
    /// token count.
    fn passes(&self, texts: &[String]) -> Result<(Vec<Pass>, Vec<usize>)> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encoded = self.tokenizer.encode_counted(&refs)?;
        let counts = encoded.iter().map(|(_, count)| *count).collect();
        let ids: Vec<Vec<u32>> = encoded.into_iter().map(|(encoding, _)| encoding.get_ids().to_vec()).collect();
        // On the CPU each core gets passes of its own (see
        // `KernelDevice::embed_all_async`), together at most `KERNEL_EMBED.cpu` (and
        // a text) up to 16 cores, the smallest pass a core beyond.
        let workers = parallel::workers();
        let tokens: usize = ids.iter().map(Vec::len).sum();
        let cpu = cpu_pass_tokens(tokens, workers, KERNEL_EMBED.cpu / workers);
        Ok((self.device.passes(ids, PassTokens { cpu, ..KERNEL_EMBED }), counts))
    }
}
