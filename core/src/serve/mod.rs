//! qmd's HTTP API over an engine, as a pure function of a request: the
//! REST routes of `qmd mcp --http` (`POST /query`, alias `/search`, with
//! qmd's body and answer) and read routes for `get`, `multi-get` and
//! `status`. One implementation for every server: the `qmd` host forwards
//! these routes to its component, and the edge component (`wasi:http`)
//! answers them itself. Transports own the socket, the body limit
//! ([`MAX_BODY_BYTES`]), `GET /health` and request logs.

mod bodies;
pub mod deployment;
mod read;

pub use bodies::count;
use serde_json::{Value, json};

use crate::Engine;
use crate::inference::Inference;

/// The largest request body a server reads; a longer one is refused with
/// 413 before it is parsed.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The most typed searches one query may carry (the engine's bound,
/// checked here before the searches are read).
pub use crate::engine::MAX_SEARCHES;

pub struct HttpRequest<'a> {
    pub method: &'a str,
    /// The path alone: no query string.
    pub path: &'a str,
    pub body: &'a [u8],
}

#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// Methods the path takes, for a 405's `Allow` header.
    pub allow: Option<&'static str>,
}

impl HttpResponse {
    pub fn json(status: u16, body: &Value) -> HttpResponse {
        HttpResponse { status, content_type: "application/json", body: body.to_string(), allow: None }
    }

    /// `{"error": message}`, the shape of every refusal.
    pub fn error(status: u16, message: impl Into<String>) -> HttpResponse {
        HttpResponse::json(status, &json!({ "error": message.into() }))
    }

    /// qmd's answer to a path it does not serve.
    pub fn not_found() -> HttpResponse {
        HttpResponse { status: 404, content_type: "text/plain", body: "Not Found".into(), allow: None }
    }

    /// A method `path` does not take; `allowed` is the one it does.
    pub fn method_not_allowed(path: &str, allowed: &'static str) -> HttpResponse {
        let mut refused = HttpResponse::error(405, format!("Method Not Allowed: {path} takes {allowed}"));
        refused.allow = Some(allowed);
        refused
    }

    /// A body over [`MAX_BODY_BYTES`].
    pub fn too_large() -> HttpResponse {
        HttpResponse::error(413, format!("Payload Too Large: request body exceeds {MAX_BODY_BYTES} bytes"))
    }
}

/// `GET /health`: the server is up, and for how long.
pub fn health(uptime_secs: u64) -> HttpResponse {
    HttpResponse::json(200, &json!({"status": "ok", "uptime": uptime_secs}))
}

/// The routes this module answers (the rest are the transport's).
pub fn serves(path: &str) -> bool {
    route(path).is_some()
}

#[derive(Clone, Copy)]
enum Route {
    Query,
    Get,
    MultiGet,
    Status,
}

fn route(path: &str) -> Option<Route> {
    Some(match path {
        "/query" | "/search" => Route::Query,
        "/get" => Route::Get,
        "/multi-get" | "/multi_get" => Route::MultiGet,
        "/status" => Route::Status,
        _ => return None,
    })
}

/// Answers one request. `models` runs vector searches and reranking where
/// the server has them; without, queries run on keywords alone, as the
/// engine does everywhere.
pub fn handle(engine: &Engine, models: Option<&dyn Inference>, request: &HttpRequest) -> HttpResponse {
    let Some(route) = route(request.path) else {
        return HttpResponse::not_found();
    };
    let wanted = match route {
        Route::Status => "GET",
        _ => "POST",
    };
    if request.method != wanted {
        return HttpResponse::method_not_allowed(request.path, wanted);
    }
    if request.body.len() > MAX_BODY_BYTES {
        return HttpResponse::too_large();
    }
    let body = match route {
        Route::Status => Value::Null,
        _ => match serde_json::from_slice::<Value>(request.body) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) => return HttpResponse::error(400, "Request body must be a JSON object"),
            Err(e) => return HttpResponse::error(400, format!("Request body must be JSON: {e}")),
        },
    };
    match route {
        Route::Query => bodies::query(engine, models, &body),
        Route::Get => read::get(engine, &body),
        Route::MultiGet => read::multi_get(engine, &body),
        Route::Status => read::status(engine),
    }
}

/// An engine error as an answer: the caller's mistake (400), something
/// missing (404), else the server's (500), always with the engine's text.
fn engine_error(e: crate::Error) -> HttpResponse {
    use crate::ErrorKind as K;
    let status = match e.kind {
        K::InvalidArgument | K::AlreadyExists => 400,
        K::NotFound => 404,
        K::CorruptIndex | K::Io | K::Internal => 500,
    };
    HttpResponse::error(status, e.message)
}

#[cfg(test)]
mod tests;
