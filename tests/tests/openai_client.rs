//! Models on an OpenAI-compatible server (`openai:<model>@<URL>`: embedding, reranking, expansion)
//! pointed at our own `qmd mcp --http` over loopback, through a proxy that
//! injects faults (429, 500, a dropped connection, an answer slower than
//! the timeout, vectors of the wrong dimension). The retried run stores
//! exactly the vectors a local run stores (no vector lost or duplicated:
//! same count, same search scores); a wrong answer fails the run with a
//! clear error and stores nothing.

use crate::common;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Env, Server};

/// A chat model's answer to an expansion request, thinking block and a
/// line outside qmd's grammar included.
const EXPANSION: &str = "<think>\n\n</think>\n\nlex: raft leader election\nvec: how does raft choose its leader\n\
                         hyde: In Raft a leader is elected by a majority of votes.\nnot an expansion line\n";

/// What the proxy does with the next `/v1/embeddings` request.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Forwarded as it is.
    Pass,
    /// 429 Too Many Requests, `Retry-After: 0`.
    TooMany,
    /// 500, `Retry-After: 0`.
    Fails,
    /// The connection closed without an answer.
    Drop,
    /// Forwarded, answered after this long.
    Slow(Duration),
    /// Forwarded, each vector cut by one number.
    ShortVectors,
}

struct Proxy {
    port: u16,
    /// Bodies of the chat-completions requests, which the proxy answers
    /// itself with [`EXPANSION`].
    chats: Arc<Mutex<Vec<serde_json::Value>>>,
    /// Faults for the next requests, in order; then requests pass.
    faults: Arc<Mutex<VecDeque<Fault>>>,
    /// Requests to `/v1/embeddings` seen.
    seen: Arc<Mutex<u32>>,
}

/// An HTTP request read whole: the request line and headers, and the body.
fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().ok()))
        .flatten()
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// `(status, body)` of a POST to the upstream server.
fn forward(upstream: u16, head: &str, body: &[u8]) -> (u16, String) {
    let path = head.split(' ').nth(1).unwrap_or("/");
    let auth = head
        .lines()
        .map(str::trim_end)
        .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        .map_or(String::new(), |l| format!("{l}\r\n"));
    let mut stream = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{upstream}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    (status, raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string())
}

fn respond(stream: &mut TcpStream, status: u16, extra: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Mutex::new(VecDeque::new()));
        let seen = Arc::new(Mutex::new(0));
        let chats = Arc::new(Mutex::new(Vec::new()));
        let (queue, count, chat_log) = (faults.clone(), seen.clone(), chats.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (queue, count, chat_log) = (queue.clone(), count.clone(), chat_log.clone());
                std::thread::spawn(move || {
                    let Some((head, body)) = read_request(&mut stream) else { return };
                    if head.starts_with("POST /v1/chat/completions ") {
                        chat_log.lock().unwrap().push(serde_json::from_slice(&body).unwrap());
                        let answer =
                            serde_json::json!({"choices": [{"message": {"role": "assistant", "content": EXPANSION}}]});
                        return respond(&mut stream, 200, "", &answer.to_string());
                    }
                    *count.lock().unwrap() += 1;
                    let fault = queue.lock().unwrap().pop_front();
                    match fault {
                        Some(Fault::TooMany) => {
                            respond(&mut stream, 429, "Retry-After: 0\r\n", r#"{"error":{"message":"slow down"}}"#)
                        }
                        Some(Fault::Fails) => {
                            respond(&mut stream, 500, "Retry-After: 0\r\n", r#"{"error":{"message":"boom"}}"#)
                        }
                        Some(Fault::Drop) => drop(stream),
                        Some(Fault::Slow(wait)) => {
                            std::thread::sleep(wait);
                            let (status, answer) = forward(upstream, &head, &body);
                            respond(&mut stream, status, "", &answer);
                        }
                        Some(Fault::ShortVectors) => {
                            let (status, answer) = forward(upstream, &head, &body);
                            let mut json: serde_json::Value = serde_json::from_str(&answer).unwrap();
                            for item in json["data"].as_array_mut().unwrap() {
                                item["embedding"].as_array_mut().unwrap().pop();
                            }
                            respond(&mut stream, status, "", &json.to_string());
                        }
                        Some(Fault::Pass) | None => {
                            let (status, answer) = forward(upstream, &head, &body);
                            respond(&mut stream, status, "", &answer);
                        }
                    }
                });
            }
        });
        Proxy { port, chats, faults, seen }
    }

    fn inject(&self, faults: &[Fault]) {
        self.faults.lock().unwrap().extend(faults.iter().copied());
    }
}

