//! A cross-encoder reranker (`BertForSequenceClassification`): the query
//! and a document are read together, and the relevance logit becomes a
//! probability with a sigmoid.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor};
use tokenizers::Encoding;

use super::ModelFiles;
use super::batch::{PassPlan, rows, rows_async, token_batch};
use super::bert::{BurnBert, Pooler};
use super::config::BertConfig;
use super::load::load_safetensors;
use super::tokenize::TextTokenizer;
use crate::error::{Error, Result};

#[derive(Module, Debug)]
struct Classifier {
    bert: BurnBert,
    pooler: Pooler,
    classifier: Linear,
}

pub struct BurnRanker {
    model: Classifier,
    tokenizer: TextTokenizer,
    device: Device,
}

impl BurnRanker {
    pub fn load(files: ModelFiles, device: &Device) -> Result<BurnRanker> {
        let config = BertConfig::parse(&files.config)?;
        if config.num_labels() != 1 {
            return Err(Error::invalid(format!(
                "config.json: a reranker needs one relevance label, this model has {}",
                config.num_labels()
            )));
        }
        let tokenizer = TextTokenizer::parse(&files.tokenizer, config.max_position_embeddings)?;
        let mut model = Classifier {
            bert: BurnBert::new(&config, device),
            pooler: Pooler::new(&config, device),
            classifier: LinearConfig::new(config.hidden_size, 1).init(device),
        };
        load_safetensors(&mut model, files.weights, &[(r"^bert\.pooler\.", "pooler.")])?;
        Ok(BurnRanker { model, tokenizer, device: device.clone() })
    }

    /// Relevance of each document to the query, in [0, 1], input order.
    pub fn score(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let encodings = self.tokenizer.encode_pairs(query, documents)?;
        let scores =
            PassPlan::for_encodings(&encodings, &self.device).run(|pass| rows(self.probabilities(pass, &encodings)))?;
        Ok(scores.into_iter().map(|row| row[0]).collect())
    }

    /// [`score`](Self::score) with asynchronous readback: the only way to
    /// read a WebGPU buffer in a browser.
    pub async fn score_async(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let encodings = self.tokenizer.encode_pairs(query, documents)?;
        let plan = PassPlan::for_encodings(&encodings, &self.device);
        let mut outputs = Vec::with_capacity(plan.passes().len());
        for pass in plan.passes() {
            outputs.push(rows_async(self.probabilities(pass, &encodings)).await?);
        }
        Ok(plan.scatter(outputs).into_iter().map(|row| row[0]).collect())
    }

    /// The relevance probability of each pair in `pass`, one per row.
    fn probabilities(&self, pass: &[usize], encodings: &[Encoding]) -> Tensor<2> {
        let members: Vec<_> = pass.iter().map(|&i| &encodings[i]).collect();
        let tokens = token_batch(&members, &self.device);
        let hidden = self.model.bert.forward(&tokens);
        sigmoid(self.model.classifier.forward(self.model.pooler.forward(hidden)))
    }
}
