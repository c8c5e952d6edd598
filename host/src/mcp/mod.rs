//! `qmd mcp`: the MCP server over stdio (default) or streamable HTTP, a
//! background daemon with a PID file, and `qmd mcp stop`.

mod daemon;
mod format;
mod guard;
mod http;
mod pool;
mod server;

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
}

/// Instances kept warm: enough for the cores, a few more for calls that
/// wait on I/O.
fn pool_size() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

pub fn run(session: &Session, options: McpOptions) -> Result<ExitCode> {
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
    let pool = EnginePool::new(session.runtime(), session.index_name.clone(), grants, pool_size());
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
            })
            .await
        } else {
            serve_stdio(shared, shutdown).await
        }
    });
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
    let running = match server.serve_with_ct(rmcp::transport::stdio(), shutdown.child_token()).await {
        Ok(running) => running,
        // The client went away before initializing: nothing to serve.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(anyhow::anyhow!("MCP initialize failed: {e}")),
    };
    // Returns on stdin EOF (after in-flight calls are answered) or a signal.
    running.waiting().await?;
    Ok(())
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
