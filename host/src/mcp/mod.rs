//! `qmd mcp`: the MCP server over stdio (default) or streamable HTTP, a
//! background daemon with a PID file, and `qmd mcp stop`.

mod daemon;
mod format;
pub mod guard;
pub(crate) mod http;
mod pool;
mod server;
mod stdio;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::component::Grants;
use crate::session::Session;
pub use daemon::DaemonFiles;
use pool::EnginePool;
use server::{QmdServer, Shared};

/// How the server is reached.
pub struct McpOptions {
    pub http: bool,
    pub port: u16,
    pub host: String,
    pub daemon: bool,
    /// Keep the index current while serving (`--watch`).
    pub watch: Option<crate::watch::WatchOptions>,
    /// Whether a project config's gated fields may be used (for `--watch`).
    pub trusted: bool,
}

/// Instances kept warm: enough for the cores, a few more for calls that
/// wait on I/O.
fn pool_size() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

pub fn run(session: &Session, mut options: McpOptions) -> Result<ExitCode> {
    let files = DaemonFiles::for_index(&session.index_name);
    if options.http && options.daemon {
        return daemon::start(&files, &options);
    }
    let grants = Grants {
        index_dir: session.index_dir.clone(),
        config: session.config.clone(),
        write: false,
        roots: Vec::new(),
    };
    // Set when `--daemon` started us and waits to hear that we listen.
    let ready = std::sync::Mutex::new(daemon::ReadyPipe::from_env());
    let ready = &ready;
    let pool = EnginePool::new(session.runtime(), session.index_name.clone(), grants, pool_size());
    // Dropped after the server stops, which lets the batch in hand finish.
    let _watching = options.watch.take().map(|watch| crate::watch::spawn(session.clone(), options.trusted, watch));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        let status = pool.call(|store, engine| Ok(engine.call_status(store)?)).await?;
        let status = status.map_err(|e| anyhow::anyhow!(e.message))?;
        let shared = Arc::new(Shared { pool, instructions: format::instructions(&status) });
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        if options.http {
            let host = options.host.clone();
            http::serve(shared, &options.host, options.port, shutdown, |port| {
                eprintln!("QMD MCP server listening on http://{host}:{port}/mcp");
                ready.lock().unwrap_or_else(|e| e.into_inner()).ready(port);
            })
            .await
        } else {
            serve_stdio(shared, shutdown).await
        }
    });
    if let Err(e) = &result {
        ready.lock().unwrap_or_else(|e| e.into_inner()).failed(e);
    }
    if options.http {
        files.remove_if_owned(std::process::id());
    }
    // Every call has been answered by now; a blocking read of stdin left
    // behind by a signal must not hold the process open.
    runtime.shutdown_background();
    result.map(|()| ExitCode::SUCCESS)
}

async fn serve_stdio(shared: Arc<Shared>, shutdown: CancellationToken) -> Result<()> {
    let server = QmdServer::new(shared);
    let (transport, writer) = stdio::transport();
    let running = match server.serve_with_ct(transport, shutdown.child_token()).await {
        Ok(running) => running,
        // The client went away before initializing: nothing to serve.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            let _ = tokio::time::timeout(stdio::DRAIN, writer).await;
            return Ok(());
        }
        Err(e) => return Err(anyhow::anyhow!("MCP initialize failed: {e}")),
    };
    // Returns on stdin EOF (after in-flight calls are answered) or a signal.
    running.waiting().await?;
    // rmcp has closed its output: let its last lines reach stdout.
    let _ = tokio::time::timeout(stdio::DRAIN, writer).await;
    Ok(())
}

/// JSON-RPC's error object for a message body that is not a client
/// message, `None` for one that is: `-32700` (Parse error, `id: null`) for
/// bytes that are not JSON, `-32600` (Invalid Request) for JSON that is not
/// a JSON-RPC message, with its `id` where it has a usable one. Both
/// transports answer with it where rmcp would not (stdio) or would answer
/// otherwise (HTTP).
fn invalid_message(body: &[u8]) -> Option<serde_json::Value> {
    use serde_json::{Value, json};
    let error = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(body).err()?;
    let (id, code, message) = match serde_json::from_slice::<Value>(body) {
        Err(parse) => (Value::Null, -32700, format!("Parse error: {parse}")),
        Ok(value) => {
            let id = value.get("id").filter(|id| id.is_string() || id.is_i64() || id.is_u64()).cloned();
            (id.unwrap_or(Value::Null), -32600, format!("Invalid Request: {error}"))
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

async fn cancel_on_signal(token: CancellationToken) {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => eprintln!("Shutting down (SIGINT)..."),
        _ = terminate => eprintln!("Shutting down (SIGTERM)..."),
    }
    token.cancel();
}

/// `qmd mcp stop`.
pub fn stop(session: &Session) -> Result<ExitCode> {
    daemon::stop(&DaemonFiles::for_index(&session.index_name))
}
