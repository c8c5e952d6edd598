//! What the engine's WASI components share: files through preopened
//! directories ([`fs`]) and the instance's one [`Engine`] over the mounts
//! the host grants. The `component` feature (the `qmd` host's engine and
//! the plugin build) and the `edge` feature (`wasi:http`) both build on it.

pub mod fs;

use std::cell::RefCell;
use std::rc::Rc;

use fs::{FsDirectory, FsSource};

use crate::Engine;

/// Where the index and config directories are in the guest unless
/// `QMD_INDEX_DIR` / `QMD_CONFIG_DIR` say otherwise (the `qmd` host mounts
/// them at their own host paths, so messages name real paths; plugin hosts
/// often do the same). `QMD_CONFIG_FILE` names the config file in its
/// directory (default `<index name>.yml`). `QMD_PATH_BASE` (and
/// `QMD_HOME`, for `~`) is what relative collection paths mean.
pub const INDEX_DIR: &str = "/.qmd/index";
pub const CONFIG_DIR: &str = "/.qmd/config";

pub fn mount(var: &str, default: &str) -> String {
    std::env::var(var).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
}

/// The config file's name in its directory.
pub fn config_file() -> String {
    let name = std::env::var("QMD_INDEX_NAME").unwrap_or_else(|_| "index".into());
    mount("QMD_CONFIG_FILE", &format!("{name}.yml"))
}

thread_local! {
    /// One engine per instance: a warm instance (MCP server) reuses loaded
    /// segment sections across calls.
    static ENGINE: RefCell<Option<Rc<Engine>>> = const { RefCell::new(None) };
}

pub fn engine() -> Rc<Engine> {
    ENGINE.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| {
                let engine = Engine::new(
                    Rc::new(FsDirectory::new(mount("QMD_INDEX_DIR", INDEX_DIR))),
                    Rc::new(FsDirectory::new(mount("QMD_CONFIG_DIR", CONFIG_DIR))),
                    &config_file(),
                    Rc::new(FsSource),
                );
                // Relative collection paths: against the folder the host names.
                Rc::new(match std::env::var("QMD_PATH_BASE").ok().filter(|b| !b.is_empty()) {
                    Some(base) => engine.with_path_base(crate::collection::PathBase {
                        base,
                        home: std::env::var("QMD_HOME").ok().filter(|h| !h.is_empty()),
                    }),
                    None => engine,
                })
            })
            .clone()
    })
}
