//! `qmd mcp --http --daemon` and `qmd mcp stop`: a detached server whose PID
//! is recorded in the cache directory (per index), with qmd's messages. A
//! recorded PID counts only while it is still a qmd process (PIDs get reused).
//!
//! The starting command waits for the server to listen (or fail) before it
//! says "Started": the server reports through a pipe whose write end it
//! inherits ([`READY_FD_ENV`] names its descriptor), writing `ready <port>`
//! once bound or `error <message>` when it cannot serve. A server that dies
//! without a word closes the pipe, which the starter sees as end of file.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

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
        let bytes = crate::files::regular::read(&self.pid, 64).ok()?;
        std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
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
    // Neither file is written through a link or opened if it is a FIFO (no
    // reader: the open would never return); the PID file is ready before
    // the server starts, so a server never runs unrecorded.
    let log =
        crate::files::regular::create(&files.log).with_context(|| format!("cannot write {}", files.log.display()))?;
    let mut pid_file =
        crate::files::regular::create(&files.pid).with_context(|| format!("cannot write {}", files.pid.display()))?;
    let exe = std::env::current_exe().context("cannot find the qmd executable")?;
    let mut args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--daemon").collect();
    if !args.iter().any(|a| a == "--port" || a.starts_with("--port=")) {
        args.extend(["--port".to_string(), options.port.to_string()]);
    }
    let (ready_read, ready_write) = pipe()?;
    let mut command = Command::new(exe);
    command
        .args(&args)
        .env(READY_FD_ENV, ready_write.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    prepare_child(&mut command, ready_write.as_raw_fd());
    let mut child = command.spawn().context("cannot start the MCP daemon")?;
    // Only the server may hold the write end now: its exit closes the pipe.
    drop(ready_write);
    let pid = child.id();
    pid_file.write_all(pid.to_string().as_bytes()).with_context(|| format!("cannot write {}", files.pid.display()))?;
    drop(pid_file);
    let address = format!("{}:{}", options.host, options.port);
    match wait_ready(ready_read, READY_TIMEOUT) {
        Ok(port) => {
            println!("Started on http://{}:{port}/mcp (PID {pid})", options.host);
            println!("Logs: {}", files.log.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(reason) => {
            if matches!(child.try_wait(), Ok(None)) {
                // Still starting after the timeout: give up on it.
                let _ = child.kill();
            }
            let _ = child.wait();
            files.remove_if_owned(pid);
            eprintln!("Failed to start the MCP server on {address}: {reason}");
            eprintln!("Logs: {}", files.log.display());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The environment variable that hands the server the readiness pipe.
pub const READY_FD_ENV: &str = "QMD_MCP_READY_FD";

/// How long the server may take to load its index and bind.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A pipe whose ends close on exec (the child's end is kept open for it in
/// [`prepare_child`]).
fn pipe() -> Result<(std::fs::File, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for the MCP daemon");
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A new session (the daemon outlives this terminal), and the readiness
/// pipe's write end kept open across exec.
fn prepare_child(command: &mut Command, ready_fd: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid and fcntl are async-signal-safe and touch no memory of ours.
    unsafe {
        command.pre_exec(move || {
            libc::setsid();
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The port the server reports, or why it is not serving.
fn wait_ready(mut pipe: std::fs::File, timeout: Duration) -> Result<u16, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        // Ends at `ready`/`error` (the server closes its end) or at its exit.
        let _ = pipe.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let text = rx.recv_timeout(timeout).map_err(|_| format!("no answer within {} s", timeout.as_secs()))?;
    let text = text.trim();
    if let Some(port) = text.strip_prefix("ready ").and_then(|p| p.trim().parse().ok()) {
        return Ok(port);
    }
    Err(match text.strip_prefix("error ") {
        Some(message) => message.to_string(),
        None => "the server exited before it was listening".to_string(),
    })
}

/// The server's end of the readiness pipe, when a starting `--daemon`
/// waits on it (taken from the environment once).
pub struct ReadyPipe(Option<std::fs::File>);

impl ReadyPipe {
    pub fn from_env() -> ReadyPipe {
        let fd = std::env::var(READY_FD_ENV).ok().and_then(|v| v.parse::<i32>().ok()).filter(|&fd| fd > 2);
        // SAFETY: fcntl on a descriptor number only fails if it is not open;
        // an open one was inherited for us (close-on-exec from now on).
        let file = fd.filter(|&fd| unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == 0).map(|fd| {
            // SAFETY: the descriptor is open and nothing else in this process owns it.
            unsafe { std::fs::File::from_raw_fd(fd) }
        });
        ReadyPipe(file)
    }

    /// Tells the starter the server listens on `port`.
    pub fn ready(&mut self, port: u16) {
        self.send(&format!("ready {port}\n"));
    }

    /// Tells the starter why the server is not serving.
    pub fn failed(&mut self, error: &anyhow::Error) {
        self.send(&format!("error {error:#}\n"));
    }

    fn send(&mut self, line: &str) {
        if let Some(mut file) = self.0.take() {
            let _ = file.write_all(line.as_bytes());
        }
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
