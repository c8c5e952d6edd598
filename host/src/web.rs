//! `qmd web`: the browser app (built by `scripts/build-web.sh`) on
//! loopback, plus the local model files, so the page needs nothing from
//! another origin: `GET /models/embed/<file>`, `/models/rerank/<file>` and
//! `/models/generate/model.gguf` serve the configured embedding model's,
//! reranker's and query-expansion model's files from the model cache
//! (`qmd pull`) or their local paths (a GGUF model's one file as
//! `model.gguf`), and `GET /config.json` tells the page to fetch them
//! there (the expansion model only when the user asks for it). Every request
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
    rerank: ModelSource,
    generate: ModelSource,
}

/// The one file name a GGUF model is served under.
const GGUF_FILE: &str = "model.gguf";

pub fn run(models: &ModelSources, options: WebOptions) -> Result<ExitCode> {
    let root = match options.dir {
        Some(dir) => dir,
        None => default_dir()?,
    };
    if !root.join("index.html").is_file() {
        bail!("{} holds no built app (index.html); run scripts/build-web.sh first, or pass --dir", root.display());
    }
    // Files are served only from under the folder's real path.
    let root = root.canonicalize().with_context(|| format!("cannot open {}", root.display()))?;
    let state = Arc::new(WebState {
        root,
        embed: models.embed.clone(),
        rerank: models.rerank.clone(),
        generate: models.generate.clone(),
    });
    let guard = Arc::new(OriginGuard::from_env(BIND_HOST));
    let app = Router::new()
        .route("/config.json", get(config))
        .route("/models/{role}/{*file}", get(model_file))
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
        for model in [&state.embed, &state.rerank] {
            if !model.is_present() {
                eprintln!("note: {}", model.missing_message());
                if model.remote {
                    eprintln!("      the page will download it from Hugging Face instead");
                }
            }
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

/// What the page needs to know: where its models come from.
async fn config(State(state): State<Arc<WebState>>) -> Response {
    let config = json!({
        "embedModel": page_source(&state.embed, "models/embed/"),
        "rerankModel": page_source(&state.rerank, "models/rerank/"),
        "generateModel": page_source(&state.generate, "models/generate/"),
    });
    with_type(config.to_string().into_bytes(), "application/json")
}

/// Where the page fetches `model` from: this server's `route` when the
/// files are here, the hub `qmd pull` downloads from (Hugging Face, or
/// `$HF_ENDPOINT`) when they are not and can be downloaded,
/// null (no such model in the page) otherwise.
fn page_source(model: &ModelSource, route: &str) -> serde_json::Value {
    match &model.gguf {
        Some(_) if model.is_present() => json!({"id": model.id, "url": format!("{route}{GGUF_FILE}"), "gguf": true}),
        Some(gguf) => match &gguf.url {
            Some(url) => json!({"id": model.id, "url": url, "gguf": true}),
            None => serde_json::Value::Null,
        },
        None if model.is_present() => json!({"id": model.id, "url": route}),
        None if model.remote => {
            json!({"id": model.id, "url": format!("{}/{}/resolve/main/", crate::models::pull::endpoint(), model.id)})
        }
        None => serde_json::Value::Null,
    }
}

async fn model_file(State(state): State<Arc<WebState>>, UrlPath((role, file)): UrlPath<(String, String)>) -> Response {
    let model = match role.as_str() {
        "embed" => &state.embed,
        "rerank" => &state.rerank,
        "generate" => &state.generate,
        _ => return not_found(),
    };
    match &model.gguf {
        Some(gguf) if file == GGUF_FILE => serve(&gguf.path, None).await,
        Some(_) => not_found(),
        // Only a local folder's files: a model without one (an endpoint, a
        // spec naming no model) has an empty `dir`, which would serve the
        // working folder's.
        None if model.endpoint.is_none()
            && model.invalid.is_none()
            && !model.dir.as_os_str().is_empty()
            && (REQUIRED_FILES.contains(&file.as_str()) || OPTIONAL_FILES.contains(&file.as_str())) =>
        {
            serve(&model.dir.join(&file), None).await
        }
        None => not_found(),
    }
}

async fn static_file(State(state): State<Arc<WebState>>, uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() || path.ends_with('/') { format!("{path}index.html") } else { path.to_string() };
    // Plain relative names only: no parent steps, hidden files or escapes.
    if path.split('/').any(|s| s.is_empty() || s.starts_with('.')) || path.contains(['\\', '%']) {
        return not_found();
    }
    serve(&state.root.join(path), Some(&state.root)).await
}

/// A file, streamed (model files run to hundreds of MB) with its length,
/// which the page checks a download against. With a `root`, only if its
/// real path stays under it: a link in the app folder to `/etc/passwd`
/// is a 404, as for every folder a command here reads.
async fn serve(path: &Path, root: Option<&Path>) -> Response {
    // Only a regular file (`files::regular`): a FIFO in the served folder
    // is refused, never opened for a blocking read (a thread per request).
    let owned = path.to_path_buf();
    let root = root.map(Path::to_path_buf);
    let opened = tokio::task::spawn_blocking(move || match &root {
        Some(root) => crate::files::contained::open_under(root, &owned),
        None => crate::files::regular::open(&owned),
    })
    .await;
    let Ok(Ok(file)) = opened else { return not_found() };
    let file = tokio::fs::File::from_std(file);
    let Ok(metadata) = file.metadata().await else { return not_found() };
    let body = axum::body::Body::from_stream(tokio_util::io::ReaderStream::new(file));
    let mut response = with_type(body, content_type(path));
    response.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(metadata.len()));
    response
}

fn with_type(body: impl IntoResponse, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidate every time: the service worker does the offline caching.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Cross-origin isolation, which a memory shared between Workers needs:
    // the engine's threaded build (www/engine.js) runs only where the page
    // is isolated. Everything the page loads is same-origin.
    headers
        .insert(header::HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin"));
    headers.insert(
        header::HeaderName::from_static("cross-origin-embedder-policy"),
        HeaderValue::from_static("require-corp"),
    );
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
