//! The HTTP servers as a browser or a second `qmd` meets them: `qmd web`
//! behind the Origin/Host guard it shares with `qmd mcp --http` (DNS
//! rebinding), and `qmd mcp --http --daemon` reporting whether its server
//! really listens. Every server binds 127.0.0.1 and is killed at the end.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

const STARTUP: Duration = Duration::from_secs(120);

/// A child process killed (and reaped) on drop.
pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Kills a detached daemon by PID on drop, in case a test fails midway.
struct Pid(u32);

impl Drop for Pid {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-9", &self.0.to_string()]).status();
    }
}

/// A raw HTTP/1.1 exchange on 127.0.0.1: `(status, body)`. `headers` are
/// sent as written (a `Host` header among them replaces the default one).
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (status, body)
}

/// The lines a child writes on `pipe`, as they come.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// `qmd web --port 0` on a folder with a tiny app; its port, once it prints it.
pub(crate) fn start_web(env: &Env, envs: &[(&str, &str)]) -> (Server, u16) {
    let www = env.write("www/index.html", "<!doctype html><title>qmd test app</title>\n");
    let www = www.parent().unwrap().to_string_lossy().into_owned();
    let mut child = env
        .command(env.root(), &["web", "--port", "0", "--dir", &www], envs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn qmd web");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let rx = lines_of(stdout);
    let deadline = Instant::now() + STARTUP;
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let port = line
            .strip_prefix("qmd web: http://127.0.0.1:")
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok());
        if let Some(port) = port {
            return (server, port);
        }
    }
    panic!("qmd web did not say where it listens");
}

const WEB_PATHS: [&str; 4] = ["/", "/index.html", "/config.json", "/models/embed/config.json"];

#[test]
fn web_refuses_foreign_hosts() {
    let env = Env::new();
    let (_server, port) = start_web(&env, &[]);
    let with_port = |h: &str| format!("{h}:{port}");
    let foreign = [
        "evil.com".to_string(),
        with_port("evil.com"),
        with_port("EVIL.example"),
        with_port("localhost.evil.com"),
        with_port("127.0.0.1.evil.com"),
        with_port("0.0.0.0"),
        with_port("192.168.1.5"),
        with_port("[fe80::1]"),
    ];
    for host in &foreign {
        for path in WEB_PATHS {
            let (status, body) = http(port, "GET", path, &[("Host", host)]);
            assert_eq!(status, 403, "GET {path} with Host {host}: {body}");
            assert!(body.contains("Host not allowed"), "GET {path} with Host {host}: {body}");
            assert!(!body.contains("qmd test app") && !body.contains("embedModel"), "{body}");
        }
    }
}

/// The app folder is served as a static host serves its root: a link in it
/// that leads out (to a file, or through a folder) is a 404; one that stays
/// inside is followed.
#[test]
fn web_serves_nothing_a_link_out_of_its_folder_points_to() {
    let env = Env::new();
    env.write("private/passwd.txt", "root:x:0:0:WEB-SECRET");
    env.write("www/assets/app.css", "body { color: teal }");
    let www = env.path("www");
    std::os::unix::fs::symlink(env.path("private/passwd.txt"), www.join("passwd.txt")).unwrap();
    std::os::unix::fs::symlink(env.path("private"), www.join("vendor")).unwrap();
    std::os::unix::fs::symlink("assets/app.css", www.join("style.css")).unwrap();
    let (_server, port) = start_web(&env, &[]);
    for path in ["/passwd.txt", "/vendor/passwd.txt"] {
        let (status, body) = http(port, "GET", path, &[]);
        assert_eq!(status, 404, "GET {path}: {body}");
        assert!(!body.contains("WEB-SECRET"), "{body}");
    }
    let (status, body) = http(port, "GET", "/style.css", &[]);
    assert_eq!((status, body.contains("teal")), (200, true), "{body}");
}

/// A FIFO in the app folder, or a link to one, is a 404 at once: never
/// opened for a read that waits for a writer (a thread per request).
#[test]
fn web_never_opens_a_fifo_in_its_folder() {
    let env = Env::new();
    env.write("www/assets/app.css", "body { color: teal }");
    let www = env.path("www");
    mkfifo(&www.join("pipe.js"));
    std::os::unix::fs::symlink("pipe.js", www.join("linked.js")).unwrap();
    let (_server, port) = start_web(&env, &[]);
    for _ in 0..3 {
        for path in ["/pipe.js", "/linked.js"] {
            let started = Instant::now();
            let (status, _) = http(port, "GET", path, &[]);
            assert_eq!(status, 404, "GET {path}");
            assert!(started.elapsed() < Duration::from_secs(10), "GET {path} took {:?}", started.elapsed());
        }
    }
    let (status, body) = http(port, "GET", "/assets/app.css", &[]);
    assert_eq!((status, body.contains("teal")), (200, true), "{body}");
}

