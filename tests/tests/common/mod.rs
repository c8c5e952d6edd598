//! Shared harness of the end-to-end CLI tests: runs the built `qmd` binary
//! in an isolated environment (its own XDG cache/config dirs and `HOME` in a
//! temporary directory), and reads the upstream recordings under
//! `tests/fixtures/peer/out/`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// What one `qmd` run printed, and its exit code (-1 when killed by a signal).
#[derive(Debug, Clone)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Output {
        Output {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }
}

impl Output {
    /// Panics with the whole output unless the command exited 0.
    #[track_caller]
    pub fn success(self) -> Output {
        assert_eq!(self.code, 0, "expected success\n--- stdout ---\n{}--- stderr ---\n{}", self.stdout, self.stderr);
        self
    }

    /// `Indexed: a new, b updated, c unchanged, d removed` (update's
    /// summary line) as numbers.
    #[track_caller]
    pub fn indexed(&self) -> [u32; 4] {
        let line =
            self.stdout.lines().find(|l| l.starts_with("Indexed: ")).unwrap_or_else(|| panic!("{}", self.stdout));
        let numbers: Vec<u32> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        numbers.try_into().unwrap_or_else(|_| panic!("{line}"))
    }

    /// Panics with the whole output if the command exited 0.
    #[track_caller]
    pub fn failure(self) -> Output {
        assert_ne!(self.code, 0, "expected failure\n--- stdout ---\n{}--- stderr ---\n{}", self.stdout, self.stderr);
        self
    }
}

/// The `qmd` binary ([`qmd_tests::bench::qmd_bin`]), which must be built.
pub fn qmd_bin() -> PathBuf {
    let bin = qmd_tests::bench::qmd_bin();
    assert!(bin.is_file(), "{} not found: build it first (bash scripts/qmd-bin.sh) or set QMD_BIN", bin.display());
    bin
}

/// The repository's `tests/` folder.
pub fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn peer_dir() -> PathBuf {
    tests_dir().join("fixtures/peer")
}

