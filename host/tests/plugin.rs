//! The plugin build of the engine (world `tools`, `scripts/build-plugin.sh`)
//! loads with nothing but WASI, as a host that maps exports to MCP tools
//! would load it: read-only grant on the notes, read-write on the index,
//! mount points moved by environment variables.

use std::path::{Path, PathBuf};
use std::process::Command;

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

wasmtime::component::bindgen!({ path: "../wit", world: "tools" });

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn plugin_wasm() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new(repo.join("scripts/build-plugin.sh")).output().expect("run scripts/build-plugin.sh");
    assert!(out.status.success(), "build-plugin.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A fresh instance with plugin-host style grants: each directory mounted
/// at its own host path.
fn instantiate(
    engine: &Engine,
    component: &Component,
    notes: &Path,
    index: &Path,
    config: &Path,
) -> (Store<State>, Tools) {
    let mut linker: Linker<State> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let mut wasi = WasiCtxBuilder::new();
    wasi.env("QMD_INDEX_DIR", index.to_str().unwrap()).env("QMD_CONFIG_DIR", config.to_str().unwrap());
    wasi.preopened_dir(notes, notes.to_str().unwrap(), FsPerms::ReadOnly).unwrap();
    for dir in [index, config] {
        wasi.preopened_dir(dir, dir.to_str().unwrap(), FsPerms::ReadWrite).unwrap();
    }
    let mut store = Store::new(engine, State { wasi: wasi.build(), table: ResourceTable::new() });
    let tools = Tools::instantiate(&mut store, component, &linker).expect("instantiate with WASI only");
    (store, tools)
}

#[test]
fn plugin_component_runs_with_wasi_only() {
    let wasm = plugin_wasm();
    let tmp = tempfile::tempdir().unwrap();
    let (notes, index, config) = (tmp.path().join("notes"), tmp.path().join("index"), tmp.path().join("config"));
    for dir in [&notes, &index, &config] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(notes.join("cap.md"), "# CAP theorem\n\nConsistency and availability.\n").unwrap();

    let engine = Engine::new(&Config::new()).unwrap();
    let component = Component::from_file(&engine, &wasm).unwrap();
    let (mut store, tools) = instantiate(&engine, &component, &notes, &index, &config);
    let added = tools.call_collection_add(&mut store, notes.to_str().unwrap(), Some("notes"), None).unwrap().unwrap();
    assert_eq!(added.name, "notes");
    let report = tools.call_update(&mut store, &[]).unwrap().unwrap();
    assert_eq!(report.collections[0].added, 1);
    assert!(index.join("manifest.json").is_file(), "the index went to the granted directory");

    let (mut store, tools) = instantiate(&engine, &component, &notes, &index, &config);
    let status = tools.call_status(&mut store).unwrap().unwrap();
    assert_eq!(status.total_documents, 1);
    let request = qmd::engine::types::GetRequest {
        file: "notes/cap.md".into(),
        from_line: None,
        max_lines: None,
        line_numbers: true,
    };
    let doc = tools.call_get(&mut store, &request).unwrap().unwrap();
    assert!(doc.body.starts_with("1: # CAP theorem"), "{}", doc.body);
    let escape = qmd::engine::types::GetRequest { file: "qmd://notes/../../etc/passwd".into(), ..request };
    assert!(tools.call_get(&mut store, &escape).unwrap().is_err());
}
