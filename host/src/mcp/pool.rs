//! Warm engine instances for the server. Each call borrows one instance
//! (its index snapshot and loaded sections stay cached between calls), runs
//! on a blocking thread, and gives it back; at most `size` run at once.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use tokio::sync::Semaphore;
use wasmtime::Store;

use crate::component::bindings::Engine;
use crate::component::{Grants, HostState, Runtime};

struct Instance {
    store: Store<HostState>,
    engine: Engine,
}

pub struct EnginePool {
    runtime: Arc<Runtime>,
    index_name: String,
    grants: Grants,
    idle: Mutex<Vec<Instance>>,
    permits: Semaphore,
}

impl EnginePool {
    /// Read-only grants: the server never writes the index or the config.
    pub fn new(runtime: Arc<Runtime>, index_name: String, grants: Grants, size: usize) -> Arc<EnginePool> {
        Arc::new(EnginePool {
            runtime,
            index_name,
            grants,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size),
        })
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Runs `f` on an idle instance (a new one when none is idle).
    pub async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Store<HostState>, &Engine) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _permit = self.permits.acquire().await?;
        let pool = self.clone();
        tokio::task::spawn_blocking(move || {
            let reused = pool.idle.lock().map_err(|_| anyhow::anyhow!("engine pool poisoned"))?.pop();
            let mut instance = match reused {
                Some(instance) => instance,
                None => {
                    let (store, engine) = pool.runtime.instantiate(&pool.index_name, &pool.grants, None)?;
                    Instance { store, engine }
                }
            };
            let result = f(&mut instance.store, &instance.engine).map_err(crate::component::call_failed);
            // An instance that trapped is dropped: its state is unknown.
            if result.is_ok()
                && let Ok(mut idle) = pool.idle.lock()
            {
                idle.push(instance);
            }
            result
        })
        .await?
    }
}
