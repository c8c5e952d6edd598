//! The edge service: the engine as a `wasi:http` proxy component (WIT
//! world `edge`), for `wasmtime serve` and the platforms that run such
//! components. It answers qmd's HTTP API ([`crate::serve`]) over a
//! read-only index snapshot that `qmd edge build` wrote, mounted at the
//! same places as the `qmd` host's component mounts them (`/.qmd/index`,
//! `/.qmd/config`), with the models at `/.qmd/models` ([`models`]). A host
//! may create an instance per request: opening the index reads only its
//! manifest, and the rest is read as the request needs it.
//!
//! Pre-initialised (`wizer-initialize`, [`bundle`]), the component holds
//! the index, config and loaded models in its own memory instead, and
//! serves with no filesystem.

mod bundle;
mod models;

use std::io::{Read, Write};

use wasip2::http::types::{
    Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

use crate::serve::{self, HttpRequest, HttpResponse, MAX_BODY_BYTES};

// The world's WASI interfaces are the `wasip2` crate's, so the handler
// uses that crate's types (and its `std::io` adapters for streams).
wit_bindgen::generate!({
    path: "../wit",
    world: "edge",
    with: {
        "wasi:http/types@0.2.12": wasip2::http::types,
        "wasi:http/outgoing-handler@0.2.12": wasip2::http::outgoing_handler,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:clocks/monotonic-clock@0.2.12": wasip2::clocks::monotonic_clock,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
        "wasi:random/random@0.2.12": wasip2::random::random,
        "wasi:cli/stdout@0.2.12": wasip2::cli::stdout,
        "wasi:cli/stderr@0.2.12": wasip2::cli::stderr,
        "wasi:cli/stdin@0.2.12": wasip2::cli::stdin,
    },
});

struct Edge;

export!(Edge);

impl exports::wasi::http::incoming_handler::Guest for Edge {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let response = answer(&request);
        send(out, &response);
    }
}

impl Guest for Edge {
    fn wizer_initialize() {
        bundle::initialize();
    }
}

thread_local! {
    /// When this instance began serving, for `/health`.
    static STARTED: std::time::Instant = std::time::Instant::now();
}

fn method_name(method: &Method) -> String {
    match method {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(name) => name.clone(),
    }
}

fn answer(request: &IncomingRequest) -> HttpResponse {
    let started = STARTED.with(|s| *s);
    let target = request.path_with_query().unwrap_or_else(|| "/".into());
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let method = method_name(&request.method());
    if path == "/health" {
        return match method.as_str() {
            "GET" => serve::health(started.elapsed().as_secs()),
            _ => HttpResponse::method_not_allowed(path, "GET"),
        };
    }
    if !serve::serves(path) {
        return HttpResponse::not_found();
    }
    let body = match read_body(request) {
        Ok(Some(body)) => body,
        Ok(None) => return HttpResponse::too_large(),
        Err(message) => return HttpResponse::error(400, message),
    };
    let engine = bundle::engine().unwrap_or_else(crate::wasi::engine);
    let request = HttpRequest { method: &method, path, body: &body };
    models::with_models(|models| serve::handle(&engine, Some(models), &request))
}

/// The request body, or `None` when it is longer than [`MAX_BODY_BYTES`]
/// (read no further than that: a huge body costs the instance nothing).
fn read_body(request: &IncomingRequest) -> Result<Option<Vec<u8>>, String> {
    let body: IncomingBody = request.consume().map_err(|()| "the request body could not be read".to_string())?;
    let mut bytes = Vec::new();
    {
        // The stream is the body's child: it goes first.
        let stream = body.stream().map_err(|()| "the request body could not be read".to_string())?;
        let limit = MAX_BODY_BYTES as u64 + 1;
        stream.take(limit).read_to_end(&mut bytes).map_err(|e| format!("reading the request body: {e}"))?;
    }
    drop(body);
    Ok((bytes.len() <= MAX_BODY_BYTES).then_some(bytes))
}

fn send(out: ResponseOutparam, response: &HttpResponse) {
    let mut headers: Vec<(String, Vec<u8>)> = vec![
        ("content-type".into(), response.content_type.as_bytes().to_vec()),
        ("content-length".into(), response.body.len().to_string().into_bytes()),
    ];
    if let Some(allow) = response.allow {
        headers.push(("allow".into(), allow.as_bytes().to_vec()));
    }
    let fields = Fields::from_list(&headers).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(fields);
    // Every status the API uses is valid; the call cannot fail on them.
    let _ = outgoing.set_status_code(response.status);
    let Ok(body) = outgoing.body() else { return };
    ResponseOutparam::set(out, Ok(outgoing));
    if let Ok(mut stream) = body.write() {
        // A client that went away is not an error of ours.
        let _ = stream.write_all(response.body.as_bytes()).and_then(|()| Write::flush(&mut stream));
    }
    let _ = OutgoingBody::finish(body, None);
}
