//! What hostile testing (issue 42) found on the host, end to end: a damaged
//! model is named on stderr for every role, on the CLI and the MCP server,
//! and the query goes on as qmd's does; expansion cache entries are read
//! only from bounded regular files and only when a fresh expansion could
//! have made them; `/v1/*` and `/mcp` answer every error in their protocol
//! and check the key before reading the body; the model endpoints hold a
//! bounded number of request bodies however many requests come at once.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Env, Server, mkfifo, qmd_within};
use serde_json::{Value, json};

const NOTES: [(&str, &str); 3] = [
    ("tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n"),
    ("raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n"),
    ("bread.md", "# Sourdough\n\nMix flour, water and a starter; let the dough rise overnight.\n"),
];

fn notes() -> Env {
    let env = Env::new();
    for (name, text) in NOTES {
        env.write(&format!("notes/{name}"), text);
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    env
}

/// The stderr lines that name `path`.
fn lines_naming<'a>(stderr: &'a str, path: &Path) -> Vec<&'a str> {
    let path = path.to_string_lossy();
    stderr.lines().filter(|l| l.contains(path.as_ref())).collect()
}

/// A damaged model in each place a user can put one: a GGUF file of
/// garbage, and a repository folder whose `config.json` is not JSON.
fn damaged_models(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let gguf = env.write("models/ranker.gguf", "this is not a GGUF file, only bytes that claim a name");
    let folder = env.write("models/broken/config.json", "{\"model_type\": \"bert\", ");
    env.write("models/broken/tokenizer.json", "{}");
    env.write("models/broken/model.safetensors", "not weights");
    (gguf, folder.parent().unwrap().to_path_buf())
}

/// A damaged rerank model (`QMD_RERANK_MODEL`) is named on stderr with its
/// file and the problem; the query goes on as qmd's does when its reranker
/// cannot run ("Reranker unavailable", every rerank score 0.5). A query
/// that does not rerank never loads it; a configured reranker that is
/// missing is named too; the default, not downloaded, stays quiet.
#[test]
fn a_damaged_rerank_model_is_named_with_its_problem_and_the_query_goes_on() {
    let env = notes();
    let (gguf, folder) = damaged_models(&env);
    for (model, problem) in [(&gguf, "GGUF"), (&folder, "config.json")] {
        let spec = model.to_string_lossy().into_owned();
        let envs = [("QMD_RERANK_MODEL", spec.as_str())];
        let limit = Duration::from_secs(120);
        let out = qmd_within(&env, &["query", "--explain", "lex: tides"], &envs, limit).success();
        let named = lines_naming(&out.stderr, model);
        let warning: Vec<&&str> = named.iter().filter(|l| l.starts_with("Warning: rerank model")).collect();
        assert_eq!(warning.len(), 1, "one line names the model:\n{}", out.stderr);
        assert!(warning[0].contains(problem), "the line says what is wrong: {}", warning[0]);
        assert!(out.stdout.contains("tides.md"), "the query still answers:\n{}", out.stdout);
        assert!(out.stderr.contains("Reranker unavailable — skipping reranking ("), "{}", out.stderr);
        // Without --explain the line is there all the same.
        let out = qmd_within(&env, &["query", "lex: tides"], &envs, limit).success();
        assert_eq!(lines_naming(&out.stderr, model).len(), 1, "{}", out.stderr);
        // --no-rerank never loads it.
        let out = qmd_within(&env, &["query", "--no-rerank", "lex: tides"], &envs, limit).success();
        assert!(lines_naming(&out.stderr, model).is_empty(), "{}", out.stderr);
    }
    let missing = env.path("models/missing.gguf");
    let spec = missing.to_string_lossy().into_owned();
    let out = env.qmd_with(env.root(), &["query", "lex: tides"], &[("QMD_RERANK_MODEL", &spec)]).success();
    let named = lines_naming(&out.stderr, &missing);
    assert_eq!(named.len(), 1, "{}", out.stderr);
    assert!(named[0].contains("does not exist") && named[0].contains("without a reranker"), "{}", named[0]);
    let out = env.qmd_with(env.root(), &["query", "lex: tides"], &[]).success();
    assert!(!out.stderr.to_lowercase().contains("rerank"), "the default not downloaded is quiet:\n{}", out.stderr);
}

