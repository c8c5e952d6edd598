//! Sentence embeddings: a BERT encoder, pooled (mean or CLS, as the model's
//! pooling config says) and L2-normalised, so a dot product is the cosine.

use burn::tensor::{Device, Tensor};
use tokenizers::Encoding;

use super::ModelFiles;
use super::batch::{PassPlan, rows, rows_async, token_batch};
use super::bert::BurnBert;
use super::config::{BertConfig, Pooling, SentenceSettings};
use super::load::load_safetensors;
use super::tokenize::TextTokenizer;
use crate::error::Result;
use qmd_base::embedding::{EmbedderInfo, Embedding};

pub struct BurnEmbedder {
    bert: BurnBert,
    tokenizer: TextTokenizer,
    pooling: Pooling,
    settings: SentenceSettings,
    dimension: usize,
    device: Device,
}

impl BurnEmbedder {
    /// Loads in f32 on burn (the kernels' quantized path is
    /// [`super::KernelEmbedder::from_repository`]).
    pub fn load(files: ModelFiles, device: &Device) -> Result<BurnEmbedder> {
        let Repository { config, pooling, settings, tokenizer } = Repository::read(&files)?;
        let mut bert = BurnBert::new(&config, device);
        // Plain BertModel checkpoints have no prefix; some carry `bert.`.
        load_safetensors(&mut bert, files.weights, &[(r"^bert\.", "")])?;
        Ok(BurnEmbedder { bert, tokenizer, pooling, settings, dimension: config.hidden_size, device: device.clone() })
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The model as the engine sees it, recorded under `model` (its repo id
    /// or directory).
    pub fn describe(&self, model: &str) -> EmbedderInfo {
        EmbedderInfo {
            model: model.to_string(),
            dimension: self.dimension,
            max_tokens: self.tokenizer.max_tokens(),
            query_prompt: self.settings.query_prompt.clone(),
            document_prompt: self.settings.document_prompt.clone(),
            weights: String::new(),
        }
    }

    /// [`embed`](Self::embed) plus each text's untruncated token count,
    /// which the engine's chunker needs to see a chunk past the window.
    pub fn embed_counted(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let (encodings, counts) = self.encode(texts)?;
        Ok(counted(self.vectors(&encodings)?, counts))
    }

    /// [`embed_counted`](Self::embed_counted) with asynchronous readback:
    /// the only way to read a WebGPU buffer in a browser.
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let (encodings, counts) = self.encode(texts)?;
        let plan = PassPlan::for_encodings(&encodings, &self.device);
        let mut outputs = Vec::with_capacity(plan.passes().len());
        for pass in plan.passes() {
            outputs.push(rows_async(self.pooled(pass, &encodings)).await?);
        }
        Ok(counted(plan.scatter(outputs), counts))
    }

    /// One unit vector per text, in input order. Texts longer than the
    /// model's window are truncated, as sentence-transformers does.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let (encodings, _) = self.encode(texts)?;
        self.vectors(&encodings)
    }

    /// The sentence vectors of encoded texts, in input order.
    fn vectors(&self, encodings: &[Encoding]) -> Result<Vec<Vec<f32>>> {
        PassPlan::for_encodings(encodings, &self.device).run(|pass| rows(self.pooled(pass, encodings)))
    }

    /// Each text tokenized once: encodings truncated to the window, and
    /// the untruncated token counts.
    fn encode(&self, texts: &[impl AsRef<str> + Sync]) -> Result<(Vec<Encoding>, Vec<usize>)> {
        let refs: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        Ok(self.tokenizer.encode_counted(&refs)?.into_iter().unzip())
    }

    /// The normalised sentence vectors of one batch, still on the device.
    fn pooled(&self, pass: &[usize], encodings: &[Encoding]) -> Tensor<2> {
        let members: Vec<_> = pass.iter().map(|&i| &encodings[i]).collect();
        let tokens = token_batch(&members, &self.device);
        let hidden = self.bert.forward(&tokens);
        let pooled = match self.pooling {
            Pooling::Mean => mean_pool(hidden, tokens.mask),
            Pooling::Cls => {
                let [n, _, h] = hidden.dims();
                hidden.slice([0..n, 0..1]).reshape([n, h])
            }
        };
        l2_normalize(pooled)
    }
}

/// What a sentence-transformers repository says about its model, besides
/// the weights.
pub(super) struct Repository {
    pub config: BertConfig,
    pub pooling: Pooling,
    pub settings: SentenceSettings,
    /// Truncating at the window the model was trained on
    /// (`max_seq_length`), at most its position table.
    pub tokenizer: TextTokenizer,
}

impl Repository {
    pub fn read(files: &ModelFiles) -> Result<Repository> {
        let config = BertConfig::parse(&files.config)?;
        let pooling = Pooling::parse(files.pooling.as_deref())?;
        let settings = SentenceSettings::parse(
            files.sentence_bert.as_deref(),
            files.sentence_transformers.as_deref(),
            files.modules.as_deref(),
        )?;
        let max_tokens =
            settings.max_seq_length.unwrap_or(config.max_position_embeddings).min(config.max_position_embeddings);
        let tokenizer = TextTokenizer::parse(&files.tokenizer, max_tokens)?;
        Ok(Repository { config, pooling, settings, tokenizer })
    }
}

/// Each vector with its text's untruncated token count.
pub(super) fn counted(vectors: Vec<Vec<f32>>, counts: Vec<usize>) -> Vec<Embedding> {
    vectors.into_iter().zip(counts).map(|(vector, tokens)| Embedding { vector, tokens: tokens as u32 }).collect()
}

/// Average of the real (unpadded) token states.
fn mean_pool(hidden: Tensor<3>, mask: Tensor<2>) -> Tensor<2> {
    let [n, t, h] = hidden.dims();
    let mask = mask.reshape([n, t, 1]);
    let summed = (hidden * mask.clone()).sum_dim(1).reshape([n, h]);
    let counts = mask.sum_dim(1).reshape([n, 1]).clamp_min(1e-9);
    summed / counts
}

fn l2_normalize(x: Tensor<2>) -> Tensor<2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}
