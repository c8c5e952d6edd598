//! Pre-initialisation (`wizer-initialize`): run once with the build's
//! folders mounted, it reads the index and config into memory and loads
//! the models; `wasmtime wizer` then snapshots the instance's memory into
//! a new component. Instances of that component start with all of it in
//! place (mapped copy-on-write from the component by `wasmtime`), need no
//! filesystem, and never load a model per request.

use std::cell::OnceCell;
use std::rc::Rc;

use crate::directory::{Directory, RamDirectory};
use crate::error::Result;
use crate::wasi::fs::FsDirectory;
use crate::wasi::{CONFIG_DIR, INDEX_DIR, config_file, mount};
use crate::{Engine, MemorySource};

thread_local! {
    static BUNDLED: OnceCell<Rc<Engine>> = const { OnceCell::new() };
}

/// The engine in memory, in a pre-initialised component.
pub fn engine() -> Option<Rc<Engine>> {
    BUNDLED.with(|bundled| bundled.get().cloned())
}

pub fn initialize() {
    if let Err(e) = load() {
        // A trap fails the snapshot, which is the point: say why first.
        eprintln!("qmd edge: pre-initialisation failed: {}", e.message);
        panic!("pre-initialisation failed");
    }
}

/// Every file of `dir`, in memory.
fn in_memory(dir: &dyn Directory) -> Result<RamDirectory> {
    let copy = RamDirectory::new();
    for name in dir.list()? {
        copy.atomic_write(&name, &dir.read(&name)?)?;
    }
    Ok(copy)
}

fn load() -> Result<()> {
    let index = in_memory(&FsDirectory::new(mount("QMD_INDEX_DIR", INDEX_DIR)))?;
    let name = config_file();
    let config = RamDirectory::new();
    config.atomic_write(&name, &FsDirectory::new(mount("QMD_CONFIG_DIR", CONFIG_DIR)).read(&name)?)?;
    // Documents are read from the index, never from collection folders.
    let engine = Engine::new(Rc::new(index), Rc::new(config), &name, Rc::new(MemorySource::new()));
    // Opened and checked now: a damaged snapshot fails the build, not a request.
    engine.status()?;
    super::models::preload()?;
    BUNDLED.with(|bundled| {
        let _ = bundled.set(Rc::new(engine));
    });
    Ok(())
}
