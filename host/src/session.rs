//! The index a command works on and how it calls the engine: one place
//! for the CLI and the MCP server.

use anyhow::{Result, anyhow};

use crate::component::bindings;
use crate::component::{Grants, ProgressFn, Runtime};
use crate::paths;

/// A component call's result, or the engine's error as a user message.
pub(crate) fn engine_result<T>(r: wasmtime::Result<std::result::Result<T, bindings::Error>>) -> Result<T> {
    r.map_err(crate::component::call_failed)?.map_err(|e| anyhow!(e.message))
}

/// The index a command works on, and a way to call the engine on it.
#[derive(Clone)]
pub struct Session {
    runtime: std::sync::Arc<Runtime>,
    pub index_name: String,
    pub index_dir: std::path::PathBuf,
    pub config: paths::ConfigFile,
    pub models: crate::models::ModelSources,
}

impl Session {
    /// The session of the index at `location` (see `paths::Location::find`).
    pub fn at(location: paths::Location) -> Result<Session> {
        let models = crate::models::ModelSources::for_index(&location.config)?;
        Ok(Session {
            runtime: std::sync::Arc::new(Runtime::new(&models)?),
            index_dir: location.index_dir,
            config: location.config,
            index_name: location.name,
            models,
        })
    }

    /// Calls `f` on a fresh instance. Writing calls hold the index lock.
    pub fn call<T>(
        &self,
        write: bool,
        roots: Vec<std::path::PathBuf>,
        progress: Option<ProgressFn>,
        f: impl FnOnce(&mut wasmtime::Store<crate::component::HostState>, &bindings::Engine) -> Result<T>,
    ) -> Result<T> {
        let grants = Grants { index_dir: self.index_dir.clone(), config: self.config.clone(), write, roots };
        if write {
            std::fs::create_dir_all(&self.index_dir)?;
        }
        let _lock = if write { Some(crate::lock::WriteLock::acquire(&self.index_dir)?) } else { None };
        let (mut store, engine) = self.runtime.instantiate(&self.index_name, &grants, progress)?;
        f(&mut store, &engine)
    }

    /// The loaded component, for callers that keep instances (the server).
    pub fn runtime(&self) -> std::sync::Arc<Runtime> {
        self.runtime.clone()
    }

    pub fn read<T>(
        &self,
        f: impl FnOnce(&mut wasmtime::Store<crate::component::HostState>, &bindings::Engine) -> Result<T>,
    ) -> Result<T> {
        self.call(false, Vec::new(), None, f)
    }
}
