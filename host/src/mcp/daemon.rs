//! `qmd mcp --http --daemon` and `qmd mcp stop`: a detached server whose PID
//! is recorded in the cache directory (per index), with qmd's messages. A
//! recorded PID counts only while it is still a qmd process (PIDs get reused).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result};

use super::McpOptions;

pub struct DaemonFiles {
    pub pid: PathBuf,
    pub log: PathBuf,
}

impl DaemonFiles {
    /// `mcp.pid` / `mcp.log` for the default index, `mcp-<name>.*` otherwise.
    pub fn for_index(index_name: &str) -> DaemonFiles {
        let suffix =
            if index_name.is_empty() || index_name == "index" { String::new() } else { format!("-{index_name}") };
        let dir = crate::paths::cache_dir();
        DaemonFiles { pid: dir.join(format!("mcp{suffix}.pid")), log: dir.join(format!("mcp{suffix}.log")) }
    }

    fn recorded_pid(&self) -> Option<i32> {
        std::fs::read_to_string(&self.pid).ok()?.trim().parse().ok()
    }

    /// Removes the PID file if it names this process (a foreground server
    /// started by `--daemon` cleans up after itself).
    pub fn remove_if_owned(&self, pid: u32) {
        if self.recorded_pid().is_some_and(|p| p as u32 == pid) {
            let _ = std::fs::remove_file(&self.pid);
        }
    }
}

/// Whether `pid` is alive and its command line is a qmd invocation.
fn is_qmd_process(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let first = raw.split(|&b| b == 0).next().unwrap_or_default();
    let program = String::from_utf8_lossy(first);
    program.rsplit('/').next().is_some_and(|name| name == "qmd" || name.starts_with("qmd"))
}

pub fn start(files: &DaemonFiles, options: &McpOptions) -> Result<ExitCode> {
    if let Some(pid) = files.recorded_pid() {
        if is_qmd_process(pid) {
            eprintln!("Already running (PID {pid}). Run 'qmd mcp stop' first.");
            return Ok(ExitCode::FAILURE);
        }
        let _ = std::fs::remove_file(&files.pid);
    }
    if let Some(dir) = files.pid.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let log = std::fs::File::create(&files.log).with_context(|| format!("cannot write {}", files.log.display()))?;
    let exe = std::env::current_exe().context("cannot find the qmd executable")?;
    let mut args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--daemon").collect();
    if !args.iter().any(|a| a == "--port" || a.starts_with("--port=")) {
        args.extend(["--port".to_string(), options.port.to_string()]);
    }
    let mut command = Command::new(exe);
    command.args(&args).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    // A new session: the daemon outlives this terminal.
    unsafe_setsid(&mut command);
    let child = command.spawn().context("cannot start the MCP daemon")?;
    std::fs::write(&files.pid, child.id().to_string())
        .with_context(|| format!("cannot write {}", files.pid.display()))?;
    println!("Started on http://{}:{}/mcp (PID {})", options.host, options.port, child.id());
    println!("Logs: {}", files.log.display());
    Ok(ExitCode::SUCCESS)
}

fn unsafe_setsid(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

pub fn stop(files: &DaemonFiles) -> Result<ExitCode> {
    let Some(pid) = files.recorded_pid() else {
        if files.pid.exists() {
            let _ = std::fs::remove_file(&files.pid);
            println!("Cleaned up stale PID file (server was not running).");
        } else {
            println!("Not running (no PID file).");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let _ = std::fs::remove_file(&files.pid);
    // SAFETY: plain syscall on a PID we just checked is a qmd process.
    if is_qmd_process(pid) && unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
        println!("Stopped QMD MCP server (PID {pid}).");
    } else {
        println!("Cleaned up stale PID file (server was not running).");
    }
    Ok(ExitCode::SUCCESS)
}