/// Every role: a damaged embedding and expansion model are named the same
/// way in one query, which goes on with BM25 alone.
#[test]
fn damaged_models_of_every_role_are_named() {
    let env = notes();
    let (gguf, folder) = damaged_models(&env);
    let expander = env.write("models/expander.gguf", "GGUF? no");
    let (embed, rerank, generate) =
        (folder.to_string_lossy().into_owned(), gguf.to_string_lossy().into_owned(), expander.to_string_lossy());
    let envs = [("QMD_EMBED_MODEL", embed.as_str()), ("QMD_RERANK_MODEL", &rerank), ("QMD_GENERATE_MODEL", &generate)];
    // Two notes match about as well: no strong signal, so the query asks
    // for an expansion, and reranks.
    let out = qmd_within(&env, &["query", "moon leader"], &envs, Duration::from_secs(120)).success();
    for (role, path) in [("embedding", &folder), ("rerank", &gguf), ("query-expansion", &expander)] {
        let warnings: Vec<&str> = lines_naming(&out.stderr, path)
            .into_iter()
            // (The expansion's may follow "Expanding query..." on its line.)
            .filter(|l| l.contains(&format!("Warning: {role} model")))
            .collect();
        assert_eq!(warnings.len(), 1, "{role}:\n{}", out.stderr);
    }
    assert!(out.stdout.contains("tides.md") && out.stdout.contains("raft.md"), "{}", out.stdout);
}