/// `qmd mcp --http` serving the test model, and the port it listens on.
fn serve(env: &Env, model: &str, reranker: &str) -> (Server, u16) {
    env.serve_http(&[("QMD_EMBED_MODEL", model), ("QMD_RERANK_MODEL", reranker), ("QMD_API_KEY", "sesame")])
}

const NOTES: [(&str, &str); 4] = [
    ("raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n"),
    ("bread.md", "# Sourdough\n\nMix flour, water and a starter; let the dough rise overnight.\n"),
    ("tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n"),
    ("bees.md", "# Bees\n\nWorker bees gather nectar and dance to show the others where flowers are.\n"),
];

/// An index of [`NOTES`] whose embedding model is `model`.
fn notes(envs: &[(&str, &str)]) -> Env {
    let env = Env::new();
    for (name, text) in NOTES {
        env.write(&format!("notes/{name}"), text);
    }
    let out = env.qmd_with(env.root(), &["collection", "add", &env.arg("notes"), "--name", "notes"], envs);
    assert_eq!(out.code, 0, "{}", out.stderr);
    env
}

/// `(file, score)` of `vsearch` for a fixed question.
fn ranking(env: &Env, envs: &[(&str, &str)]) -> Vec<(String, f64)> {
    let out = env.qmd_with(env.root(), &["vsearch", "--json", "what makes the sea rise", "--min-score", "0"], envs);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    hits.iter().map(|h| (h["file"].as_str().unwrap().to_string(), h["score"].as_f64().unwrap())).collect()
}

