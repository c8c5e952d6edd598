//! Embedding on an OpenAI-compatible server (vLLM, TEI, Ollama, llama.cpp's
//! server, `qmd mcp --http`, OpenAI): `models.embed: openai:<model>@<base
//! URL>`. Inputs go in batches; a slow, refused (429), failing (5xx) or
//! dropped request is retried with backoff, `Retry-After` honoured; an
//! answer that does not fit (too few or too many vectors, another
//! dimension, numbers that are not finite) fails the batch whole with a
//! clear error, so nothing half-answered is ever stored. Text goes to the
//! configured URL and nowhere else.

use std::sync::OnceLock;
use std::time::Duration;

use qmd_core::inference::{EmbedderInfo, Embedding};
use serde_json::{Value, json};

/// Inputs per request.
const BATCH: usize = 64;
/// Tries per request, the first included.
const ATTEMPTS: u32 = 6;
/// The first retry's wait; doubled each time, at most [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The window assumed for a remote model (chunks are cut to fit it): what
/// most embedding models take; the server truncates longer inputs or
/// refuses them.
pub const REMOTE_WINDOW: usize = 512;

/// `openai:<model>@<base URL>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub model: String,
    /// Up to and including `/v1` (no trailing slash).
    pub base_url: String,
}

impl Endpoint {
    /// Parses `openai:<model>@http(s)://host[:port]/path`.
    pub fn parse(spec: &str) -> Result<Endpoint, String> {
        let rest =
            spec.trim().strip_prefix("openai:").ok_or_else(|| format!("'{spec}' does not start with openai:"))?;
        let at = rest.find("@http://").or_else(|| rest.find("@https://")).ok_or_else(|| {
            format!("'{spec}': name the model and the server as openai:<model>@http(s)://host:port/v1")
        })?;
        let (model, url) = (&rest[..at], &rest[at + 1..]);
        if model.is_empty() {
            return Err(format!("'{spec}': the model name before '@' is empty"));
        }
        Ok(Endpoint { model: model.to_string(), base_url: url.trim_end_matches('/').to_string() })
    }

    /// The spec back: the id vectors are recorded under (a different model
    /// or server is a different fingerprint, so its vectors never mix).
    pub fn id(&self) -> String {
        format!("openai:{}@{}", self.model, self.base_url)
    }
}

/// The API key: `QMD_OPENAI_API_KEY`, else `OPENAI_API_KEY`; sent only to
/// the configured server.
fn api_key() -> Option<String> {
    ["QMD_OPENAI_API_KEY", "OPENAI_API_KEY"].iter().find_map(|v| std::env::var(v).ok().filter(|k| !k.is_empty()))
}

/// The request timeout: `QMD_OPENAI_TIMEOUT_MS`, else two minutes.
fn timeout() -> Duration {
    let ms = std::env::var("QMD_OPENAI_TIMEOUT_MS").ok().and_then(|v| v.trim().parse::<u64>().ok());
    Duration::from_millis(ms.unwrap_or(120_000).max(1))
}

pub struct RemoteEmbedder {
    endpoint: Endpoint,
    agent: ureq::Agent,
    key: Option<String>,
    /// Learned from the first answer; every later one must match it.
    dimension: OnceLock<usize>,
}

/// One failed try: whether another may succeed, and how long to wait first.
struct Failure {
    message: String,
    retry: bool,
    after: Option<Duration>,
}

impl RemoteEmbedder {
    pub fn new(endpoint: Endpoint) -> RemoteEmbedder {
        let agent =
            ureq::Agent::config_builder().timeout_global(Some(timeout())).http_status_as_error(false).build().into();
        RemoteEmbedder { endpoint, agent, key: api_key(), dimension: OnceLock::new() }
    }

    pub fn id(&self) -> String {
        self.endpoint.id()
    }

    /// What the engine records with the vectors. The dimension needs one
    /// answer from the server (a one-word probe the first time).
    pub fn describe(&self) -> Result<EmbedderInfo, String> {
        let dimension = match self.dimension.get() {
            Some(&d) => d,
            None => self.embed(&["dimension probe".to_string()])?[0].vector.len(),
        };
        Ok(EmbedderInfo {
            model: self.endpoint.id(),
            dimension,
            max_tokens: REMOTE_WINDOW,
            query_prompt: String::new(),
            document_prompt: String::new(),
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
        let body = json!({"model": self.endpoint.model, "input": batch, "encoding_format": "float"}).to_string();
        let url = format!("{}/embeddings", self.endpoint.base_url);
        let mut wait = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let failure = match self.post(&url, &body) {
                Ok(answer) => match self.vectors(&answer, batch.len()) {
                    Ok(vectors) => return Ok(vectors),
                    Err(message) => Failure { message, retry: false, after: None },
                },
                Err(failure) => failure,
            };
            if !failure.retry || attempt == ATTEMPTS {
                let tries = if attempt > 1 { format!(" (after {attempt} tries)") } else { String::new() };
                return Err(format!("embedding server {}: {}{tries}", self.endpoint.base_url, failure.message));
            }
            std::thread::sleep(failure.after.unwrap_or(wait).min(MAX_BACKOFF));
            wait = (wait * 2).min(MAX_BACKOFF);
        }
        unreachable!("the last attempt returns")
    }

    fn post(&self, url: &str, body: &str) -> Result<Value, Failure> {
        let mut request = self.agent.post(url).header("Content-Type", "application/json");
        if let Some(key) = &self.key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        // A connection refused, reset or timed out may well work next time.
        let mut response =
            request.send(body).map_err(|e| Failure { message: e.to_string(), retry: true, after: None })?;
        let status = response.status().as_u16();
        let after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()?.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let text = response.body_mut().with_config().limit(256 << 20).read_to_string().map_err(|e| Failure {
            message: format!("reading the answer: {e}"),
            retry: true,
            after: None,
        })?;
        if status != 200 {
            let detail: String = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().or(v["error"].as_str()).map(str::to_string))
                .unwrap_or_else(|| text.chars().take(200).collect());
            let retry = status == 429 || status == 408 || status >= 500;
            return Err(Failure { message: format!("HTTP {status}: {detail}"), retry, after });
        }
        serde_json::from_str(&text).map_err(|e| Failure {
            message: format!("the answer is not JSON: {e}"),
            retry: true,
            after: None,
        })
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
    fn endpoints_parse_with_urls_and_names_that_hold_slashes() {
        let e = Endpoint::parse("openai:BAAI/bge-m3@http://gpu-box:8000/v1/").unwrap();
        assert_eq!((e.model.as_str(), e.base_url.as_str()), ("BAAI/bge-m3", "http://gpu-box:8000/v1"));
        assert_eq!(e.id(), "openai:BAAI/bge-m3@http://gpu-box:8000/v1");
        assert!(Endpoint::parse("openai:text-embedding-3-small@https://api.openai.com/v1").is_ok());
        assert!(Endpoint::parse("openai:@http://x/v1").unwrap_err().contains("empty"));
        assert!(Endpoint::parse("openai:model").unwrap_err().contains("openai:<model>@http(s)://"));
    }

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