/// One JSON-RPC line to the MCP server's stdin.
fn send(stdin: &mut impl Write, message: Value) {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

/// The MCP server over stdio logs a damaged reranker on stderr (its stdout
/// is the protocol's), and its query answers.
#[test]
fn the_mcp_server_logs_a_damaged_reranker_on_stderr() {
    let env = notes();
    let (gguf, _) = damaged_models(&env);
    let spec = gguf.to_string_lossy().into_owned();
    let mut child = env
        .command(env.root(), &["mcp"], &[("QMD_RERANK_MODEL", &spec)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let _server = Server(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let client =
        json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    send(&mut stdin, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": client}));
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let searches = json!([{"type": "lex", "query": "tides"}]);
    let call = json!({"name": "query", "arguments": {"searches": searches}});
    send(&mut stdin, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}));
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut answer = None;
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout is JSON-RPC only: {line}"));
        if message["id"] == 2 {
            answer = Some(message);
            break;
        }
    }
    let answer = answer.expect("the query answered");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("tides.md"), "{answer}");
    drop(stdin);
    let stderr = errors.join().unwrap();
    let named = lines_naming(&stderr, &gguf);
    assert!(named.iter().any(|l| l.starts_with("Warning: rerank model") && l.contains("GGUF")), "{stderr}");
}

const QUERY: &str = "zebra migration patterns";

/// Plants `entry` as the cached expansion of [`QUERY`] by `model`.
fn plant(env: &Env, model: &str, write: impl FnOnce(&Path)) -> std::path::PathBuf {
    let dir = env.cache_home().join("qmd/expansions");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.json", qmd_core::query::expansion::cache_key(QUERY, model)));
    let _ = std::fs::remove_file(&file);
    write(&file);
    file
}

fn entry(model: &str, searches: Vec<Value>) -> String {
    json!({"query": QUERY, "model": model, "searches": searches}).to_string()
}

/// Expansion cache entries are untrusted: a FIFO in an entry's place does
/// not hang the query, and an entry over the size cap, with 10,000
/// searches, or with a line past the query limit is a miss (the model is
/// asked: here a damaged one, so the query runs without an expansion and
/// says so). A planted entry a fresh expansion could have made is a hit.
#[test]
fn expansion_cache_entries_are_read_bounded_and_validated() {
    let env = notes();
    let expander = env.write("models/expander.gguf", "not a GGUF file");
    let model = expander.to_string_lossy().into_owned();
    let envs = [("QMD_GENERATE_MODEL", model.as_str())];
    let limit = Duration::from_secs(60);
    let query = |what: &str| {
        let out = qmd_within(&env, &["query", QUERY], &envs, limit);
        assert_eq!(out.code, 0, "{what}:\n{}", out.stderr);
        out.stderr
    };
    // A hit: the key is right, and the entry is searched.
    let search = |kind: &str, text: String| json!({"type": kind, "query": text});
    plant(&env, &model, |f| std::fs::write(f, entry(&model, vec![search("lex", "zebra herds".into())])).unwrap());
    let stderr = query("a valid entry");
    assert!(stderr.contains("├─ lex: zebra herds") || stderr.contains("└─ lex: zebra herds"), "{stderr}");
    assert!(!stderr.contains("Query expansion failed"), "{stderr}");

    let huge = search("vec", format!("zebra {}", "x".repeat(2 << 20)));
    let many: Vec<Value> = (0..10_000).map(|i| search("lex", format!("zebra {i}"))).collect();
    let long = search("vec", format!("zebra {}", "y".repeat(10_001)));
    for (what, searches) in [("10,000 searches", many), ("a 10,007-character line", vec![long]), ("2 MB", vec![huge])] {
        plant(&env, &model, |f| std::fs::write(f, entry(&model, searches)).unwrap());
        let stderr = query(what);
        assert!(stderr.contains("Query expansion failed"), "{what} is a miss:\n{stderr}");
        assert!(!stderr.contains(": zebra "), "{what} is not searched:\n{stderr}");
    }

    let fifo = plant(&env, &model, |f| {
        let status = std::process::Command::new("mkfifo").arg(f).status().expect("mkfifo");
        assert!(status.success());
    });
    let stderr = query("a FIFO");
    assert!(stderr.contains("Query expansion failed"), "a miss asks the (damaged) model:\n{stderr}");
    std::fs::remove_file(fifo).unwrap();
}

/// `(status, headers, body)` of one raw HTTP/1.1 exchange. The request's
/// head is sent; then `body` from another thread (a server may answer
/// before reading it), or nothing at all when `body` is `None` whatever
/// `Content-Length` says. A server that waits for a body it was never sent
/// fails the exchange after `limit`.
fn exchange(port: u16, head: &str, body: Option<Vec<u8>>, limit: Duration) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(limit)).unwrap();
    let head = format!("{head}Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    if let Some(body) = body {
        let mut writer = stream.try_clone().unwrap();
        std::thread::spawn(move || writer.write_all(&body));
    }
    let mut raw = Vec::new();
    if let Err(e) = stream.read_to_end(&mut raw)
        && raw.is_empty()
    {
        panic!("no answer to {head:?} within {limit:?}: {e}");
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {text:?}"));
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, headers.to_ascii_lowercase(), body.to_string())
}

fn post(path: &str, headers: &str, length: usize) -> String {
    format!("POST {path} HTTP/1.1\r\n{headers}Content-Type: application/json\r\nContent-Length: {length}\r\n")
}

/// `qmd mcp --http` on a free port with `envs`, and its process id.
fn serve(env: &Env, envs: &[(&str, &str)]) -> (Server, u16, u32) {
    let (server, port) = env.serve_http(envs);
    let pid = server.0.id();
    (server, port, pid)
}

/// The `{"error": {"message", "type", …}}` of an OpenAI error answer.
#[track_caller]
fn openai_error(headers: &str, body: &str) -> Value {
    assert!(headers.contains("content-type: application/json"), "{headers}\n{body}");
    let value: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(value["error"]["message"].is_string() && value["error"]["type"].is_string(), "{body}");
    value["error"].clone()
}

/// A JSON-RPC error answer's `error`.
#[track_caller]
fn json_rpc_error(headers: &str, body: &str) -> Value {
    assert!(headers.contains("content-type: application/json"), "{headers}\n{body}");
    let value: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(value["jsonrpc"], "2.0", "{body}");
    assert!(value["error"]["code"].is_i64() && value["error"]["message"].is_string(), "{body}");
    value["error"].clone()
}