/// A folder holding the precompiled engine component for this `qmd`
/// binary. Compiling it takes seconds; each test environment links it into
/// its own cache instead of compiling it again.
fn component_cache() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("qmd-cli-tests-warm");
        let components = root.join("cache/qmd/components");
        // Files older than the binary may be for another build: drop them.
        let built = fs::metadata(qmd_bin()).and_then(|m| m.modified()).ok();
        if let (Ok(entries), Some(built)) = (fs::read_dir(&components), built) {
            for entry in entries.flatten() {
                let stale = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < built);
                if stale {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        let out = Command::new(qmd_bin())
            .arg("status")
            .env_remove("INDEX_PATH")
            .env_remove("QMD_CONFIG_DIR")
            .env("HOME", &root)
            .env("XDG_CACHE_HOME", root.join("cache"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("NO_COLOR", "1")
            .output()
            .expect("run qmd status");
        assert!(out.status.success(), "warming up qmd failed: {}", String::from_utf8_lossy(&out.stderr));
        components
    })
}

/// An isolated qmd environment in a temporary directory, removed on drop.
pub struct Env {
    dir: TempDir,
    root: PathBuf,
}

impl Default for Env {
    fn default() -> Self {
        Self::new()
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::Builder::new().prefix("qmd-cli-test.").tempdir().expect("tempdir");
        // Collection paths are stored canonicalized; compare against that.
        let root = fs::canonicalize(dir.path()).expect("canonicalize tempdir");
        // qmd adopts a `.qmd/index.yml` found above the working directory:
        // one above the temp dir would take every test's index.
        if let Some(stray) = root
            .ancestors()
            .skip(1)
            .map(|d| d.join(".qmd"))
            .find(|d| d.join("index.yml").is_file() || d.join("index.yaml").is_file())
        {
            panic!(
                "{} holds a project-local qmd config above the test folders; move it or set TMPDIR elsewhere",
                stray.display()
            );
        }
        let env = Env { dir, root };
        let target = env.cache_home().join("qmd/components");
        fs::create_dir_all(&target).expect("create component cache");
        if let Ok(entries) = fs::read_dir(component_cache()) {
            for entry in entries.flatten() {
                let to = target.join(entry.file_name());
                if fs::hard_link(entry.path(), &to).is_err() {
                    let _ = fs::copy(entry.path(), &to);
                }
            }
        }
        env
    }

    /// The temporary directory (canonical); also `HOME` and the working directory.
    pub fn root(&self) -> &Path {
        let _ = &self.dir;
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `root/rel` as a string, for command lines.
    pub fn arg(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }

    pub fn cache_home(&self) -> PathBuf {
        self.root.join("xdg-cache")
    }

    pub fn config_home(&self) -> PathBuf {
        self.root.join("xdg-config")
    }

    /// Runs `qmd args…` in the root directory.
    pub fn qmd(&self, args: &[&str]) -> Output {
        self.qmd_in(&self.root, args)
    }

    /// Runs `qmd args…` in `cwd`.
    pub fn qmd_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.qmd_with(cwd, args, &[])
    }

    /// The `qmd` command as the tests run it, not yet started.
    pub fn command(&self, cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Command {
        let mut command = Command::new(qmd_bin());
        command
            .args(args)
            .current_dir(cwd)
            .env_remove("INDEX_PATH")
            .env_remove("QMD_CONFIG_DIR")
            .env("HOME", &self.root)
            .env("XDG_CACHE_HOME", self.cache_home())
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("NO_COLOR", "1")
            .envs(envs.iter().copied());
        command
    }

    /// Runs `qmd args…` in `cwd` with extra environment variables.
    pub fn qmd_with(&self, cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
        self.command(cwd, args, envs).output().expect("run qmd").into()
    }

    /// What `qmd status` (with `envs`) says of the vectors: its `Vectors:`
    /// line's value (`3 embedded`, …).
    #[track_caller]
    pub fn vectors(&self, envs: &[(&str, &str)]) -> String {
        let status = self.qmd_with(self.root(), &["status"], envs).success().stdout;
        let line = status.lines().find_map(|l| l.trim().strip_prefix("Vectors:"));
        line.unwrap_or_else(|| panic!("no Vectors line in the status:\n{status}")).trim().to_string()
    }

    /// Runs `qmd args…` and requires exit 0.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.qmd(args);
        assert_eq!(out.code, 0, "qmd {args:?} failed\n--- stdout ---\n{}--- stderr ---\n{}", out.stdout, out.stderr);
        out
    }

    /// Copies the fixture corpus `name` (`notes`, `myproject`) to `root/name`.
    pub fn copy_corpus(&self, name: &str) -> PathBuf {
        let to = self.path(name);
        copy_dir(&peer_dir().join("corpus").join(name), &to);
        to
    }

    /// Writes `root/rel`, creating parent folders.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        fs::write(&path, text).expect("write file");
        path
    }

    /// The setup the upstream recordings were made with. (The recordings show
    /// `myproject` was added first: its `collection add` reports 7 hashes to
    /// embed, the one of `notes` 11; listings follow that order.)
    pub fn peer() -> Env {
        let env = Env::new();
        env.copy_corpus("notes");
        env.copy_corpus("myproject");
        env.ok(&["collection", "add", &env.arg("myproject"), "--name", "myproject", "--mask", "**/*.{md,ts,json}"]);
        env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
        env.ok(&["context", "add", "qmd://myproject/src", "Source code for error utilities"]);
        env.ok(&["context", "add", "/", "Personal knowledge base"]);
        env.ok(&["context", "add", "qmd://notes/journals", "Daily journals"]);
        env
    }

    /// `text` with the recording machine's fixture directory replaced by this root.
    pub fn localize(&self, text: &str) -> String {
        text.replace(PEER_ROOT, &format!("{}/", self.root.display()))
    }

    /// Runs the command of a recording (`$ qmd …`, shell-quoted), with the
    /// recording machine's fixture directory replaced by this root.
    pub fn run_recorded(&self, rec: &Recording) -> Output {
        self.run_recorded_in(&self.root, rec)
    }

    /// [`run_recorded`](Self::run_recorded) in `cwd`.
    pub fn run_recorded_in(&self, cwd: &Path, rec: &Recording) -> Output {
        let args: Vec<String> = rec.args().iter().map(|a| self.localize(a)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.qmd_in(cwd, &args)
    }
}

/// Where the corpus lay when the recordings were made (`$root/notes`, …).
pub const PEER_ROOT: &str = "/tmp/peer/fixtures/";

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create dir");
    for entry in fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy fixture");
        }
    }
}

/// One upstream recording: `$ command`, stdout, `--- stderr ---`, stderr,
/// `--- exit N ---`.
#[derive(Debug, Clone)]
pub struct Recording {
    pub name: String,
    pub command: String,
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Recording {
    pub fn load(name: &str) -> Recording {
        let path = peer_dir().join("out").join(name);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (first, rest) = text.split_once('\n').expect("command line");
        let command = first.strip_prefix("$ ").expect("`$ ` command line").to_string();
        let (stdout, rest) = split_at_marker(rest, "--- stderr ---\n").expect("stderr marker");
        let exit_at = rest.rfind("--- exit ").expect("exit marker");
        let (stderr, exit) = rest.split_at(exit_at);
        let code = exit
            .trim()
            .strip_prefix("--- exit ")
            .and_then(|s| s.strip_suffix(" ---"))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name}: bad exit line {exit:?}"));
        Recording { name: name.to_string(), command, stdout: stdout.to_string(), stderr: stderr.to_string(), code }
    }

