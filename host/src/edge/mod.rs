//! `qmd edge build`: everything a `wasi:http` platform needs to serve an
//! index as qmd's HTTP API: the edge component (built into this binary,
//! as the engine is), a read-only snapshot of the index and its config,
//! and the models its vectors need, in one folder; and the `wasmtime
//! serve` command that serves it.

mod bundle;
mod snapshot;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::args::EdgeBuildArgs;
use crate::files::{OwnedDir, Owner, shown};
use crate::session::Session;

/// The edge component (`qmd-core --features edge` for `wasm32-wasip2`).
static EDGE_COMPONENT: &[u8] = include_bytes!(env!("QMD_EDGE_PATH"));

/// The component's name in the output folder.
pub const COMPONENT_FILE: &str = "qmd-edge.wasm";

/// The folders of a build and where the component finds them (its
/// defaults, so the command needs no environment).
pub const MOUNTS: [(&str, &str); 3] =
    [("index", "/.qmd/index"), ("config", "/.qmd/config"), ("models", "/.qmd/models")];

/// How many requests one instance serves in turn before `wasmtime serve`
/// makes a new one. Its default for a WASIp2 component is 1 (an instance
/// per request, as edge platforms do); reuse keeps a loaded model and the
/// index's read sections (`bench/edge-results.md`), and is safe here: the
/// component keeps no per-request state and re-reads the manifest on every
/// request.
pub const INSTANCE_REUSE: u32 = 1000;

/// What `wasmtime serve` needs to serve a build, run from its folder:
/// `-Scli` for the WASI interfaces Rust's standard library imports (the
/// proxy world alone has no filesystem), and one `--dir` per mount unless
/// the build is pre-initialised (then it holds everything itself).
pub fn serve_command(bundled: bool) -> String {
    let dirs: Vec<String> = match bundled {
        true => Vec::new(),
        false => MOUNTS.iter().map(|(host, guest)| format!("--dir {host}::{guest} ")).collect(),
    };
    format!("wasmtime serve -Scli --max-instance-reuse-count {INSTANCE_REUSE} {}{COMPONENT_FILE}", dirs.concat())
}

pub fn build(session: &Session, args: EdgeBuildArgs) -> Result<()> {
    let out = PathBuf::from(&args.out);
    // Found before anything is written: a missing tool fails fast.
    let wasmtime = match (args.bundle, &args.wasmtime) {
        (false, _) => None,
        (true, Some(path)) => Some(PathBuf::from(path)),
        (true, None) => Some(bundle::wasmtime_on_path().ok_or_else(|| {
            anyhow::anyhow!("--bundle runs `wasmtime wizer`: install wasmtime-cli 48 or name it with --wasmtime")
        })?),
    };
    let owned = prepare(&out)?;
    let report = snapshot::write(session, &owned, &args)?;
    owned.write(COMPONENT_FILE, EDGE_COMPONENT)?;
    if let Some(wasmtime) = &wasmtime {
        eprintln!("Pre-initialising the component (index, config and models into its memory)...");
        bundle::preinitialize(wasmtime, &owned)?;
    }
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
    println!("{}", serve_command(args.bundle));
    Ok(())
}

/// Who owns an edge build's folder.
pub const OWNER: Owner = Owner { command: "qmd edge build", adopt_unmarked: false };

/// The output folder: new, empty, or an earlier build, proven by the
/// marker it wrote (see [`OwnedDir`]), whose parts are removed (only the
/// files it lists); a folder holding anything else is refused, not
/// overwritten.
fn prepare(out: &Path) -> Result<OwnedDir> {
    let owned = OwnedDir::open(out, Path::new(""), OWNER)?;
    let earlier = owned.listed();
    owned.remove_all(earlier.iter().map(String::as_str))?;
    Ok(owned)
}