/// The key is checked before the body is read or parsed, and every error
/// under `/v1` is an OpenAI error object, the framework's own included;
/// `/mcp` answers its transport errors as JSON-RPC, and a body announced
/// over a limit is refused before it is read.
#[test]
fn servers_answer_in_their_protocol_and_check_the_key_first() {
    let env = notes();
    let (_server, port, _) = serve(&env, &[("QMD_API_KEY", "sesame")]);
    let quick = Duration::from_secs(20);
    let key = "Authorization: Bearer sesame\r\n";
    let bad = br#"{"input": []}"#.to_vec();
    let embeddings = |headers: &str, length: usize, body: Option<Vec<u8>>| {
        exchange(port, &post("/v1/embeddings", headers, length), body, quick)
    };

    // No key: 401, whatever the body (not its validation message), and
    // before a body it was never sent (17 MB announced) is read.
    let (status, headers, body) = embeddings("", bad.len(), Some(bad.clone()));
    assert_eq!(status, 401, "{body}");
    assert_eq!(openai_error(&headers, &body)["code"], "invalid_api_key");
    let (status, headers, body) = embeddings("Authorization: Bearer wrong\r\n", 17 << 20, None);
    assert_eq!((status, openai_error(&headers, &body)["code"].clone()), (401, json!("invalid_api_key")));
    let get = |path: &str, headers: &str| exchange(port, &format!("GET {path} HTTP/1.1\r\n{headers}"), None, quick);
    assert_eq!(get("/v1/models", "").0, 401);
    assert_eq!(get("/v1/nothing", "").0, 401);

    // With the key: the body's own message.
    let (status, headers, body) = embeddings(key, bad.len(), Some(bad));
    assert_eq!((status, openai_error(&headers, &body)["param"].clone()), (400, json!("input")));
    let (status, headers, body) = embeddings(key, 8, Some(b"not json".to_vec()));
    assert_eq!(status, 400);
    openai_error(&headers, &body);
    // Over the 16 MiB limit: 413 in OpenAI's shape, before the body is read.
    for path in ["/v1/embeddings", "/v1/rerank"] {
        let (status, headers, body) = exchange(port, &post(path, key, (16 << 20) + 1), None, quick);
        assert_eq!(status, 413, "{path}: {body}");
        assert_eq!(openai_error(&headers, &body)["code"], "request_too_large");
    }
    // The framework's own answers: a wrong method, an unknown path.
    let (status, headers, body) = get("/v1/embeddings", key);
    assert_eq!(status, 405, "{body}");
    assert!(headers.contains("allow: post"), "{headers}");
    assert!(openai_error(&headers, &body)["message"].as_str().unwrap().contains("GET"), "{body}");
    for path in ["/v1/nothing", "/v1", "/v1/embeddings/x"] {
        let (status, headers, body) = get(path, key);
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(openai_error(&headers, &body)["code"], "unknown_url");
    }
    // No model served: 503 in OpenAI's shape.
    let rerank = br#"{"query": "tides", "documents": ["the moon"]}"#.to_vec();
    let (status, headers, body) = exchange(port, &post("/v1/rerank", key, rerank.len()), Some(rerank), quick);
    assert_eq!(status, 503, "{body}");
    openai_error(&headers, &body);

    // /mcp: JSON-RPC errors, the transport's included.
    let accept = "Accept: application/json, text/event-stream\r\n";
    let (status, headers, body) = exchange(port, &post("/mcp", accept, 5 << 20), None, quick);
    assert_eq!(status, 413, "{body}");
    json_rpc_error(&headers, &body);
    let ping = br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#.to_vec();
    let text = format!("POST /mcp HTTP/1.1\r\n{accept}Content-Type: text/plain\r\nContent-Length: {}\r\n", ping.len());
    let (status, headers, body) = exchange(port, &text, Some(ping.clone()), quick);
    assert_eq!(status, 415, "{body}");
    json_rpc_error(&headers, &body);
    let (status, headers, body) = exchange(port, &post("/mcp", "", ping.len()), Some(ping), quick);
    assert_eq!(status, 406, "{body}");
    json_rpc_error(&headers, &body);
    let (status, headers, body) = exchange(port, &format!("DELETE /mcp HTTP/1.1\r\n{accept}"), None, quick);
    assert!(status >= 400, "{status} {body}");
    json_rpc_error(&headers, &body);

    // REST: JSON, and a body announced over its limit is not waited for.
    let (status, headers, body) = exchange(port, &post("/query", "", 2 << 20), None, quick);
    assert_eq!(status, 413, "{body}");
    assert!(headers.contains("content-type: application/json"), "{headers}");
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(), "{body}");
}

