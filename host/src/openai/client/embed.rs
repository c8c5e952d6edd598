//! Embedding on a server: `POST <base URL>/embeddings`, OpenAI's shape.

use std::sync::OnceLock;

use qmd_core::inference::{EmbedderInfo, Embedding};
use serde_json::{Value, json};

use super::{Connection, Endpoint};

/// Inputs per request.
const BATCH: usize = 64;
/// The window assumed for a remote model (chunks are cut to fit it): what
/// most embedding models take; the server truncates longer inputs or
/// refuses them.
pub const REMOTE_WINDOW: usize = 512;

pub struct RemoteEmbedder {
    server: Connection,
    /// Learned from the first answer; every later one must match it.
    dimension: OnceLock<usize>,
}

impl RemoteEmbedder {
    pub fn new(endpoint: Endpoint) -> RemoteEmbedder {
        RemoteEmbedder { server: Connection::new(endpoint), dimension: OnceLock::new() }
    }

    pub fn id(&self) -> String {
        self.server.endpoint.id()
    }

    /// What the engine records with the vectors. The dimension needs one
    /// answer from the server (a one-word probe the first time).
    pub fn describe(&self) -> Result<EmbedderInfo, String> {
        let dimension = match self.dimension.get() {
            Some(&d) => d,
            None => self.embed(&["dimension probe".to_string()])?[0].vector.len(),
        };
        Ok(EmbedderInfo {
            model: self.server.endpoint.id(),
            dimension,
            max_tokens: REMOTE_WINDOW,
            query_prompt: String::new(),
            document_prompt: String::new(),
            weights: String::new(),
        })
    }

    /// Unit vectors, in input order. Token counts are unknown (the server
    /// reports only a total), so they are 0.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>, String> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.embed_batch(batch)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, batch: &[String]) -> Result<Vec<Embedding>, String> {
        let body = json!({"model": self.server.endpoint.model, "input": batch, "encoding_format": "float"});
        self.server.request("embedding", "embeddings", &body, |answer| self.vectors(answer, batch.len()))
    }

    /// The answer's vectors in input order, checked and made unit length.
    fn vectors(&self, answer: &Value, expected: usize) -> Result<Vec<Embedding>, String> {
        let data = answer["data"].as_array().ok_or("the answer has no 'data' array")?;
        if data.len() != expected {
            return Err(format!("{} vectors for {expected} inputs", data.len()));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        let mut batch_dimension: Option<usize> = None;
        for (position, item) in data.iter().enumerate() {
            let index = item["index"].as_u64().map_or(position, |i| i as usize);
            let numbers =
                item["embedding"].as_array().ok_or_else(|| format!("vector {index} is not an array of numbers"))?;
            let vector: Vec<f32> = numbers
                .iter()
                .map(|n| n.as_f64().filter(|x| x.is_finite()).map(|x| x as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("vector {index} holds something that is not a finite number"))?;
            // Every vector as long as the first of this answer, and as those
            // of earlier answers.
            let dimension = *batch_dimension.get_or_insert(self.dimension.get().copied().unwrap_or(vector.len()));
            if vector.len() != dimension || dimension == 0 {
                return Err(format!(
                    "vector {index} has {} dimensions, the model's others {dimension} (another model behind the same name?)",
                    vector.len()
                ));
            }
            let slot = slots.get_mut(index).ok_or_else(|| format!("vector index {index} is out of range"))?;
            if slot.replace(unit(vector)).is_some() {
                return Err(format!("vector index {index} comes twice"));
            }
        }
        if let Some(dimension) = batch_dimension {
            self.dimension.get_or_init(|| dimension);
        }
        Ok(slots
            .into_iter()
            .map(|v| Embedding { vector: v.expect("each index once, all in range"), tokens: 0 })
            .collect())
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_whole() {
        let embedder = RemoteEmbedder::new(Endpoint::parse("openai:m@http://127.0.0.1:9/v1").unwrap());
        let answer = json!({"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 4.0]}]});
        let vectors = embedder.vectors(&answer, 2).unwrap();
        assert_eq!(vectors[0].vector, [0.6, 0.8], "in input order, unit length");
        assert_eq!(vectors[1].vector, [0.0, 1.0]);
        for (bad, why) in [
            (json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}), "1 vectors for 2 inputs"),
            (json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 0.0]}]}), "dimensions"),
            (json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}), "twice"),
            (
                json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 5, "embedding": [1.0, 0.0]}]}),
                "out of range",
            ),
            (
                json!({"data": [{"index": 0, "embedding": [1.0, null]}, {"index": 1, "embedding": [1.0, 0.0]}]}),
                "finite",
            ),
            (json!({"error": "x"}), "no 'data'"),
        ] {
            let err = embedder.vectors(&bad, 2).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
