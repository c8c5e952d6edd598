//! `qmd mcp --http`: MCP over streamable HTTP at `/mcp` (stateless), the
//! engine's HTTP API (qmd's REST `POST /query`, alias `/search`, and the
//! read routes), the OpenAI-compatible `/v1/embeddings` and `/v1/rerank`
//! ([`crate::openai`]) and `GET /health`, all behind the Origin/Host guard.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use qmd_core::serve;

use super::guard::OriginGuard;
use super::server::{QmdServer, Shared};

struct HttpState {
    shared: Arc<Shared>,
    guard: OriginGuard,
    started: Instant,
}

/// `HH:MM:SS.mmm` (UTC) for request log lines.
fn timestamp() -> String {
    crate::clock::clock(crate::clock::now_ms())
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// Refuses foreign origins and hosts before any route runs.
async fn check_origin(State(state): State<Arc<HttpState>>, request: Request, next: Next) -> Response {
    if let Err(reason) = state.guard.check_headers(request.headers()) {
        eprintln!("{} {} {} 403 — {reason}", timestamp(), request.method(), request.uri().path());
        return json_response(
            StatusCode::FORBIDDEN,
            json!({"jsonrpc": "2.0", "error": {"code": -32003, "message": format!("Forbidden: {reason}")}, "id": null}),
        );
    }
    let (method, path, start) = (request.method().clone(), request.uri().path().to_string(), Instant::now());
    let response = next.run(request).await;
    eprintln!("{} {method} {path} {} ({}ms)", timestamp(), response.status().as_u16(), start.elapsed().as_millis());
    response
}

async fn health(State(state): State<Arc<HttpState>>) -> Response {
    json_response(StatusCode::OK, json!({"status": "ok", "uptime": state.started.elapsed().as_secs()}))
}

/// The engine's HTTP API (`qmd_core::serve`: qmd's REST `/query` and
/// `/search`, `/get`, `/multi-get`, `/status`), answered by a pooled
/// instance: the same code as the edge component's. Other paths: 404.
async fn engine_api(State(state): State<Arc<HttpState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    if !serve::serves(&path) {
        return not_found().await;
    }
    let too_large = || {
        let refused = serve::HttpResponse::too_large();
        (StatusCode::PAYLOAD_TOO_LARGE, [(header::CONTENT_TYPE, refused.content_type)], refused.body).into_response()
    };
    // A body announced over the limit is refused before any of it is read.
    if crate::openai::serve::declared_length(&parts.headers).is_some_and(|n| n > serve::MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let Ok(bytes) = axum::body::to_bytes(body, serve::MAX_BODY_BYTES).await else { return too_large() };
    let method = parts.method.as_str().to_string();
    let answer = state
        .shared
        .pool
        .call(move |store, engine| Ok(engine.qmd_engine_http_api().call_handle(store, &method, &path, &bytes)?))
        .await;
    match answer {
        Ok(answer) => {
            let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, [(header::CONTENT_TYPE, answer.content_type)], answer.body).into_response();
            if let Some(allow) = answer.allow.and_then(|a| header::HeaderValue::from_str(&a).ok()) {
                response.headers_mut().insert(header::ALLOW, allow);
            }
            response
        }
        Err(e) => {
            eprintln!("HTTP handler error: {e:#}");
            json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "Internal Server Error"}))
        }
    }
}

/// The most an MCP POST body may hold (rmcp's own default limit).
const MAX_MCP_BODY: usize = 4 * 1024 * 1024;

/// JSON-RPC's answers on `/mcp`, for every error, the transport's own
/// included. A POST body over [`MAX_MCP_BODY`] is refused here (413).
/// rmcp answers a body it cannot deserialize with `415 fail to deserialize
/// …` in plain text; that answer becomes HTTP 400 with a JSON-RPC error
/// object, as the MCP TypeScript and Python SDKs' streamable HTTP servers
/// do: `-32700` (Parse error, `id: null`) for bytes that are not JSON,
/// `-32600` (Invalid Request) for JSON that is not a JSON-RPC message.
/// Every other answer of rmcp's that is an error and not JSON (its 406 and
/// 415 for a wrong Accept or Content-Type, 405 for a method it does not
/// serve) keeps its status and headers and gets a JSON-RPC error body,
/// code `-32000` with rmcp's text, as the TypeScript SDK answers those.
async fn json_rpc_errors(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return json_rpc_body(next.run(request).await).await;
    }
    let too_large = || {
        let message = format!("Payload Too Large: request body exceeds {MAX_MCP_BODY} bytes");
        json_response(StatusCode::PAYLOAD_TOO_LARGE, transport_error(&message))
    };
    // A body announced over the limit is refused before any of it is read.
    if crate::openai::serve::declared_length(request.headers()).is_some_and(|n| n > MAX_MCP_BODY as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_MCP_BODY).await else { return too_large() };
    let response = next.run(Request::from_parts(parts, axum::body::Body::from(bytes.clone()))).await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return json_rpc_body(response).await;
    }
    let (response_parts, response_body) = response.into_parts();
    let response_bytes = axum::body::to_bytes(response_body, 64 * 1024).await.unwrap_or_default();
    let undecodable = response_bytes.starts_with(b"fail to deserialize");
    match undecodable.then(|| super::invalid_message(&bytes)).flatten() {
        Some(error) => json_response(StatusCode::BAD_REQUEST, error),
        None => json_rpc_body(Response::from_parts(response_parts, axum::body::Body::from(response_bytes))).await,
    }
}

/// A JSON-RPC error object for a refusal of the transport's (no request
/// id can be known).
fn transport_error(message: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": null})
}

/// `response` as it is when it is not an error or already JSON; else the
/// same status and headers with its text in a JSON-RPC error object.
async fn json_rpc_body(response: Response) -> Response {
    let status = response.status();
    if !crate::openai::serve::is_plain_error(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let reason = status.canonical_reason().unwrap_or("Error");
    let message = match text.as_str() {
        "" => reason.to_string(),
        text if text.starts_with(reason) => text.to_string(),
        text => format!("{reason}: {text}"),
    };
    parts.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(transport_error(&message).to_string()))
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found").into_response()
}

/// Serves until `shutdown` fires; waits for in-flight requests.
pub async fn serve(
    shared: Arc<Shared>,
    host: &str,
    port: u16,
    shutdown: CancellationToken,
    on_listening: impl FnOnce(u16),
) -> anyhow::Result<()> {
    let guard = OriginGuard::from_env(host);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        // Our guard applies qmd's Host/Origin rules (and its allow lists).
        .disable_allowed_hosts()
        .with_cancellation_token(shutdown.child_token());
    let mcp_shared = shared.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(QmdServer::new(mcp_shared.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let models = shared.pool.runtime().models();
    let state = Arc::new(HttpState { shared, guard, started: Instant::now() });
    let app = Router::new()
        .route("/health", get(health))
        .merge(crate::openai::serve::routes(models))
        .nest_service("/mcp", Router::new().fallback_service(mcp).layer(middleware::from_fn(json_rpc_errors)))
        .fallback(engine_api)
        .layer(middleware::from_fn_with_state(state.clone(), check_origin))
        .with_state(state);
    let bind = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let listener = match tokio::net::TcpListener::bind(&bind).await {
        Ok(listener) => listener,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            anyhow::bail!("Port {port} already in use. Try a different port with --port.")
        }
        Err(e) => return Err(anyhow::anyhow!("cannot listen on {bind}: {e}")),
    };
    on_listening(listener.local_addr()?.port());
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await?;
    Ok(())
}