/// A `/proc/<pid>/status` field in bytes (`VmRSS`, `VmHWM`).
fn memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field}: {status}"));
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Many large model requests at once: each completes or is refused with an
/// OpenAI error, the server stays up, and its memory grows by a bounded
/// number of bodies (two in flight), not by one per request.
#[test]
fn concurrent_large_model_requests_hold_a_bounded_number_of_bodies() {
    let env = notes();
    let model = qmd_tests::models::test_model_dir().to_string_lossy().into_owned();
    let (_server, port, pid) = serve(&env, &[("QMD_EMBED_MODEL", &model)]);
    // 256 short inputs, padded with JSON white space to 15 MB: cheap for
    // the model, costly to hold.
    let inputs: Vec<String> = (0..256).map(|i| format!("the tide rises {i}")).collect();
    let request = |padding: usize| {
        let mut body = json!({"input": inputs}).to_string().into_bytes();
        body.pop();
        body.extend(std::iter::repeat_n(b' ', padding));
        body.push(b'}');
        body
    };
    let limit = Duration::from_secs(300);
    let small = request(0);
    let (status, _, body) = exchange(port, &post("/v1/embeddings", "", small.len()), Some(small.clone()), limit);
    assert_eq!(status, 200, "warm-up: {body}");

    // The peak resident size from here on (Linux resets it on "5").
    let reset = std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
    let before = memory(pid, "VmRSS");
    let sampler_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = sampler_stop.clone();
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            peak = peak.max(memory(pid, "VmRSS"));
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    const REQUESTS: usize = 20;
    let large = request(15 << 20);
    let threads: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let body = large.clone();
            std::thread::spawn(move || exchange(port, &post("/v1/embeddings", "", body.len()), Some(body), limit))
        })
        .collect();
    for thread in threads {
        let (status, headers, body) = thread.join().unwrap();
        match status {
            200 => {
                let answer: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(answer["data"].as_array().unwrap().len(), 256);
            }
            503 => {
                assert!(headers.contains("retry-after:"), "{headers}");
                openai_error(&headers, &body);
            }
            _ => panic!("{status}: {body}"),
        }
    }
    sampler_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sampled = sampler.join().unwrap();
    let peak = if reset { memory(pid, "VmHWM").max(sampled) } else { sampled };
    let grown = peak.saturating_sub(before);
    // Two bodies of 15 MB in flight (each read once, then copied whole),
    // their answers, and slack; 20 at once would be 300 MB and more.
    eprintln!("the server grew by {} MB for {REQUESTS} requests", grown >> 20);
    assert!(grown < 128 << 20, "the server grew by {} MB for {REQUESTS} requests", grown >> 20);
    // Still up.
    let (status, _, body) = exchange(port, &post("/v1/embeddings", "", small.len()), Some(small), limit);
    assert_eq!(status, 200, "{body}");
}

