//! Sentence embeddings: a BERT encoder, pooled (mean or CLS, as the model's
//! pooling config says) and L2-normalised, so a dot product is the cosine.

use burn::tensor::{Device, Tensor};
use tokenizers::Encoding;

use super::ModelFiles;
use super::batch::{length_sorted_batches, rows, rows_async, token_batch};
use super::bert::Bert;
use super::config::{BertConfig, Pooling, SentenceSettings};
use super::load::load_safetensors;
use super::tokenize::TextTokenizer;
use crate::error::Result;
use crate::inference::{EmbedderInfo, Embedding};

pub struct SentenceEncoder {
    bert: Bert,
    tokenizer: TextTokenizer,
    pooling: Pooling,
    settings: SentenceSettings,
    dimension: usize,
    device: Device,
}

impl SentenceEncoder {
    pub fn load(files: ModelFiles, device: &Device) -> Result<SentenceEncoder> {
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
        let mut bert = Bert::new(&config, device);
        // Plain BertModel checkpoints have no prefix; some carry `bert.`.
        load_safetensors(&mut bert, files.weights, &[(r"^bert\.", "")])?;
        Ok(SentenceEncoder {
            bert,
            tokenizer,
            pooling,
            settings,
            dimension: config.hidden_size,
            device: device.clone(),
        })
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
        }
    }

    /// [`embed`](Self::embed) plus each text's untruncated token count,
    /// which the engine's chunker needs to see a chunk past the window.
    pub fn embed_counted(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.embed(&refs)?;
        self.counted(&refs, vectors)
    }

    /// [`embed_counted`](Self::embed_counted) with asynchronous readback:
    /// the only way to read a WebGPU buffer in a browser.
    pub async fn embed_counted_async(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.embed_async(&refs).await?;
        self.counted(&refs, vectors)
    }

    fn counted(&self, texts: &[&str], vectors: Vec<Vec<f32>>) -> Result<Vec<Embedding>> {
        let tokens = self.tokenizer.count(texts)?;
        Ok(vectors.into_iter().zip(tokens).map(|(vector, t)| Embedding { vector, tokens: t as u32 }).collect())
    }

    /// One unit vector per text, in input order. Texts longer than the
    /// model's window are truncated, as sentence-transformers does.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenizer.encode(texts)?;
        let mut out = vec![Vec::new(); texts.len()];
        for batch in length_sorted_batches(&encodings) {
            let vectors = rows(self.pooled(&batch, &encodings))?;
            scatter(&mut out, batch, vectors);
        }
        Ok(out)
    }

    /// [`embed`](Self::embed), awaiting each batch's readback.
    pub async fn embed_async(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenizer.encode(texts)?;
        let mut out = vec![Vec::new(); texts.len()];
        for batch in length_sorted_batches(&encodings) {
            let vectors = rows_async(self.pooled(&batch, &encodings)).await?;
            scatter(&mut out, batch, vectors);
        }
        Ok(out)
    }

    /// The normalised sentence vectors of one batch, still on the device.
    fn pooled(&self, batch: &[usize], encodings: &[Encoding]) -> Tensor<2> {
        let members: Vec<_> = batch.iter().map(|&i| &encodings[i]).collect();
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

/// Puts a batch's vectors back at their texts' positions.
fn scatter(out: &mut [Vec<f32>], batch: Vec<usize>, vectors: Vec<Vec<f32>>) {
    for (i, vector) in batch.into_iter().zip(vectors) {
        out[i] = vector;
    }
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
