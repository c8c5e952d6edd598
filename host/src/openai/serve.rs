//! The endpoints on `qmd mcp --http`: the process's warm models (the ones
//! `query` uses) behind the same Origin/Host guard as every route, and,
//! when `QMD_API_KEY` is set, an `Authorization: Bearer` check made before
//! any of the request is read. Every answer under `/v1` is OpenAI's: a
//! result, or an `{"error": …}` object (the framework's own refusals
//! included). At most [`MAX_IN_FLIGHT`] model requests hold their bodies
//! at once ([`MAX_BODY_BYTES_IN_FLIGHT`]); the others wait their turn.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::wire::{self, ApiError, EmbeddingItem};
use crate::models::Models;

/// Largest request body: 2,048 inputs of several KB each.
pub const MAX_BODY: usize = 16 << 20;

/// Model requests (`/v1/embeddings`, `/v1/rerank`) run at once. Each model
/// runs one request at a time (it is loaded once, behind a lock), so two
/// keep the embedding model and the reranker busy; more would only hold
/// bodies in memory while they wait. A request's body is read only once it
/// has its turn: one that waits holds its connection, not its body.
pub const MAX_IN_FLIGHT: usize = 2;

/// The most request body bytes the model endpoints hold at once
/// ([`MAX_BODY`] × [`MAX_IN_FLIGHT`], 32 MiB): with the model's own working
/// memory per request (text past a model's window is not tokenized), the
/// bound on what concurrent requests cost.
pub const MAX_BODY_BYTES_IN_FLIGHT: usize = MAX_BODY * MAX_IN_FLIGHT;
// The README cites this bound: change both together.
const _: () = assert!(MAX_BODY_BYTES_IN_FLIGHT == 32 << 20);

/// How long a model request waits for its turn before it is refused with
/// 503 and `Retry-After` (which OpenAI clients, qmd's included, retry).
const QUEUE_WAIT: Duration = Duration::from_secs(30);

struct ModelApi {
    models: Arc<Models>,
    /// `QMD_API_KEY`, when set: every request must bear it.
    api_key: Option<String>,
    /// Turns of the model requests ([`MAX_IN_FLIGHT`]).
    turns: Semaphore,
}

/// `/v1/embeddings`, `/v1/rerank` and `/v1/models`; every other `/v1`
/// path is a 404 in OpenAI's shape. In front of them all, [`protocol`]:
/// the key first, and every answer an OpenAI error object.
pub fn routes<S>(models: Arc<Models>) -> Router<S> {
    let api_key = std::env::var("QMD_API_KEY").ok().filter(|k| !k.is_empty());
    let api = Arc::new(ModelApi { models, api_key, turns: Semaphore::new(MAX_IN_FLIGHT) });
    Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .route("/v1/models", get(list_models))
        .route("/v1", any(unknown_path))
        .route("/v1/{*rest}", any(unknown_path))
        .layer(middleware::from_fn_with_state(api.clone(), protocol))
        .with_state(api)
}

fn answer(result: Result<Value, ApiError>) -> Response {
    let (status, body) = match result {
        Ok(body) => (StatusCode::OK, body),
        Err(e) => (StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST), e.body()),
    };
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn unavailable(message: String) -> ApiError {
    ApiError { status: 503, message, kind: "server_error", param: None, code: Some("model_unavailable") }
}

fn request_error(status: u16, message: String, code: &'static str) -> ApiError {
    ApiError { status, message, kind: "invalid_request_error", param: None, code: Some(code) }
}

