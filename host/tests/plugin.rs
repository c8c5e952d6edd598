//! The plugin builds of the engine load with nothing but WASI, as a host
//! that maps exports to MCP tools would load them: read-only grant on the
//! notes, the index read-write (world `tools`, which indexes) or read-only
//! (world `mcp`, qmd's four tools), mount points moved by environment
//! variables. What the grants leave out, the host refuses.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod tools_world {
    wasmtime::component::bindgen!({ path: "../wit", world: "tools" });
}
mod mcp_world {
    // The tools take their parameters one by one, as an agent gives them.
    #![allow(clippy::too_many_arguments)]
    wasmtime::component::bindgen!({ path: "../wit", world: "mcp" });
}

use mcp_world::Mcp;
use tools_world::Tools;
use tools_world::qmd::engine::types::GetRequest;

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn plugin_wasm(world: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new(repo.join("scripts/build-plugin.sh")).arg(world).output().expect("run build-plugin.sh");
    assert!(out.status.success(), "build-plugin.sh {world} failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// One engine for every test: a component compiled once (cranelift takes
/// most of this file's time) serves every store of that engine.
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(&Config::new()).unwrap())
}

/// The plugin build of `world`, built and compiled once per run.
fn component(world: &str) -> &'static Component {
    static TOOLS: OnceLock<Component> = OnceLock::new();
    static MCP: OnceLock<Component> = OnceLock::new();
    let cell = match world {
        "tools" => &TOOLS,
        "mcp" => &MCP,
        other => panic!("no plugin world {other}"),
    };
    cell.get_or_init(|| Component::from_file(engine(), plugin_wasm(world)).unwrap())
}

struct Folders {
    _tmp: tempfile::TempDir,
    notes: PathBuf,
    index: PathBuf,
    config: PathBuf,
}

fn folders() -> Folders {
    let tmp = tempfile::tempdir().unwrap();
    let (notes, index, config) = (tmp.path().join("notes"), tmp.path().join("index"), tmp.path().join("config"));
    for dir in [&notes, &index, &config] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(notes.join("cap.md"), "# CAP theorem\n\nConsistency and availability.\n").unwrap();
    std::fs::write(notes.join("raft.md"), "# Raft\n\nLeader election.\n").unwrap();
    Folders { _tmp: tmp, notes, index, config }
}

/// A store with plugin-host style grants: each directory mounted at its
/// own host path, the index and config with `perms`.
fn store(engine: &Engine, f: &Folders, perms: FsPerms) -> (Store<State>, Linker<State>) {
    let mut linker: Linker<State> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let mut wasi = WasiCtxBuilder::new();
    wasi.env("QMD_INDEX_DIR", f.index.to_str().unwrap()).env("QMD_CONFIG_DIR", f.config.to_str().unwrap());
    wasi.preopened_dir(&f.notes, f.notes.to_str().unwrap(), FsPerms::ReadOnly).unwrap();
    for dir in [&f.index, &f.config] {
        wasi.preopened_dir(dir, dir.to_str().unwrap(), perms).unwrap();
    }
    (Store::new(engine, State { wasi: wasi.build(), table: ResourceTable::new() }), linker)
}

fn tools(engine: &Engine, component: &Component, f: &Folders, perms: FsPerms) -> (Store<State>, Tools) {
    let (mut store, linker) = store(engine, f, perms);
    let tools = Tools::instantiate(&mut store, component, &linker).expect("instantiate with WASI only");
    (store, tools)
}

/// Notes indexed through the `tools` build.
fn indexed() -> Folders {
    let f = folders();
    let (mut store, tools) = tools(engine(), component("tools"), &f, FsPerms::ReadWrite);
    let added = tools.call_collection_add(&mut store, f.notes.to_str().unwrap(), Some("notes"), None).unwrap().unwrap();
    assert_eq!(added.name, "notes");
    let report = tools.call_update(&mut store, &[]).unwrap().unwrap();
    assert_eq!(report.collections[0].added, 2);
    assert!(f.index.join("manifest.json").is_file(), "the index went to the granted directory");
    f
}

#[test]
fn tools_component_runs_with_wasi_only() {
    let (engine, component) = (engine(), component("tools"));
    let f = indexed();
    let (mut store, tools) = tools(engine, component, &f, FsPerms::ReadWrite);
    let status = tools.call_status(&mut store).unwrap().unwrap();
    assert_eq!(status.total_documents, 2);
    let request = GetRequest { file: "notes/cap.md".into(), from_line: None, max_lines: None, line_numbers: true };
    let doc = tools.call_get(&mut store, &request).unwrap().unwrap();
    assert!(doc.body.starts_with("1: # CAP theorem"), "{}", doc.body);
    let escape = GetRequest { file: "qmd://notes/../../etc/passwd".into(), ..request };
    assert!(tools.call_get(&mut store, &escape).unwrap().is_err());
}

