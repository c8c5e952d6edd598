//! Sentence embeddings: a BERT encoder, pooled (mean or CLS, as the model's
//! pooling config says) and L2-normalised, so a dot product is the cosine.

use burn::tensor::{Device, Tensor};

use super::ModelFiles;
use super::batch::{length_sorted_batches, rows, token_batch};
use super::bert::Bert;
use super::config::{BertConfig, Pooling, SentenceSettings};
use super::load::load_safetensors;
use super::tokenize::TextTokenizer;
use crate::error::Result;

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

    pub fn settings(&self) -> &SentenceSettings {
        &self.settings
    }

    /// One unit vector per text, in input order. Texts longer than the
    /// model's window are truncated, as sentence-transformers does.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self.tokenizer.encode(texts)?;
        let mut out = vec![Vec::new(); texts.len()];
        for batch in length_sorted_batches(&encodings) {
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
            for (i, vector) in batch.into_iter().zip(rows(l2_normalize(pooled))) {
                out[i] = vector;
            }
        }
        Ok(out)
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