/// A FIFO where a command reads a file (robustness class: a read that
/// blocks forever): the MCP server's PID file, a skill's files, a file
/// `qmd web` serves, the index config every command reads. Each is refused
/// or skipped, never opened for a blocking read: the command answers, and
/// an error names the file.
#[test]
fn a_fifo_in_place_of_a_file_never_hangs_a_command() {
    let env = notes();
    let quick = Duration::from_secs(20);

    mkfifo(&env.cache_home().join("qmd/mcp.pid"));
    let out = qmd_within(&env, &["mcp", "stop"], &[], quick);
    // Not a PID: the server is not running (and the stray entry in qmd's
    // own PID file's place is cleaned up).
    assert!(out.code == 0 && out.stdout.to_lowercase().contains("not running"), "{out:?}");
    // Starting a server neither blocks opening a FIFO in its log's or its
    // PID file's place (no reader: the open never returns) nor writes
    // through a link there into the file it points at; the error names the
    // file, and no server is left running.
    let daemon = ["mcp", "--http", "--daemon", "--port", "1"];
    for name in ["mcp.log", "mcp.pid"] {
        let file = env.cache_home().join("qmd").join(name);
        mkfifo(&file);
        let out = qmd_within(&env, &daemon, &[], quick);
        assert!(out.code != 0 && out.stderr.contains(name) && out.stderr.contains("a FIFO"), "{out:?}");
        std::fs::remove_file(&file).unwrap();
        let mine = env.path("mine.txt");
        std::fs::write(&mine, "keep").unwrap();
        std::os::unix::fs::symlink(&mine, &file).unwrap();
        let out = qmd_within(&env, &daemon, &[], quick);
        assert!(out.code != 0 && out.stderr.contains(name) && out.stderr.contains("a link"), "{out:?}");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "keep", "written through the link at {name}");
        std::fs::remove_file(&file).unwrap();
    }
    assert!(!env.cache_home().join("qmd/mcp.pid").exists(), "no server was recorded");

    env.write("skills/good/SKILL.md", "---\nname: good\ndescription: A good skill\n---\n# Good\n");
    mkfifo(&env.path("skills/good/notes/pipe.md"));
    mkfifo(&env.path("skills/piped/SKILL.md"));
    let dir = env.arg("skills");
    let vars = [("QMD_SKILLS_DIR", dir.as_str())];
    let out = qmd_within(&env, &["skills"], &vars, quick);
    assert_eq!(out.stdout, "  good  A good skill\n", "{out:?}");
    let out = qmd_within(&env, &["skills", "get", "good", "--full"], &vars, quick);
    assert!(out.stdout.contains("# Good") && !out.stdout.contains("pipe.md"), "{out:?}");

    let (_web, port) = crate::servers::start_web(&env, &[]);
    mkfifo(&env.path("www/pipe.js"));
    let (status, _, _) = exchange(port, "GET /pipe.js HTTP/1.1\r\n", None, quick);
    assert_eq!(status, 404, "a FIFO is not served");
    let (status, _, body) = exchange(port, "GET /index.html HTTP/1.1\r\n", None, quick);
    assert!(status == 200 && body.contains("qmd test app"), "the server still answers: {status} {body}");

    // The index's write lock, which every writing command opens first.
    let lock = env.cache_home().join("qmd/index.qmdx/.lock");
    assert!(lock.is_file(), "the index has its lock file");
    std::fs::remove_file(&lock).unwrap();
    mkfifo(&lock);
    let out = qmd_within(&env, &["update"], &[], quick);
    assert!(out.code != 0 && out.stderr.contains(".lock") && out.stderr.contains("a FIFO"), "{out:?}");
    std::fs::remove_file(&lock).unwrap();
    env.ok(&["update"]);

    // A read inside the engine component with no check before its open:
    // WASI has no O_NONBLOCK, so the host opens beneath the directory
    // itself, non-blocking, and the engine names what it found.
    let manifest = env.cache_home().join("qmd/index.qmdx/manifest.json");
    let kept = std::fs::read(&manifest).unwrap();
    std::fs::remove_file(&manifest).unwrap();
    mkfifo(&manifest);
    let out = qmd_within(&env, &["search", "anything"], &[], quick);
    assert!(out.code != 0 && out.stderr.contains("manifest.json: not a regular file"), "{out:?}");
    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(&manifest, kept).unwrap();
    env.ok(&["search", "anything"]);

    let config = env.config_home().join("qmd/index.yml");
    std::fs::remove_file(&config).unwrap();
    mkfifo(&config);
    let out = qmd_within(&env, &["status"], &[], quick);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("index.yml") && out.stderr.contains("FIFO"), "{}", out.stderr);
}
