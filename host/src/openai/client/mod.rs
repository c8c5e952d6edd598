//! The client side of OpenAI-compatible model servers (vLLM, TEI, Ollama,
//! llama.cpp's server, `qmd mcp --http`, OpenAI): a model named
//! `openai:<model>@<base URL>`. Every request is retried with backoff when
//! it is slow, refused (429), failing (5xx) or dropped, `Retry-After`
//! honoured; an answer that does not fit fails whole with a clear error,
//! so nothing half-answered is ever stored. Text goes to the configured URL
//! and nowhere else.

mod chat;
mod embed;
mod rerank;

use std::time::Duration;

use serde_json::Value;

pub use chat::RemoteGenerator;
pub use embed::RemoteEmbedder;
pub use rerank::RemoteReranker;

/// Tries per request, the first included.
const ATTEMPTS: u32 = 6;
/// The first retry's wait; doubled each time, at most [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

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

/// One server: its URL, the key and the HTTP agent.
pub struct Connection {
    pub endpoint: Endpoint,
    agent: ureq::Agent,
    key: Option<String>,
}

/// One failed try: whether another may succeed, and how long to wait first.
struct Failure {
    message: String,
    retry: bool,
    after: Option<Duration>,
}

impl Connection {
    pub fn new(endpoint: Endpoint) -> Connection {
        // No redirects: a 307/308 would carry the text to another address
        // than the one configured; it is reported as the status it is.
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout()))
            .max_redirects(0)
            .http_status_as_error(false)
            .build()
            .into();
        Connection { endpoint, agent, key: api_key() }
    }

    /// POSTs `body` to `<base URL>/<path>` until an answer passes `check`,
    /// retrying what may pass next time. `what` names the server in errors.
    pub fn request<T>(
        &self,
        what: &str,
        path: &str,
        body: &Value,
        check: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<T, String> {
        let (url, body) = (format!("{}/{path}", self.endpoint.base_url), body.to_string());
        let mut wait = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let failure = match self.post(&url, &body) {
                Ok(answer) => match check(&answer) {
                    Ok(value) => return Ok(value),
                    Err(message) => Failure { message, retry: false, after: None },
                },
                Err(failure) => failure,
            };
            if !failure.retry || attempt == ATTEMPTS {
                let tries = if attempt > 1 { format!(" (after {attempt} tries)") } else { String::new() };
                return Err(format!("{what} server {}: {}{tries}", self.endpoint.base_url, failure.message));
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
}