#[test]
fn the_host_refuses_what_the_grants_leave_out() {
    let (engine, component) = (engine(), component("tools"));
    let f = indexed();
    let manifest = std::fs::read(f.index.join("manifest.json")).unwrap();
    // A read-only grant: the engine tries to write, the host says no.
    std::fs::write(f.notes.join("new.md"), "# New\n").unwrap();
    let (mut store, tools) = tools(engine, component, &f, FsPerms::ReadOnly);
    let refused = tools.call_update(&mut store, &[]).unwrap().expect_err("a write through a read-only grant");
    assert!(
        refused.message.to_lowercase().contains("permission") || refused.message.contains("read-only"),
        "{}",
        refused.message
    );
    assert_eq!(std::fs::read(f.index.join("manifest.json")).unwrap(), manifest, "the index is untouched");
    // A folder never granted does not exist for the component: named as a
    // collection, it cannot be listed, and nothing of it is indexed.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Secret\n").unwrap();
    let (mut store, tools) = self::tools(engine, component, &f, FsPerms::ReadWrite);
    let path = outside.path().to_str().unwrap();
    if tools.call_collection_add(&mut store, path, Some("outside"), None).unwrap().is_ok() {
        let report = tools.call_update(&mut store, &[]).unwrap().unwrap();
        let scanned = report.collections.iter().find(|c| c.name == "outside").unwrap();
        assert!(scanned.error.is_some() && scanned.added == 0, "{:?}", scanned.error);
    }
    let secret = GetRequest { file: "outside/secret.md".into(), from_line: None, max_lines: None, line_numbers: false };
    assert!(tools.call_get(&mut store, &secret).unwrap().is_err());
}

#[test]
fn mcp_component_exports_qmds_four_tools() {
    let (engine, component) = (engine(), component("mcp"));
    let f = indexed();
    let mut exports: Vec<String> = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .filter(|name| !name.starts_with("wasi:"))
        .collect();
    exports.sort();
    assert_eq!(exports, ["get", "multi-get", "query", "status"]);

    // Everything it needs granted read-only.
    let (mut store, linker) = store(engine, &f, FsPerms::ReadOnly);
    let mcp = Mcp::instantiate(&mut store, component, &linker).expect("instantiate with WASI only");
    let lex = mcp_world::qmd::engine::types::TypedSearch {
        kind: mcp_world::qmd::engine::types::SearchType::Lex,
        query: "consistency".into(),
    };
    let hits = mcp.call_query(&mut store, None, std::slice::from_ref(&lex), &[], None, None, None).unwrap().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].collection.as_str(), hits[0].path.as_str()), ("notes", "cap.md"));
    let plain = mcp.call_query(&mut store, Some("leader election"), &[], &[], Some(5), None, None).unwrap().unwrap();
    assert_eq!(plain[0].path, "raft.md");
    let both = mcp.call_query(&mut store, Some("x"), &[lex], &[], None, None, None).unwrap().unwrap_err();
    assert!(both.message.contains("mutually exclusive"), "{}", both.message);
    let neither = mcp.call_query(&mut store, None, &[], &[], None, None, None).unwrap().unwrap_err();
    assert!(neither.message.contains("provide either"), "{}", neither.message);

    let doc = mcp.call_get(&mut store, "notes/cap.md:3", None, None, None).unwrap().unwrap();
    assert_eq!(doc.body, "3: Consistency and availability.\n4: ");
    let raw = mcp.call_get(&mut store, &format!("#{}", doc.docid), None, Some(1), Some(false)).unwrap().unwrap();
    assert_eq!(raw.body, "# CAP theorem");
    assert!(mcp.call_get(&mut store, "qmd://notes/../../etc/passwd", None, None, None).unwrap().is_err());
    assert!(mcp.call_get(&mut store, "/etc/passwd", None, None, None).unwrap().is_err());

    let many = mcp.call_multi_get(&mut store, "notes/*.md", None, Some(10), None).unwrap().unwrap();
    assert_eq!(many.entries.len(), 2);
    assert!(many.entries.iter().all(|e| e.skipped.as_deref().is_some_and(|s| s.starts_with("File too large"))));
    let status = mcp.call_status(&mut store).unwrap().unwrap();
    assert_eq!(status.total_documents, 2);
}