#[test]
fn remote_models_survive_faults_and_refuse_wrong_answers() {
    let model_dir = qmd_tests::models::test_model_dir();
    let model = model_dir.to_str().unwrap();
    let reranker = qmd_tests::gguf::fixtures().dir.join("qwen3-reranker-f32.gguf");
    let reranker = reranker.to_str().unwrap();
    let host = Env::new();
    let (_server, upstream) = serve(&host, model, reranker);
    let proxy = Proxy::start(upstream);

    // The reference: the same model, run here.
    let local_envs = [("QMD_EMBED_MODEL", model)];
    let local = notes(&local_envs);
    assert_eq!(local.qmd_with(local.root(), &["embed"], &local_envs).code, 0);
    let expected = ranking(&local, &local_envs);

    // Through the proxy: every kind of transient fault, then success.
    let spec = format!("openai:{model}@http://127.0.0.1:{}/v1", proxy.port);
    let remote_envs =
        [("QMD_EMBED_MODEL", spec.as_str()), ("QMD_OPENAI_API_KEY", "sesame"), ("QMD_OPENAI_TIMEOUT_MS", "1500")];
    let remote = notes(&remote_envs);
    proxy.inject(&[Fault::TooMany, Fault::Fails, Fault::Drop, Fault::Slow(Duration::from_secs(4))]);
    let out = remote.qmd_with(remote.root(), &["embed"], &remote_envs);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains(&format!("Model: {spec}")), "{}", out.stdout);
    // The report names what ran: the server, not this machine's kernels.
    let device = format!("Device: the server at http://127.0.0.1:{}/v1 (OpenAI-compatible)", proxy.port);
    assert!(out.stdout.contains(&device) && !out.stdout.contains("quantized kernels"), "{}", out.stdout);
    assert!(*proxy.seen.lock().unwrap() >= 5, "each fault was met and retried");
    assert_eq!(remote.vectors(&remote_envs), local.vectors(&local_envs), "no vector lost or duplicated");
    let got = ranking(&remote, &remote_envs);
    assert_eq!(got.iter().map(|h| &h.0).collect::<Vec<_>>(), expected.iter().map(|h| &h.0).collect::<Vec<_>>());
    for ((_, a), (_, b)) in got.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-5, "{got:?} vs {expected:?}");
    }

    // Vectors of another dimension than the first answer's (the model's
    // dimension probe): the run fails, names why, stores none.
    let short = notes(&remote_envs);
    proxy.inject(&[Fault::Pass, Fault::ShortVectors]);
    let out = short.qmd_with(short.root(), &["embed"], &remote_envs);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("dimensions"), "{}", out.stderr);
    assert_eq!(short.vectors(&remote_envs), "0 embedded");

    // A server that keeps failing: given up on after the last retry.
    let failing = notes(&remote_envs);
    proxy.inject(&[Fault::Fails; 6]);
    let out = failing.qmd_with(failing.root(), &["embed"], &remote_envs);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("HTTP 500: boom (after 6 tries)"), "{}", out.stderr);

    // Reranking on the server (a Qwen3-Reranker-shaped GGUF): `query`
    // ranks and scores as with the same model run here, a 429 retried.
    let query = ["query", "--json", "--no-expand", "leader election and the log"];
    let local_rerank = [("QMD_RERANK_MODEL", reranker)];
    let expected = local.qmd_with(local.root(), &query, &local_rerank);
    assert_eq!(expected.code, 0, "{}", expected.stderr);
    let rerank_spec = format!("openai:{reranker}@http://127.0.0.1:{}/v1", proxy.port);
    let remote_rerank = [("QMD_RERANK_MODEL", rerank_spec.as_str()), ("QMD_OPENAI_API_KEY", "sesame")];
    let seen = *proxy.seen.lock().unwrap();
    proxy.inject(&[Fault::TooMany]);
    let got = remote.qmd_with(remote.root(), &query, &remote_rerank);
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert!(*proxy.seen.lock().unwrap() >= seen + 2, "the reranker was asked through the proxy, once refused");
    let hits = |out: &str| -> Vec<(String, f64)> {
        let hits: Vec<serde_json::Value> = serde_json::from_str(out).unwrap();
        hits.iter().map(|h| (h["file"].as_str().unwrap().to_string(), h["score"].as_f64().unwrap())).collect()
    };
    let (got, expected) = (hits(&got.stdout), hits(&expected.stdout));
    assert!(!expected.is_empty());
    assert_eq!(got.iter().map(|h| &h.0).collect::<Vec<_>>(), expected.iter().map(|h| &h.0).collect::<Vec<_>>());
    for ((_, a), (_, b)) in got.iter().zip(&expected) {
        assert!((a - b).abs() < 1e-4, "{got:?} vs {expected:?}");
    }

    // Query expansion on a server (chat completions): qmd's messages and
    // sampling go out, the answer is read by qmd's rules.
    let chat_spec = format!("openai:qmd-expansion@http://127.0.0.1:{}/v1", proxy.port);
    let remote_generate = [("QMD_GENERATE_MODEL", chat_spec.as_str()), ("QMD_OPENAI_API_KEY", "sesame")];
    let out = remote.qmd_with(remote.root(), &["query", "--explain", "--no-rerank", "raft leader"], &remote_generate);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    for line in
        ["lex: raft leader election", "vec: how does raft choose its leader", "hyde: In Raft a leader is elected"]
    {
        assert!(all.contains(line), "{line} missing:\n{all}");
    }
    assert!(!all.contains("not an expansion line"), "{all}");
    let chats = proxy.chats.lock().unwrap().clone();
    assert_eq!(chats.len(), 1, "one request");
    assert_eq!(chats[0]["model"], "qmd-expansion");
    assert_eq!(chats[0]["messages"][1]["content"], "/no_think Expand this search query: raft leader");
    assert_eq!((chats[0]["temperature"].as_f64(), chats[0]["max_tokens"].as_u64()), (Some(0.7), Some(600)));
    let again = remote.qmd_with(remote.root(), &["query", "--explain", "--no-rerank", "raft leader"], &remote_generate);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(proxy.chats.lock().unwrap().len(), 1, "the expansion was cached");

    // A wrong key is not retried.
    let wrong_key = [("QMD_EMBED_MODEL", spec.as_str()), ("QMD_OPENAI_API_KEY", "guess")];
    let out = failing.qmd_with(failing.root(), &["embed"], &wrong_key);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("HTTP 401"), "{}", out.stderr);
    assert!(!out.stderr.contains("tries"), "{}", out.stderr);
}