#[test]
fn web_refuses_foreign_origins() {
    let env = Env::new();
    let (_server, port) = start_web(&env, &[]);
    let foreign = [
        "http://evil.com".to_string(),
        format!("http://evil.com:{port}"),
        format!("https://localhost.evil.com:{port}"),
        format!("http://127.0.0.1.evil.com:{port}"),
        "null".to_string(),
        format!("file://localhost:{port}"),
    ];
    for origin in &foreign {
        for path in WEB_PATHS {
            let (status, body) = http(port, "GET", path, &[("Origin", origin)]);
            assert_eq!(status, 403, "GET {path} from {origin}: {body}");
            assert!(body.contains("Origin not allowed"), "GET {path} from {origin}: {body}");
        }
    }
}

#[test]
fn web_serves_loopback_hosts_and_origins() {
    let env = Env::new();
    let (_server, port) = start_web(&env, &[]);
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}"), "localhost".into()]
    {
        let (status, body) = http(port, "GET", "/", &[("Host", &host)]);
        assert_eq!(status, 200, "Host {host}: {body}");
        assert!(body.contains("qmd test app"), "{body}");
        let (status, body) = http(port, "GET", "/config.json", &[("Host", &host)]);
        assert_eq!(status, 200, "Host {host}: {body}");
        assert!(body.contains("embedModel"), "{body}");
    }
    for origin in [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")] {
        let (status, body) = http(port, "GET", "/", &[("Origin", &origin)]);
        assert_eq!(status, 200, "Origin {origin}: {body}");
    }
}

/// The page's models: `/config.json` names where each comes from, and
/// `/models/<role>/` serves only the configured files — a GGUF model's one
/// file as `model.gguf`, with its length — and nothing else.
#[test]
fn web_serves_the_configured_models_and_nothing_else() {
    let env = Env::new();
    let gguf = env.write("models/ranker.gguf", "GGUF and some bytes");
    let repo = env.write("models/mini/config.json", "{}");
    env.write("models/mini/tokenizer.json", "{}");
    env.write("models/mini/model.safetensors", "weights");
    env.write("models/mini/secret.txt", "not a model file");
    let repo = repo.parent().unwrap().to_string_lossy().into_owned();
    let gguf_path = gguf.to_string_lossy().into_owned();
    let envs = [("QMD_EMBED_MODEL", repo.as_str()), ("QMD_RERANK_MODEL", gguf_path.as_str())];
    let (_server, port) = start_web(&env, &envs);
    let (status, body) = http(port, "GET", "/config.json", &[]);
    assert_eq!(status, 200, "{body}");
    let config: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(config["embedModel"], serde_json::json!({"id": repo, "url": "models/embed/"}));
    assert_eq!(
        config["rerankModel"],
        serde_json::json!({"id": gguf_path, "url": "models/rerank/model.gguf", "gguf": true})
    );
    assert_eq!(http(port, "GET", "/models/rerank/model.gguf", &[]), (200, "GGUF and some bytes".to_string()));
    assert_eq!(http(port, "GET", "/models/embed/model.safetensors", &[]), (200, "weights".to_string()));
    for path in [
        "/models/embed/secret.txt",
        "/models/embed/model.gguf",
        "/models/rerank/config.json",
        "/models/rerank/ranker.gguf",
        "/models/generate/model.gguf",
        "/models/embed/../mini/secret.txt",
    ] {
        assert_eq!(http(port, "GET", path, &[]).0, 404, "GET {path}");
    }
    // A configured local model that is not there is left out of the page.
    let (_server, port) = start_web(&env, &[("QMD_RERANK_MODEL", "./missing.gguf")]);
    let config: serde_json::Value = serde_json::from_str(&http(port, "GET", "/config.json", &[]).1).unwrap();
    assert_eq!(config["rerankModel"], serde_json::Value::Null);
    // A model with no folder (an OpenAI endpoint, a spec that names no
    // model) serves no files: not the model files of the server's own
    // working folder either.
    env.write("config.json", "{\"cwd\": \"not a model\"}");
    env.write("tokenizer.json", "{}");
    env.write("model.safetensors", "cwd weights");
    let folderless = [("QMD_EMBED_MODEL", "openai:m@http://127.0.0.1:9"), ("QMD_RERANK_MODEL", "hf:a/b/../c")];
    let (_server, port) = start_web(&env, &folderless);
    for path in ["/models/embed/config.json", "/models/embed/model.safetensors", "/models/rerank/config.json"] {
        assert_eq!(http(port, "GET", path, &[]).0, 404, "GET {path}");
    }
}