/// The key, checked before anything of the request is read; then the
/// route; then any answer that is not already JSON (the framework's own:
/// 405 for a wrong method, a body it refused) made an OpenAI error object
/// with the same status.
async fn protocol(State(api): State<Arc<ModelApi>>, request: Request, next: Next) -> Response {
    if let Err(e) = api.authorize(request.headers()) {
        return answer(Err(e));
    }
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let response = next.run(request).await;
    let status = response.status();
    if !is_plain_error(&response) {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let (_, body) = response.into_parts();
    let said = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let said = String::from_utf8_lossy(&said).trim().to_string();
    let error = match status {
        StatusCode::METHOD_NOT_ALLOWED => {
            let allowed = allow.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("another method");
            request_error(405, format!("{method} is not allowed on {path}: use {allowed}"), "method_not_allowed")
        }
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        _ => {
            let reason = status.canonical_reason().unwrap_or("Error");
            let message = match said.as_str() {
                "" => reason.to_string(),
                said if said.starts_with(reason) => said.to_string(),
                said => format!("{reason}: {said}"),
            };
            let kind = if status.is_server_error() { "server_error" } else { "invalid_request_error" };
            ApiError { status: status.as_u16(), message, kind, param: None, code: None }
        }
    };
    let mut response = answer(Err(error));
    if let Some(allow) = allow {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

fn too_large() -> ApiError {
    request_error(413, format!("The request body is over the limit of {MAX_BODY} bytes"), "request_too_large")
}

async fn unknown_path(method: Method, request: Request) -> Response {
    let path = request.uri().path();
    answer(Err(request_error(404, format!("Unknown request URL: {method} {path}"), "unknown_url")))
}

impl ModelApi {
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(key) = &self.api_key else { return Ok(()) };
        let given =
            headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if given.is_some_and(|given| given.as_bytes() == key.as_bytes()) {
            return Ok(());
        }
        Err(ApiError {
            status: 401,
            message: "Incorrect or missing API key (this server needs QMD_API_KEY as a Bearer token)".into(),
            kind: "invalid_request_error",
            param: None,
            code: Some("invalid_api_key"),
        })
    }
}

/// Whether `response` is an error whose body is not JSON (the framework's
/// own refusals): what every server here rewrites in its protocol.
pub fn is_plain_error(response: &Response) -> bool {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    !is_json && (status.is_client_error() || status.is_server_error())
}

/// The `Content-Length` a request declares.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// A model request: waits for its turn ([`MAX_IN_FLIGHT`]), then reads the
/// body (at most [`MAX_BODY`]), parses it, and runs `work` on a blocking
/// thread (the models run there). The turn is held until the answer is
/// made.
async fn model_request<R: Send + 'static>(
    api: Arc<ModelApi>,
    request: Request,
    parse: fn(&[u8]) -> Result<R, ApiError>,
    work: impl FnOnce(&Models, R) -> Result<Value, ApiError> + Send + 'static,
) -> Response {
    // A body announced over the limit is refused before any of it is read.
    if declared_length(request.headers()).is_some_and(|length| length > MAX_BODY as u64) {
        return answer(Err(too_large()));
    }
    let Ok(Ok(_turn)) = tokio::time::timeout(QUEUE_WAIT, api.turns.acquire()).await else {
        let busy = ApiError {
            status: 503,
            message: format!(
                "The server is busy: {MAX_IN_FLIGHT} model requests are running and this one waited {}s; retry",
                QUEUE_WAIT.as_secs()
            ),
            kind: "server_error",
            param: None,
            code: Some("server_busy"),
        };
        let mut response = answer(Err(busy));
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return response;
    };
    // Any error here is the limit (or a client gone, which reads no answer).
    let Ok(bytes) = axum::body::to_bytes(request.into_body(), MAX_BODY).await else { return answer(Err(too_large())) };
    let parsed = match parse(&bytes) {
        Ok(parsed) => parsed,
        Err(e) => return answer(Err(e)),
    };
    drop(bytes);
    let models = api.models.clone();
    let result = tokio::task::spawn_blocking(move || work(&models, parsed))
        .await
        .unwrap_or_else(|e| Err(unavailable(format!("the model failed: {e}"))));
    answer(result)
}

async fn embeddings(State(api): State<Arc<ModelApi>>, request: Request) -> Response {
    model_request(api, request, wire::embeddings_request, |models, request| {
        let info = models.embedder().map_err(unavailable)?;
        wire::check_model(request.model.as_deref(), &info.model)?;
        if let Some(asked) = request.dimensions.filter(|&d| d != info.dimension as u64) {
            return Err(ApiError::invalid(
                "dimensions",
                format!("'{}' gives {}-dimensional vectors, not {asked}", info.model, info.dimension),
            ));
        }
        let embedded = models.embed(&request.input).map_err(unavailable)?;
        let tokens: u64 = embedded.iter().map(|e| u64::from(e.tokens)).sum();
        let data: Vec<EmbeddingItem> = embedded
            .iter()
            .enumerate()
            .map(|(index, e)| EmbeddingItem {
                object: "embedding",
                index,
                embedding: wire::encode_vector(&e.vector, request.encoding),
            })
            .collect();
        Ok(json!({
            "object": "list",
            "data": data,
            "model": info.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }))
    })
    .await
}

async fn rerank(State(api): State<Arc<ModelApi>>, request: Request) -> Response {
    model_request(api, request, wire::rerank_request, |models, request| {
        let model = models.reranker_ready().map_err(unavailable)?;
        wire::check_model(request.model.as_deref(), &model)?;
        let scores = if request.documents.is_empty() {
            Vec::new()
        } else {
            models.rerank(&request.query, &request.documents).map_err(unavailable)?
        };
        let mut ranked: Vec<(usize, f32)> = scores.into_iter().enumerate().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(request.top_n.unwrap_or(ranked.len()));
        let results: Vec<Value> = ranked
            .into_iter()
            .map(|(index, score)| {
                let mut result = json!({"index": index, "relevance_score": score});
                if request.return_documents {
                    result["document"] = json!({"text": request.documents[index]});
                }
                result
            })
            .collect();
        Ok(json!({"model": model, "results": results}))
    })
    .await
}

async fn list_models(State(api): State<Arc<ModelApi>>) -> Response {
    let result = tokio::task::spawn_blocking(move || {
        let ids = [Some(api.models.embed_id()), api.models.reranker_ready().ok()];
        let data: Vec<Value> =
            ids.into_iter().flatten().map(|id| json!({"id": id, "object": "model", "owned_by": "qmd"})).collect();
        Ok::<_, ApiError>(json!({"object": "list", "data": data}))
    })
    .await
    .unwrap_or_else(|e| Err(unavailable(format!("the model failed: {e}"))));
    answer(result)
}
