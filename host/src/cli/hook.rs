//! A collection's `update:` command, run before its scan as qmd runs it:
//! `bash -c <command>` in the collection folder, its output echoed
//! indented by four spaces, a failure ending the whole `update`.

use std::path::Path;
use std::process::{Command, Stdio};

use qmd_core::display::escape_controls;

/// Runs `command` in `dir`. `None` when it succeeded; otherwise the exit
/// code `update` must end with (after qmd's message).
pub fn run(command: &str, dir: &Path) -> Option<u8> {
    println!("    Running update command: {}", escape_controls(command));
    let output = Command::new("bash").arg("-c").arg(command).current_dir(dir).stdin(Stdio::null()).output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            println!("✗ Update command failed: {e} (in {})", escape_controls(&dir.to_string_lossy()));
            return Some(1);
        }
    };
    for stream in [&output.stdout, &output.stderr] {
        let text = String::from_utf8_lossy(stream);
        let text = text.trim();
        if !text.is_empty() {
            println!("{}", text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n"));
        }
    }
    if output.status.success() {
        return None;
    }
    // Killed by a signal: no code; 1 as qmd's `code ?? 1`.
    let code = output.status.code().unwrap_or(1);
    println!("✗ Update command failed with exit code {code}");
    Some(u8::try_from(code).ok().filter(|&c| c != 0).unwrap_or(1))
}