    /// The command's arguments after `qmd`.
    pub fn args(&self) -> Vec<String> {
        let words = shell_words(&self.command);
        assert_eq!(words.first().map(String::as_str), Some("qmd"), "{}: {}", self.name, self.command);
        words[1..].to_vec()
    }
}

/// Splits `text` before a line equal to `marker` (which ends in `\n`).
fn split_at_marker<'a>(text: &'a str, marker: &str) -> Option<(&'a str, &'a str)> {
    if let Some(rest) = text.strip_prefix(marker) {
        return Some(("", rest));
    }
    let at = text.find(&format!("\n{marker}"))? + 1;
    Some((&text[..at], &text[at + marker.len()..]))
}

/// Names of the recordings whose file name starts with `prefix`, sorted.
pub fn recordings(prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(peer_dir().join("out"))
        .expect("read recordings")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".txt"))
        .collect();
    names.sort();
    names
}

/// A POSIX-shell-like split: whitespace, '…', "…" (with \" \\ \$ escapes)
/// and backslash escapes; enough for the recorded command lines.
pub fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('"' | '\\' | '$' | '`')) => word.push(n),
                            Some(n) => {
                                word.push('\\');
                                word.push(n);
                            }
                            None => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Replaces every line starting with `prefix` by `prefix` alone (masks
/// times such as `  Updated:  4s ago`).
pub fn mask_lines(text: &str, prefix: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| if line.starts_with(prefix) { format!("{prefix}<masked>\n") } else { line.to_string() })
        .collect()
}

/// The first `#xxxxxx` docid (6 lowercase hex digits) in `text`.
pub fn first_docid(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|i| {
        let id = bytes.get(i + 1..i + 7)?;
        let hex = id.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
        let end_ok = bytes.get(i + 7).is_none_or(|b| !b.is_ascii_alphanumeric());
        (bytes[i] == b'#' && hex && end_ok).then(|| String::from_utf8_lossy(id).into_owned())
    })
}

/// Counts of each distinct item, to compare lists as multisets.
pub fn multiset<T: Ord + Clone>(items: &[T]) -> BTreeMap<T, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item.clone()).or_insert(0) += 1;
    }
    counts
}

/// A child process killed (and reaped) when dropped: a test's server.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Env {
    /// `qmd mcp --http` on a free loopback port with `envs`, and that port,
    /// once the server says it listens. Its stderr is read for the
    /// server's whole life: a closed pipe would fail its request logs.
    pub fn serve_http(&self, envs: &[(&str, &str)]) -> (Server, u16) {
        let mut child = self
            .command(self.root(), &["mcp", "--http", "--port", "0", "--host", "127.0.0.1"], envs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start qmd mcp --http");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let server = Server(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            let port = line
                .strip_prefix("QMD MCP server listening on http://127.0.0.1:")
                .and_then(|r| r.split('/').next()?.parse().ok());
            if let Some(port) = port {
                return (server, port);
            }
        }
        panic!("the server did not start");
    }
}

/// `qmd args…` with `envs`, killed (and the test failed) past `limit`: a
/// hang fails the test instead of the run.
pub fn qmd_within(env: &Env, args: &[&str], envs: &[(&str, &str)], limit: Duration) -> Output {
    let mut child = env
        .command(env.root(), args, envs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qmd");
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read_all = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (out, err) = (read_all(Box::new(stdout)), read_all(Box::new(stderr)));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("qmd {args:?} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output { stdout: out.join().unwrap(), stderr: err.join().unwrap(), code: status.code().unwrap_or(-1) }
}

/// A FIFO at `path` (its folders made).
pub fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_handles_the_recorded_quoting() {
        assert_eq!(shell_words("qmd search -- '-work'"), ["qmd", "search", "--", "-work"]);
        assert_eq!(shell_words(r#"qmd search "API reference""#), ["qmd", "search", "API reference"]);
        assert_eq!(shell_words(r#"qmd search '"May 1"'"#), ["qmd", "search", "\"May 1\""]);
        assert_eq!(shell_words("qmd multi-get 'docs/{api,errors}.md'"), ["qmd", "multi-get", "docs/{api,errors}.md"]);
        assert_eq!(shell_words("qmd  get  #x "), ["qmd", "get", "#x"]);
    }

    #[test]
    fn docid_search() {
        assert_eq!(first_docid("qmd://a/b.md:1 #68db8b\n").as_deref(), Some("68db8b"));
        assert_eq!(first_docid("# API Reference #0160b9").as_deref(), Some("0160b9"));
        assert_eq!(first_docid("#0160b9x #abcdef").as_deref(), Some("abcdef"));
    }
}
