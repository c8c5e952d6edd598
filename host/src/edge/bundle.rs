//! `qmd edge build --bundle`: the build pre-initialised. `wasmtime wizer`
//! instantiates the component with the build's folders mounted, calls its
//! `wizer-initialize` export (which reads the index and config into memory
//! and loads the models) and snapshots its memory into a new component.
//! That one file is the whole deployment: it serves with no folders, and
//! every fresh instance starts with the models loaded.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::{COMPONENT_FILE, MOUNTS};
use crate::files::{OwnedDir, shown};

/// What wasmtime's wizer may copy out of the instance in one host call
/// (its default is far below a snapshot holding a model): all of a 32-bit
/// memory.
const SNAPSHOT_FUEL: u64 = u32::MAX as u64;

/// Replaces the build's component with its pre-initialised snapshot and
/// removes the folders the snapshot now holds.
pub fn preinitialize(wasmtime: &Path, out: &OwnedDir) -> Result<()> {
    let dir = out.path();
    let partial = format!("{COMPONENT_FILE}.{}.partial", std::process::id());
    // Listed before wizer writes it, and nothing (no planted link) there.
    out.reserve(&partial)?;
    let mut command = Command::new(wasmtime);
    command.current_dir(dir).args(["wizer", "-Scli", "-Shttp", &format!("-Shostcall-fuel={SNAPSHOT_FUEL}")]);
    // wasmtime 48's wizer drops the init function from the core instance
    // while the component still exports it; keeping it keeps the output valid.
    command.arg("--keep-init-func=true");
    for (host, guest) in MOUNTS {
        command.args(["--dir", &format!("{host}::{guest}")]);
    }
    command.args([COMPONENT_FILE, "-o", &partial]);
    let output = command.output().with_context(|| {
        format!("cannot run {} (install wasmtime-cli 48, or name it with --wasmtime)", shown(wasmtime))
    })?;
    if !output.status.success() {
        let _ = out.remove(&partial);
        bail!(
            "pre-initialising the component failed ({}):\n{}",
            shown(wasmtime),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    out.rename(&partial, COMPONENT_FILE)?;
    // The snapshot holds them now: the files this build wrote there go.
    out.remove_all(MOUNTS.iter().map(|(folder, _)| *folder))?;
    Ok(())
}

/// `wasmtime` on `PATH`.
pub fn wasmtime_on_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("wasmtime")).find(|candidate| candidate.is_file())
}
