//! `qmd`: the command line over the engine component.

// The wgpu types inside the models nest deeper than the default limit
// when the compiler proves `Models` is Sync.
#![recursion_limit = "256"]

mod cli;
mod clock;
mod component;
mod edge;
mod files;
mod lock;
mod mcp;
mod models;
mod openai;
mod paths;
mod session;
mod site;
mod skill;
mod trust;
mod watch;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_gpu_drivers();
    if let Err(error) = models::apply_kernel_cap() {
        eprintln!("{}", qmd_core::display::escape_controls_in_text(&error));
        return ExitCode::FAILURE;
    }
    match cli::run() {
        Ok(code) => code,
        Err(error) => {
            // A closed pipe (`qmd search x | head`) is not a failure.
            if error.chain().any(|e| {
                e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // Errors quote what the user or a file gave (names, paths):
            // shown, never obeyed, by the terminal.
            eprintln!("{}", qmd_core::display::escape_controls_in_text(&format!("{error:#}")));
            ExitCode::FAILURE
        }
    }
}

/// Mesa's Vulkan drivers print "error: XDG_RUNTIME_DIR is invalid or not
/// set" on every device open where it is unset (ssh sessions, containers,
/// cron). A private runtime folder keeps that noise off the user's
/// terminal. Set here, first thing, while the process has one thread.
#[cfg(target_os = "linux")]
fn quiet_gpu_drivers() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| !d.is_empty()) {
        return;
    }
    use std::os::unix::fs::DirBuilderExt;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = std::env::temp_dir().join(format!("qmd-runtime-{uid}"));
    let private = std::fs::DirBuilder::new().mode(0o700).create(&dir).is_ok()
        || std::fs::symlink_metadata(&dir).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0
        });
    if private {
        // SAFETY: no other thread exists yet (this runs first in main).
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir) };
    }
}

#[cfg(not(target_os = "linux"))]
fn quiet_gpu_drivers() {}