#[test]
fn web_allowed_hosts_and_origins_come_from_the_environment() {
    let env = Env::new();
    let envs = [("QMD_ALLOWED_HOSTS", "box.lan"), ("QMD_ALLOWED_ORIGINS", "https://notes.example")];
    let (_server, port) = start_web(&env, &envs);
    for host in ["box.lan".to_string(), format!("box.lan:{port}"), format!("BOX.lan:{port}")] {
        let (status, body) = http(port, "GET", "/", &[("Host", &host)]);
        assert_eq!(status, 200, "Host {host}: {body}");
    }
    // A page served from the allowed host may load its own scripts.
    let (status, _) = http(port, "GET", "/", &[("Host", "box.lan"), ("Origin", &format!("http://box.lan:{port}"))]);
    assert_eq!(status, 200);
    let (status, _) = http(port, "GET", "/", &[("Origin", "https://notes.example")]);
    assert_eq!(status, 200);
    for host in ["evil.com", "box.lan.evil.com"] {
        assert_eq!(http(port, "GET", "/", &[("Host", host)]).0, 403, "Host {host}");
    }
    assert_eq!(http(port, "GET", "/", &[("Origin", "https://evil.com")]).0, 403);
}

#[test]
fn web_warns_when_the_guard_is_off() {
    let env = Env::new();
    let www = env.write("www/index.html", "app\n");
    let www = www.parent().unwrap().to_string_lossy().into_owned();
    let mut child = env
        .command(env.root(), &["web", "--port", "0", "--dir", &www], &[("QMD_ALLOWED_ORIGINS", "*")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn qmd web");
    let stderr = child.stderr.take().unwrap();
    let _server = Server(child);
    let rx = lines_of(stderr);
    let warning = "Warning: QMD_ALLOWED_ORIGINS=* disables the Origin/Host checks.";
    let deadline = Instant::now() + STARTUP;
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if line == warning {
            return;
        }
        seen.push(line);
    }
    panic!("no warning on stderr: {seen:?}");
}

/// Runs `qmd args…` to completion within `limit` (killed after it).
fn run_bounded(mut command: Command, limit: Duration) -> Output {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("wait").into()
}

fn daemon(env: &Env, port: u16) -> Output {
    let port = port.to_string();
    let command = env.command(env.root(), &["mcp", "--http", "--daemon", "--port", &port, "--host", "127.0.0.1"], &[]);
    run_bounded(command, STARTUP + Duration::from_secs(30))
}

fn pid_file(env: &Env) -> std::path::PathBuf {
    env.cache_home().join("qmd/mcp.pid")
}

fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string));
        if state.is_none_or(|s| s == "Z") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn started_pid(out: &Output, port: u16) -> u32 {
    let prefix = format!("Started on http://127.0.0.1:{port}/mcp (PID ");
    let line = out.stdout.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("{out:?}"));
    line.trim_end_matches(')').parse().expect("PID")
}

#[test]
fn daemon_on_a_busy_port_fails_and_says_so() {
    let env = Env::new();
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().unwrap().port();
    let out = daemon(&env, port);
    // Should it have started after all, do not leave it running.
    let _cleanup = out.stdout.contains("Started on").then(|| Pid(started_pid(&out, port)));
    let out = out.failure();
    assert!(!out.stdout.contains("Started on"), "{out:?}");
    assert!(out.stderr.contains(&format!("127.0.0.1:{port}")), "names the address: {out:?}");
    assert!(out.stderr.contains(&format!("Port {port} already in use")), "says why: {out:?}");
    assert!(out.stderr.contains("Logs: "), "{out:?}");
    assert!(!pid_file(&env).exists(), "no PID file left behind");
    assert_eq!(env.ok(&["mcp", "stop"]).stdout.trim(), "Not running (no PID file).");
    drop(busy);
}

#[test]
fn daemon_on_a_free_port_listens_before_it_says_started() {
    let env = Env::new();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = daemon(&env, port).success();
    let pid = started_pid(&out, port);
    let cleanup = Pid(pid);
    assert!(out.stdout.contains("Logs: "), "{out:?}");
    assert_eq!(std::fs::read_to_string(pid_file(&env)).unwrap().trim(), pid.to_string());
    // No waiting: "Started" means it listens.
    let (status, body) = http(port, "GET", "/health", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"ok\""), "{body}");
    let stopped = env.ok(&["mcp", "stop"]);
    assert_eq!(stopped.stdout.trim(), format!("Stopped QMD MCP server (PID {pid})."));
    assert!(wait_gone(pid), "daemon {pid} still running after 'qmd mcp stop'");
    std::mem::forget(cleanup); // gone: its PID may belong to another process by now
    assert!(!Path::new(&pid_file(&env)).exists());
}
