//! Reranking on a server: `POST <base URL>/rerank`, the shape Jina, Cohere,
//! TEI, vLLM and llama.cpp's server share (`{model, query, documents}` →
//! `results: [{index, relevance_score}]`).

use serde_json::{Value, json};

use super::{Connection, Endpoint};

/// Documents per request.
const BATCH: usize = 64;

pub struct RemoteReranker {
    server: Connection,
}

impl RemoteReranker {
    pub fn new(endpoint: Endpoint) -> RemoteReranker {
        RemoteReranker { server: Connection::new(endpoint) }
    }

    pub fn id(&self) -> String {
        self.server.endpoint.id()
    }

    /// One score per document, in document order.
    pub fn score(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, String> {
        let mut scores = Vec::with_capacity(documents.len());
        for batch in documents.chunks(BATCH) {
            let body = json!({
                "model": self.server.endpoint.model,
                "query": query,
                "documents": batch,
                "top_n": batch.len(),
                "return_documents": false,
            });
            scores.extend(self.server.request("rerank", "rerank", &body, |answer| in_order(answer, batch.len()))?);
        }
        Ok(scores)
    }
}

/// The answer's scores by document index: each document scored once.
fn in_order(answer: &Value, expected: usize) -> Result<Vec<f32>, String> {
    let results = answer["results"].as_array().ok_or("the answer has no 'results' array")?;
    let mut scores: Vec<Option<f32>> = vec![None; expected];
    for result in results {
        let index = result["index"].as_u64().ok_or("a result without an 'index'")? as usize;
        let score = result["relevance_score"]
            .as_f64()
            .filter(|s| s.is_finite())
            .ok_or_else(|| format!("result {index} has no finite 'relevance_score'"))?;
        let slot = scores.get_mut(index).ok_or_else(|| format!("result index {index} is out of range"))?;
        if slot.replace(score as f32).is_some() {
            return Err(format!("document {index} is scored twice"));
        }
    }
    scores
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| format!("document {i} has no score ({} results for {expected} documents)", results.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_come_back_in_document_order_each_once() {
        let answer = json!({"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]});
        assert_eq!(in_order(&answer, 2).unwrap(), [0.1, 0.9]);
        for (bad, why) in [
            (json!({"results": [{"index": 0, "relevance_score": 0.1}]}), "document 1 has no score"),
            (json!({"results": [{"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}]}), "twice"),
            (json!({"results": [{"index": 3, "relevance_score": 0.1}]}), "out of range"),
            (json!({"results": [{"index": 0}]}), "relevance_score"),
            (json!({"data": []}), "no 'results'"),
        ] {
            let err = in_order(&bad, 2).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
