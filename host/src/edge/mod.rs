//! `qmd edge build`: everything a `wasi:http` platform needs to serve an
//! index as qmd's HTTP API: the edge component (built into this binary,
//! as the engine is), a read-only snapshot of the index and its config,
//! and the models its vectors need, in one folder; and the `wasmtime
//! serve` command that serves it.

mod snapshot;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cli::args::EdgeBuildArgs;
use crate::files::{OwnedDir, shown};
use crate::session::Session;

/// The edge component (`qmd-core --features edge` for `wasm32-wasip2`).
static EDGE_COMPONENT: &[u8] = include_bytes!(env!("QMD_EDGE_PATH"));

/// The component's name in the output folder.
pub const COMPONENT_FILE: &str = "qmd-edge.wasm";

/// The folders of a build and where the component finds them (its
/// defaults, so the command needs no environment).
pub const MOUNTS: [(&str, &str); 3] =
    [("index", "/.qmd/index"), ("config", "/.qmd/config"), ("models", "/.qmd/models")];

/// What `wasmtime serve` needs to serve a build, run from its folder:
/// `-Scli` for the filesystem, one `--dir` per mount.
pub fn serve_command() -> String {
    let dirs: Vec<String> = MOUNTS.iter().map(|(host, guest)| format!("--dir {host}::{guest}")).collect();
    format!("wasmtime serve -Scli {} {COMPONENT_FILE}", dirs.join(" "))
}

pub fn build(session: &Session, args: EdgeBuildArgs) -> Result<()> {
    let out = PathBuf::from(&args.out);
    let owned = prepare(&out)?;
    let report = snapshot::write(session, &owned, &args)?;
    owned.write(COMPONENT_FILE, EDGE_COMPONENT)?;
    eprintln!(
        "Wrote {}: {} documents in {} collection{}, {} vectors{}.",
        shown(&out),
        report.documents,
        report.collections,
        if report.collections == 1 { "" } else { "s" },
        report.vectors,
        match &report.models[..] {
            [] => String::new(),
            models => format!(", models: {}", models.join(", ")),
        }
    );
    eprintln!("Serve it (run from {}):", shown(&out));
    println!("{}", serve_command());
    Ok(())
}

/// The output folder: new, empty, or an earlier build (whose parts are
/// replaced); a folder holding anything else is refused, not overwritten.
fn prepare(out: &Path) -> Result<OwnedDir> {
    match std::fs::read_dir(out) {
        Ok(entries) => {
            let names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            if !names.is_empty() && !names.iter().any(|n| n == COMPONENT_FILE) {
                bail!("{} is not empty and holds no earlier edge build; choose a new folder", shown(out));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown(out))),
    }
    let owned = OwnedDir::open(out, Path::new(""))?;
    for part in std::iter::once(COMPONENT_FILE).chain(MOUNTS.iter().map(|(dir, _)| *dir)) {
        owned.remove(part)?;
    }
    Ok(owned)
}
