//! `qmd web`: the browser app (built by `scripts/build-web.sh`) on
//! loopback, plus the local model files, so the page needs nothing from
//! another origin: `GET /models/embed/<file>` serves the configured
//! embedding model's files from the model cache (`qmd pull`), and
//! `GET /config.json` tells the page to fetch them there. Every request
//! passes the MCP server's Origin/Host guard first ([`OriginGuard`], same
//! `QMD_ALLOWED_ORIGINS` / `QMD_ALLOWED_HOSTS`): a page on another site that
//! rebinds its DNS name to 127.0.0.1 gets 403s, not the user's files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::mcp::guard::OriginGuard;
use crate::models::{ModelSource, ModelSources, OPTIONAL_FILES, REQUIRED_FILES};

/// Where `qmd web` listens: loopback only, the page reads the user's folders.
const BIND_HOST: &str = "127.0.0.1";

pub struct WebOptions {
    pub port: u16,
    /// The built app; default `<dir of the qmd binary>/../www`.
    pub dir: Option<PathBuf>,
}

struct WebState {
    root: PathBuf,
    embed: ModelSource,
}

pub fn run(models: &ModelSources, options: WebOptions) -> Result<ExitCode> {
    let root = match options.dir {
        Some(dir) => dir,
        None => default_dir()?,
    };
    if !root.join("index.html").is_file() {
        bail!("{} holds no built app (index.html); run scripts/build-web.sh first, or pass --dir", root.display());
    }
    let state = Arc::new(WebState { root, embed: models.embed.clone() });
    let guard = Arc::new(OriginGuard::from_env(BIND_HOST));
    let app = Router::new()
        .route("/config.json", get(config))
        .route("/models/embed/{*file}", get(model_file))
        .fallback(static_file)
        .layer(middleware::from_fn_with_state(guard, check_origin))
        .with_state(state.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((BIND_HOST, options.port))
            .await
            .with_context(|| format!("binding {BIND_HOST}:{}", options.port))?;
        let address = listener.local_addr()?;
        println!("qmd web: http://{address}/ (serving {})", state.root.display());
        if state.embed.gguf.is_some() {
            eprintln!("note: the embedding model {} is a GGUF file, which the page cannot run yet", state.embed.id);
            eprintln!("      the page searches by keyword; set QMD_EMBED_MODEL to a safetensors repo for vectors");
        } else if !state.embed.is_present() {
            eprintln!("note: {}", state.embed.missing_message());
            eprintln!("      the page will download the model from Hugging Face instead");
        }
        axum::serve(listener, app).with_graceful_shutdown(shutdown()).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Refuses foreign origins and hosts before any route runs: a 403 with the
/// guard's reason (as `qmd mcp --http` words it), logged on stderr.
async fn check_origin(State(guard): State<Arc<OriginGuard>>, request: Request, next: Next) -> Response {
    if let Err(reason) = guard.check_headers(request.headers()) {
        eprintln!("{} {} 403 — {reason}", request.method(), request.uri().path());
        return (StatusCode::FORBIDDEN, format!("Forbidden: {reason}")).into_response();
    }
    next.run(request).await
}

async fn shutdown() {
    let _ = tokio::signal::ctrl_c().await;
}

fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the qmd binary")?;
    let dir = exe.parent().and_then(Path::parent).map(|p| p.join("www"));
    dir.context("no directory beside the qmd binary")
}

/// What the page needs to know: where its embedding model comes from.
async fn config(State(state): State<Arc<WebState>>) -> Response {
    // GGUF files do not run in the page yet: the page embeds with no model
    // (keyword search only) rather than fetch files that do not exist.
    let model = if state.embed.gguf.is_some() {
        serde_json::Value::Null
    } else if state.embed.is_present() {
        json!({"id": state.embed.id, "url": "models/embed/"})
    } else if state.embed.remote {
        json!({"id": state.embed.id, "url": format!("https://huggingface.co/{}/resolve/main/", state.embed.id)})
    } else {
        serde_json::Value::Null
    };
    with_type(json!({"embedModel": model}).to_string().into_bytes(), "application/json")
}

async fn model_file(State(state): State<Arc<WebState>>, UrlPath(file): UrlPath<String>) -> Response {
    if !REQUIRED_FILES.contains(&file.as_str()) && !OPTIONAL_FILES.contains(&file.as_str()) {
        return not_found();
    }
    serve(&state.embed.dir.join(&file)).await
}

async fn static_file(State(state): State<Arc<WebState>>, uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() || path.ends_with('/') { format!("{path}index.html") } else { path.to_string() };
    // Plain relative names only: no parent steps, hidden files or escapes.
    if path.split('/').any(|s| s.is_empty() || s.starts_with('.')) || path.contains(['\\', '%']) {
        return not_found();
    }
    serve(&state.root.join(path)).await
}

async fn serve(path: &Path) -> Response {
    match tokio::fs::read(path).await {
        Ok(bytes) => with_type(bytes, content_type(path)),
        Err(_) => not_found(),
    }
}

fn with_type(bytes: Vec<u8>, content_type: &'static str) -> Response {
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidate every time: the service worker does the offline caching.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}
