//! The endpoints on `qmd mcp --http`: the process's warm models (the ones
//! `query` uses) behind the same Origin/Host guard as every route, and,
//! when `QMD_API_KEY` is set, an `Authorization: Bearer` check.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::wire::{self, ApiError, EmbeddingItem};
use crate::models::Models;

/// Largest request body: 2,048 inputs of several KB each.
const MAX_BODY: usize = 16 << 20;

struct ModelApi {
    models: Arc<Models>,
    /// `QMD_API_KEY`, when set: every request must bear it.
    api_key: Option<String>,
}

/// `/v1/embeddings`, `/v1/rerank` and `/v1/models`.
pub fn routes<S>(models: Arc<Models>) -> Router<S> {
    let api_key = std::env::var("QMD_API_KEY").ok().filter(|k| !k.is_empty());
    Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .route("/v1/models", get(list_models))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(Arc::new(ModelApi { models, api_key }))
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

/// Runs `work` on a blocking thread (the models run there), after the key check.
async fn run(
    api: Arc<ModelApi>,
    headers: &HeaderMap,
    work: impl FnOnce(&Models) -> Result<Value, ApiError> + Send + 'static,
) -> Response {
    if let Err(e) = api.authorize(headers) {
        return answer(Err(e));
    }
    let result = tokio::task::spawn_blocking(move || work(&api.models))
        .await
        .unwrap_or_else(|e| Err(unavailable(format!("the model failed: {e}"))));
    answer(result)
}

async fn embeddings(State(api): State<Arc<ModelApi>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = match wire::embeddings_request(&body) {
        Ok(request) => request,
        Err(e) => return answer(Err(e)),
    };
    run(api, &headers, move |models| {
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

async fn rerank(State(api): State<Arc<ModelApi>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = match wire::rerank_request(&body) {
        Ok(request) => request,
        Err(e) => return answer(Err(e)),
    };
    run(api, &headers, move |models| {
        let model = models.reranker().ok_or_else(|| unavailable(models.rerank_missing()))?;
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

async fn list_models(State(api): State<Arc<ModelApi>>, headers: HeaderMap) -> Response {
    run(api, &headers, |models| {
        let ids = [Some(models.embed_id()), models.reranker()];
        let data: Vec<Value> =
            ids.into_iter().flatten().map(|id| json!({"id": id, "object": "model", "owned_by": "qmd"})).collect();
        Ok(json!({"object": "list", "data": data}))
    })
    .await
}
