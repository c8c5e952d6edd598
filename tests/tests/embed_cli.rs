//! `qmd embed`, `vsearch`, `query` and `pull` end to end, with the real
//! all-MiniLM-L6-v2 weights (`scripts/test-weights.sh`) on the CPU, and a
//! local server in the Hugging Face hub's URL layout for `pull`.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Env, Output};
use qmd_tests::models::{cosine, test_model_dir};

fn model_env() -> (String, String) {
    ("QMD_EMBED_MODEL".into(), test_model_dir().to_string_lossy().into_owned())
}

fn run(env: &Env, args: &[&str]) -> Output {
    let (k, v) = model_env();
    env.qmd_with(env.root(), args, &[(&k, &v)])
}

fn vectors(env: &Env) -> u64 {
    let (k, v) = model_env();
    let vectors = env.vectors(&[(&k, &v)]);
    vectors.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("Vectors: {vectors}"))
}

#[test]
fn embed_then_vector_and_hybrid_search() {
    let env = Env::new();
    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.write("notes/bread.md", "# Sourdough\n\nMix flour, water and a starter; let the dough rise overnight.\n");
    env.write("notes/tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let out = run(&env, &["vsearch", "baking bread at home"]).success();
    assert!(out.stdout.contains("No results"), "no vectors yet: {}", out.stdout);
    let out = run(&env, &["embed"]).success();
    assert!(out.stdout.contains("Embedded 3 chunks from 3 documents"), "{}", out.stdout);
    assert_eq!(vectors(&env), 3);
    let again = run(&env, &["embed"]).success();
    assert!(again.stdout.contains("All content hashes already have embeddings"), "{}", again.stdout);

    // Meaning without shared words.
    let out = run(&env, &["vsearch", "--json", "baking bread at home"]).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/bread.md", "{}", out.stdout);
    let out = run(&env, &["vsearch", "--json", "what makes the sea rise", "--min-score", "0.2"]).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/tides.md");
    assert!(hits.iter().all(|h| h["score"].as_f64().unwrap() >= 0.2));

    // The hybrid query fuses BM25 and vector lists.
    let out = run(&env, &["query", "--explain", "--json", "who replicates the log"]).success();
    assert!(out.stderr.contains("vec original"), "{}", out.stderr);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/raft.md");
    let out = run(&env, &["query", "--json", "vec: ocean and moon"]).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/tides.md");

    // A changed document needs embedding again; an unchanged one does not.
    env.write("notes/raft.md", "# Raft\n\nLeaders, terms and log replication, now with snapshots.\n");
    env.ok(&["update"]);
    assert!(run(&env, &["status"]).success().stdout.contains("Pending:  1 need embedding"));
    let out = run(&env, &["embed"]).success();
    assert!(out.stdout.contains("from 1 documents"), "{}", out.stdout);

    // The old raft content's vector and document record stay until cleanup.
    assert_eq!(vectors(&env), 4);
    let dry = run(&env, &["cleanup", "--dry-run"]).success().stdout;
    assert!(dry.starts_with("Dry run — no changes made.\n\nWould remove 1 orphaned embedding chunks\n"), "{dry}");
    assert!(dry.contains("Would remove 1 inactive document records"), "{dry}");
    assert_eq!(vectors(&env), 4, "a dry run changes nothing");
    let out = run(&env, &["cleanup"]).success().stdout;
    assert!(out.contains("✓ Removed 1 orphaned embedding chunks\n✓ Removed 1 inactive document records\n"), "{out}");
    assert_eq!(vectors(&env), 3);
    assert!(run(&env, &["cleanup", "--dry-run"]).success().stdout.contains("No orphaned embeddings to remove"));
    let out = run(&env, &["vsearch", "--json", "baking bread at home"]).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/bread.md", "vectors survive the rewrite: {}", out.stdout);
    assert!(run(&env, &["status"]).success().stdout.contains("Vectors:  3 embedded"));

    // Another model's vectors are refused with the fix.
    let other = env.path("other-model");
    common::copy_dir(&test_model_dir(), &other);
    let other = other.to_string_lossy().into_owned();
    let out = env.qmd_with(env.root(), &["vsearch", "bread"], &[("QMD_EMBED_MODEL", &other)]).failure();
    assert!(out.stderr.contains("Run 'qmd embed -f'"), "{}", out.stderr);
    // Without the model, embed names the fix.
    let out = env.qmd_with(env.root(), &["embed"], &[("QMD_EMBED_MODEL", "acme/absent")]).failure();
    assert!(out.stderr.contains("is not downloaded") && out.stderr.contains("qmd pull"), "{}", out.stderr);
    assert!(out.stderr.contains("point QMD_EMBED_MODEL at a local model directory"), "{}", out.stderr);
}

#[test]
fn embed_killed_midway_resumes_without_duplicates() {
    let env = Env::new();
    let topics = ["harbor", "glacier", "violin", "orchard", "comet", "falcon", "canyon", "lantern"];
    for i in 0..160 {
        let t = topics[i % topics.len()];
        env.write(
            &format!("notes/{i:03}.md"),
            &format!("# Note {i}\n\nNote number {i} is about the {t} and item {}.\n", i * 7919),
        );
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let (k, v) = model_env();
    let mut child = env
        .command(env.root(), &["embed", "--max-docs-per-batch", "8"], &[(&k, &v)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let index = env.cache_home().join("qmd/index.qmdx");
    let deadline = Instant::now() + Duration::from_secs(120);
    // Kill once some batches are committed.
    loop {
        let committed = std::fs::read_dir(&index)
            .map_or(0, |d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("vec-")).count());
        if committed >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "embed made no progress");
        assert!(child.try_wait().unwrap().is_none(), "embed finished before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = vectors(&env);
    assert!((8..160).contains(&before), "{before} vectors after the kill");
    let out = run(&env, &["embed"]).success();
    let resumed = 160 - before;
    assert!(out.stdout.contains(&format!("from {resumed} documents")), "only the rest is embedded: {}", out.stdout);
    assert_eq!(vectors(&env), 160, "one vector per one-chunk document: none duplicated or missing");
    assert!(run(&env, &["status"]).success().stdout.lines().all(|l| !l.contains("Pending:")));
}

/// A tiny hub: `/{repo}/resolve/main/{file}` with ETag = sha256 and Range
/// support; it can cut the first download of a file short.
struct Hub {
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// Sends at most this many bytes of the next GET of this path, then hangs up.
    cut: Mutex<Option<(String, usize)>>,
    /// ETag to announce instead of the real one (to test the checksum).
    fake_etag: Mutex<Option<String>>,
    log: Mutex<Vec<String>>,
}

fn sha256(bytes: &[u8]) -> String {
    qmd_core::document::content_hash(bytes)
}

impl Hub {
    fn start(files: HashMap<String, Vec<u8>>) -> (Arc<Hub>, String) {
        let hub = Arc::new(Hub {
            files: Mutex::new(files),
            cut: Mutex::new(None),
            fake_etag: Mutex::new(None),
            log: Mutex::new(Vec::new()),
        });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = hub.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let hub = served.clone();
                std::thread::spawn(move || hub.serve(stream));
            }
        });
        (hub, url)
    }

    fn serve(&self, mut stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let mut parts = line.split_whitespace();
            let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
            let mut range = None;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(v) = header.to_lowercase().strip_prefix("range: bytes=") {
                    range = v.trim().trim_end_matches('-').parse::<usize>().ok();
                }
            }
            self.log
                .lock()
                .unwrap()
                .push(format!("{method} {path} {}", range.map_or(String::new(), |r| format!("from {r}"))));
            let body = self.files.lock().unwrap().get(&path).cloned();
            let Some(body) = body else {
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
                continue;
            };
            let etag = self.fake_etag.lock().unwrap().clone().unwrap_or_else(|| sha256(&body));
            let start = range.unwrap_or(0).min(body.len());
            let status = if range.is_some() { "206 Partial Content" } else { "200 OK" };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\netag: \"{etag}\"\r\naccept-ranges: bytes\r\n\r\n",
                body.len() - start
            );
            stream.write_all(head.as_bytes()).unwrap();
            if method == "GET" {
                let mut cut = self.cut.lock().unwrap();
                if let Some((p, n)) = cut.as_ref().filter(|(p, _)| *p == path) {
                    let _ = p;
                    let _ = stream.write_all(&body[start..start + n]);
                    *cut = None;
                    return; // hang up mid-body
                }
                stream.write_all(&body[start..]).unwrap();
            }
        }
    }

    fn gets(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().filter(|l| l.starts_with("GET")).cloned().collect()
    }
}

#[test]
fn pull_downloads_resumes_and_checks() {
    let weights: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let files: HashMap<String, Vec<u8>> = [
        ("/acme/mini/resolve/main/config.json", b"{\"model_type\":\"bert\"}".to_vec()),
        ("/acme/mini/resolve/main/tokenizer.json", b"{}".to_vec()),
        ("/acme/mini/resolve/main/model.safetensors", weights.clone()),
        ("/acme/mini/resolve/main/1_Pooling/config.json", b"{\"pooling_mode_mean_tokens\":true}".to_vec()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let (hub, url) = Hub::start(files);
    let env = Env::new();
    let local_reranker = env.path("reranker").to_string_lossy().into_owned();
    let local_generator = env.path("generator.gguf").to_string_lossy().into_owned();
    let envs = [
        ("HF_ENDPOINT", url.as_str()),
        ("QMD_EMBED_MODEL", "acme/mini"),
        ("QMD_RERANK_MODEL", &local_reranker),
        ("QMD_GENERATE_MODEL", &local_generator),
    ];
    let pull = |extra: &[&str]| {
        let mut args = vec!["pull"];
        args.extend(extra);
        env.qmd_with(env.root(), &args, &envs)
    };
    let dir = env.cache_home().join("qmd/models/acme/mini");

    // The first download is cut after 1 MB: pull fails and keeps the part.
    *hub.cut.lock().unwrap() = Some(("/acme/mini/resolve/main/model.safetensors".into(), 1_000_000));
    let out = pull(&[]).failure();
    assert!(out.stderr.contains("run 'qmd pull' again"), "{}", out.stderr);
    assert!(!dir.join("model.safetensors").exists(), "never half-written into place");
    assert_eq!(std::fs::metadata(dir.join("model.safetensors.part")).unwrap().len(), 1_000_000);

    // The next pull resumes from byte 1 000 000 and verifies the sha256.
    let out = pull(&[]).success();
    assert!(hub.gets().iter().any(|g| g.contains("model.safetensors from 1000000")), "{:?}", hub.gets());
    assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), weights);
    assert!(
        out.stdout.contains("acme/mini/model.safetensors ->") && out.stdout.contains("downloaded"),
        "{}",
        out.stdout
    );
    assert!(dir.join("1_Pooling/config.json").is_file(), "optional files that exist are fetched");
    assert!(out.stdout.contains("(local, not downloaded)"), "local models are not downloaded: {}", out.stdout);

    // Unchanged on the hub: only HEAD requests.
    let before = hub.gets().len();
    let out = pull(&[]).success();
    assert_eq!(hub.gets().len(), before, "nothing downloaded again");
    assert!(out.stdout.contains("cached/checked"));

    // A changed file is fetched again; --refresh fetches everything.
    hub.files.lock().unwrap().insert("/acme/mini/resolve/main/tokenizer.json".into(), b"{\"v\":2}".to_vec());
    pull(&[]).success();
    assert_eq!(std::fs::read(dir.join("tokenizer.json")).unwrap(), b"{\"v\":2}");
    assert_eq!(hub.gets().len(), before + 1);

    // A checksum mismatch discards the download and keeps the old file.
    *hub.fake_etag.lock().unwrap() = Some("0".repeat(64));
    let out = pull(&["--refresh"]).failure();
    assert!(out.stderr.contains("checksum mismatch"), "{}", out.stderr);
    assert_eq!(std::fs::read(dir.join("config.json")).unwrap(), b"{\"model_type\":\"bert\"}");

    // A FIFO in a download's part file's place is refused at once (opened
    // to write, with no reader, it blocked forever), a link there is never
    // written through into the file it points at; the error names the part.
    *hub.fake_etag.lock().unwrap() = None;
    hub.files.lock().unwrap().insert("/acme/mini/resolve/main/tokenizer.json".into(), b"{\"v\":3}".to_vec());
    let part = dir.join("tokenizer.json.part");
    // The part is of the hub's version, so pull resumes it (another
    // version's part would be removed first).
    std::fs::write(dir.join("tokenizer.json.part.etag"), sha256(b"{\"v\":3}")).unwrap();
    let mine = env.path("mine.json");
    std::fs::write(&mine, "keep").unwrap();
    for planted in ["fifo", "link"] {
        if planted == "fifo" {
            crate::common::mkfifo(&part);
        } else {
            std::os::unix::fs::symlink(&mine, &part).unwrap();
        }
        let out = crate::common::qmd_within(&env, &["pull"], &envs, std::time::Duration::from_secs(30));
        let what = if planted == "fifo" { "a FIFO" } else { "a link" };
        assert!(out.code != 0 && out.stderr.contains("tokenizer.json.part") && out.stderr.contains(what), "{out:?}");
        std::fs::remove_file(&part).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "keep");
    assert_eq!(std::fs::read(dir.join("tokenizer.json")).unwrap(), b"{\"v\":2}", "the cached file is kept");
    pull(&[]).success();
    assert_eq!(std::fs::read(dir.join("tokenizer.json")).unwrap(), b"{\"v\":3}");
}

/// Appends `models:` to the index's config (qmd's `models.<role>`).
fn configure_models(env: &Env, models: &str) {
    let config = env.config_home().join("qmd/index.yml");
    let text = std::fs::read_to_string(&config).expect("index.yml written by collection add");
    let text = text.split("models:\n").next().unwrap();
    std::fs::write(&config, format!("{text}models:\n{models}")).unwrap();
}

#[test]
fn models_come_from_index_yml_and_run_on_the_chosen_device() {
    let env = Env::new();
    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.write("notes/tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let model = test_model_dir().to_string_lossy().into_owned();
    configure_models(&env, &format!("  embed: {model}\n"));
    // index.yml wins over the environment (qmd's order).
    let absent = ("QMD_EMBED_MODEL", "acme/absent");
    let qmd = |args: &[&str], device: &str| env.qmd_with(env.root(), args, &[absent, ("QMD_DEVICE", device)]);

    let status = qmd(&["status"], "gpu").success().stdout;
    assert!(status.contains(&format!("Embedding: {model}")), "{status}");
    // `status` names the choice without opening a device.
    assert!(status.contains("Device:    GPU, any adapter, for every job (QMD_DEVICE=gpu)"), "{status}");
    let cpu = env.qmd_with(env.root(), &["--no-gpu", "status"], &[("QMD_DEVICE", "gpu")]).success().stdout;
    assert!(cpu.contains("Device:    CPU (forced by --no-gpu / QMD_FORCE_CPU)"), "{cpu}");

    // Vectors embedded on the GPU backend, searched on the CPU one and on
    // the GPU again: the same documents at the same scores.
    let out = qmd(&["embed"], "gpu").success();
    assert!(out.stdout.contains("Embedded 2 chunks from 2 documents"), "{}", out.stdout);
    assert!(out.stdout.contains("  Device: GPU: "), "a wgpu adapter (lavapipe without a GPU): {}", out.stdout);
    let search = |device: &str| {
        let out = qmd(&["vsearch", "--json", "--min-score", "0", "what makes the sea rise"], device).success();
        let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
        hits.iter().map(|h| (h["file"].as_str().unwrap().to_string(), h["score"].as_f64().unwrap())).collect::<Vec<_>>()
    };
    let (on_gpu, on_cpu) = (search("gpu"), search("cpu"));
    // Without a runtime dir (ssh, cron, containers) Mesa's drivers printed
    // "error: XDG_RUNTIME_DIR is invalid or not set" on every device open.
    let mut quiet = env.command(env.root(), &["vsearch", "sea"], &[absent, ("QMD_DEVICE", "gpu")]);
    let quiet = Output::from(quiet.env_remove("XDG_RUNTIME_DIR").output().unwrap()).success();
    assert!(!quiet.stderr.contains("XDG_RUNTIME_DIR"), "driver noise reached the user: {}", quiet.stderr);
    assert_eq!(on_gpu[0].0, "qmd://notes/tides.md");
    assert_eq!(on_gpu.len(), on_cpu.len());
    // Scores print at two decimals: the GPU's f32 activations and the
    // CPU's Q8_0 ones (cosine 0.9995 apart) can fall either side of a
    // rounding edge, one step and no more.
    for (g, c) in on_gpu.iter().zip(&on_cpu) {
        assert_eq!(g.0, c.0);
        assert!((g.1 - c.1).abs() <= 0.011, "{on_gpu:?} vs {on_cpu:?}");
    }

    // A device name that means nothing is named in the error.
    let out = qmd(&["embed", "-f"], "tpu").failure();
    assert!(out.stderr.contains("QMD_DEVICE: unknown device \"tpu\""), "{}", out.stderr);
}

#[test]
fn doctor_verifies_the_index_and_re_embeds_a_sample() {
    let env = Env::new();
    let out = run(&env, &["doctor"]).success().stdout;
    assert!(out.contains("⚠ index config: no collections configured. Next: `qmd collection add .`"), "{out}");
    assert!(out.contains("Recommended next step"), "{out}");

    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.write("notes/bread.md", "# Sourdough\n\nMix flour, water and a starter.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let out = run(&env, &["doctor"]).success().stdout;
    assert!(out.contains("⚠ embedding freshness: 2 active documents need embeddings. Next: `qmd embed`"), "{out}");
    assert!(out.contains("✓ embedding fingerprints: no vectors yet"), "{out}");
    run(&env, &["embed"]).success();
    let out = run(&env, &["doctor"]).success().stdout;
    for line in [
        "✓ index: 2 documents in 1 segments, 2 vector rows",
        "✓ index config: 1 collection configured",
        "✓ embedding freshness: all active documents have vectors",
        "✓ embedding fingerprints: vectors on the current fingerprint",
        "✓ embedding vector sample: 2 documents re-embedded, max cosine distance",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }

    // Another model: the vectors are named as stale, with the fix.
    let other = env.path("other-model");
    common::copy_dir(&test_model_dir(), &other);
    let other = other.to_string_lossy().into_owned();
    let out = env.qmd_with(env.root(), &["doctor"], &[("QMD_EMBED_MODEL", &other)]).success().stdout;
    assert!(out.contains("⚠ embedding fingerprints: vectors are from") && out.contains("`qmd embed -f`"), "{out}");

    // A flipped byte in the stored vectors is found and the repair named.
    let index = env.cache_home().join("qmd/index.qmdx");
    let file = std::fs::read_dir(&index)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "qvec"))
        .expect("a vector file");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 8;
    bytes[at] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let out = run(&env, &["doctor"]).success().stdout;
    assert!(out.contains("⚠ index: ") && out.contains("Next: `qmd update --rebuild`"), "{out}");
}

#[test]
fn embed_timeout_stops_between_batches_and_the_next_run_resumes() {
    let env = Env::new();
    for i in 0..4 {
        env.write(&format!("notes/n{i}.md"), &format!("# Note {i}\n\nThe walrus number {i} sleeps on the ice.\n"));
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let bad = run(&env, &["embed", "--timeout", "-1"]).failure();
    assert!(bad.stderr.contains("--timeout must be a non-negative number of minutes (0 = no limit)"), "{}", bad.stderr);
    let bad = run(&env, &["embed", "--chunk-strategy", "ast"]).failure();
    assert!(bad.stderr.contains(r#"--chunk-strategy must be "auto" or "regex" (got "ast")"#), "{}", bad.stderr);

    // A cap shorter than loading the model: stopped before the first batch.
    let out = run(&env, &["embed", "--timeout", "0.00001", "--max-docs-per-batch", "1"]).success().stdout;
    assert!(out.contains("⚠ Stopped at the --timeout of 0.00001 minutes: 0 of 4 documents embedded."), "{out}");
    assert_eq!(vectors(&env), 0);
    let out = run(&env, &["embed", "--timeout", "0", "--chunk-strategy", "auto"]).success().stdout;
    assert!(out.contains("Embedded 4 chunks from 4 documents"), "{out}");
    assert_eq!(vectors(&env), 4);
}

/// qmd's GGUF embedding URIs and local `.gguf` paths: embedded by the
/// quantized kernels; a file qmd already downloaded into the shared model
/// cache is used as it is; `pull` fetches one that is missing.
#[test]
fn gguf_embedding_models_from_paths_qmd_uris_and_pull() {
    let gguf = qmd_tests::gguf::fixtures().file("minilm-q8_0.gguf");
    let env = Env::new();
    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.write("notes/bread.md", "# Sourdough\n\nMix flour, water and a starter; let the dough rise overnight.\n");
    env.write("notes/tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let path = gguf.to_string_lossy().into_owned();
    let with_path = [("QMD_EMBED_MODEL", path.as_str())];
    let out = env.qmd_with(env.root(), &["embed"], &with_path).success();
    assert!(out.stdout.contains("Embedded 3 chunks from 3 documents"), "{}", out.stdout);
    let out = env.qmd_with(env.root(), &["vsearch", "--json", "baking bread at home"], &with_path).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/bread.md", "{}", out.stdout);
    // QMD_KERNELS caps the kernels' instruction set: the portable loops
    // embed the same; a level it does not know is an error naming it.
    let portable = [("QMD_EMBED_MODEL", path.as_str()), ("QMD_KERNELS", "portable")];
    let out = env.qmd_with(env.root(), &["embed", "-f"], &portable).success();
    assert!(out.stdout.contains("Device: CPU (quantized kernels, portable code)"), "{}", out.stdout);
    let out = env.qmd_with(env.root(), &["vsearch", "--json", "baking bread at home"], &with_path).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/bread.md", "{}", out.stdout);
    let out = env.qmd_with(env.root(), &["status"], &[("QMD_KERNELS", "sse9")]).failure();
    assert!(
        out.stderr.contains("QMD_KERNELS") && out.stderr.contains("\"sse9\"") && out.stderr.contains("avx512-vnni"),
        "{}",
        out.stderr
    );

    // qmd's URI, its file already in the cache under qmd's name: no
    // download. Vectors are tied to the model's name: a new name needs -f.
    let uri = "hf:acme/minilm-GGUF/minilm-q8_0.gguf";
    let cache = env.cache_home().join("qmd/models");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(&gguf, cache.join("hf_acme_minilm-q8_0.gguf")).unwrap();
    configure_models(&env, &format!("  embed: {uri}\n"));
    let offline = [("HF_ENDPOINT", "http://127.0.0.1:9")];
    let status = env.qmd_with(env.root(), &["status"], &offline).success().stdout;
    assert!(status.contains(&format!("Embedding: {uri}")), "{status}");
    let out = env.qmd_with(env.root(), &["embed"], &offline).failure();
    assert!(out.stderr.contains("Embedding model changed"), "{}", out.stderr);
    let out = env.qmd_with(env.root(), &["embed", "-f"], &offline).success();
    assert!(out.stdout.contains("Embedded 3 chunks"), "re-embedded for the new model: {}", out.stdout);
    let out = env.qmd_with(env.root(), &["query", "--json", "who replicates the log"], &offline).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/raft.md", "{}", out.stdout);

    // Another URI, not cached: a clear message, then `pull` downloads it.
    let bytes = std::fs::read(&gguf).unwrap();
    let files: HashMap<String, Vec<u8>> =
        [("/acme/mini-GGUF/resolve/main/mini-q8_0.gguf".to_string(), bytes.clone())].into_iter().collect();
    let (hub, url) = Hub::start(files);
    configure_models(&env, "  embed: hf:acme/mini-GGUF/mini-q8_0.gguf\n");
    let local_reranker = env.path("reranker").to_string_lossy().into_owned();
    let local_generator = env.path("generator.gguf").to_string_lossy().into_owned();
    let hub_env = [
        ("HF_ENDPOINT", url.as_str()),
        ("QMD_RERANK_MODEL", local_reranker.as_str()),
        ("QMD_GENERATE_MODEL", local_generator.as_str()),
    ];
    let out = env.qmd_with(env.root(), &["vsearch", "tides"], &hub_env).failure();
    assert!(out.stderr.contains("is not downloaded") && out.stderr.contains("qmd pull"), "{}", out.stderr);
    let out = env.qmd_with(env.root(), &["pull"], &hub_env).success();
    assert!(out.stdout.contains("hf:acme/mini-GGUF/mini-q8_0.gguf ->"), "{}", out.stdout);
    assert_eq!(std::fs::read(cache.join("hf_acme_mini-GGUF_mini-q8_0.gguf")).unwrap(), bytes);
    assert_eq!(hub.gets().len(), 1, "{:?}", hub.gets());
    env.qmd_with(env.root(), &["embed", "-f"], &hub_env).success();
    let out = env.qmd_with(env.root(), &["vsearch", "--json", "what makes the sea rise"], &hub_env).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/tides.md", "{}", out.stdout);

    // A damaged file is named in the error, not a crash.
    let broken = env.path("broken.gguf");
    std::fs::write(&broken, &bytes[..bytes.len() / 2]).unwrap();
    let broken = broken.to_string_lossy().into_owned();
    configure_models(&env, &format!("  embed: {broken}\n"));
    let out = env.qmd_with(env.root(), &["vsearch", "tides"], &[]).failure();
    assert!(out.stderr.contains("broken.gguf") && out.stderr.contains("truncated"), "{}", out.stderr);
}

/// An EmbeddingGemma-architecture GGUF (random weights) end to end: the
/// vectors `embed` stores and the query vectors `vsearch` makes are
/// llama.cpp's for qmd's prompt formats, `title: {title} | text: {chunk}`
/// and `task: search result | query: {query}`: each document's score is
/// the cosine llama.cpp gives those texts (the best of the query and
/// vsearch's "Information about …" variant), to the two decimals printed.
#[test]
fn gemma_gguf_embeds_with_qmd_prompt_formats() {
    let fixtures = qmd_tests::gguf::fixtures();
    let gguf = fixtures.file("gemma-q8_0.gguf");
    let env = Env::new();
    let docs = [
        ("raft.md", "Raft", "# Raft\n\nA leader is elected and replicates the log to followers.\n"),
        ("bread.md", "Sourdough", "# Sourdough\n\nMix flour, water and a starter; let the dough rise.\n"),
        ("tides.md", "Tides", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides.\n"),
        ("plain.md", "plain", "No heading here, so the title is the file's name.\n"),
    ];
    for (name, _, body) in docs {
        env.write(&format!("notes/{name}"), body);
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let path = gguf.to_string_lossy().into_owned();
    let model = [("QMD_EMBED_MODEL", path.as_str())];
    let out = env.qmd_with(env.root(), &["embed"], &model).success();
    assert!(out.stdout.contains("Embedded 4 chunks from 4 documents"), "{}", out.stdout);
    assert!(out.stdout.contains("Device: CPU (quantized kernels, "), "{}", out.stdout);
    let query = "how do tides work";
    let args = ["vsearch", "--json", "--min-score", "0", "-n", "10", query];
    let out = env.qmd_with(env.root(), &args, &model).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits.len(), docs.len(), "{}", out.stdout);

    let queries = [
        format!("task: search result | query: {query}"),
        format!("task: search result | query: Information about {query}"),
    ];
    let documents: Vec<String> = docs.iter().map(|(_, title, body)| format!("title: {title} | text: {body}")).collect();
    let bare: Vec<String> = docs.iter().map(|(_, _, body)| body.to_string()).collect();
    let texts: Vec<&String> = queries.iter().chain(&documents).chain(&bare).collect();
    let reference = fixtures.llama("embed", &gguf, &serde_json::json!(texts));
    let vector = |i: usize| -> Vec<f32> { serde_json::from_value(reference["embeddings"][i].clone()).unwrap() };
    let best = |doc: usize| (0..2).map(|q| cosine(&vector(q), &vector(doc))).fold(f64::MIN, f64::max);
    let mut distinguished = false;
    for (d, (name, _, _)) in docs.iter().enumerate() {
        let hit = hits.iter().find(|h| h["file"] == format!("qmd://notes/{name}")).expect("every document found");
        let score = hit["score"].as_f64().unwrap();
        let expected = best(2 + d);
        assert!((score - expected).abs() <= 0.006, "{name}: score {score}, llama.cpp's cosine {expected:.4}");
        // Without the document prompt the score would be elsewhere.
        distinguished |= (score - best(2 + docs.len() + d)).abs() > 0.02;
    }
    assert!(distinguished, "the prompt changes the vectors enough for this check to mean something");
}

/// A Qwen3-Reranker-architecture GGUF (random weights) reranks `query`
/// results end to end, named by qmd's URI in `index.yml` with its file
/// already where qmd keeps it: each result's rerank score is llama.cpp's
/// ranking-context score (qmd's `rankAll`) for the query and the chunk
/// qmd would send, to the four decimals `--explain` prints. (The F32
/// fixture stands in for the Q8_0 file the URI names: with F32 weights the
/// two runtimes agree to 1e-3, where Q8_0's rounding of every product's
/// inputs lets them drift apart by a few thousandths; see tests/gguf.rs.)
#[test]
fn gguf_reranker_scores_query_results_as_llama_cpp() {
    let fixtures = qmd_tests::gguf::fixtures();
    let gguf = fixtures.file("qwen3-reranker-f32.gguf");
    let env = Env::new();
    let docs = [
        ("raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n"),
        ("logs.md", "# Logs\n\nThe leader appends entries to its log before replicating them.\n"),
        ("tides.md", "# Tides\n\nThe moon's gravity pulls the oceans; a leader of the tide tables.\n"),
    ];
    for (name, body) in docs {
        env.write(&format!("notes/{name}"), body);
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let uri = "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf";
    let cache = env.cache_home().join("qmd/models");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(&gguf, cache.join("hf_ggml-org_qwen3-reranker-0.6b-q8_0.gguf")).unwrap();
    // qmd's three default URIs as qmd writes them into index.yml: the
    // embedding and generation models are not downloaded here.
    let embed = "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf";
    let generate = "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf";
    configure_models(&env, &format!("  embed: {embed}\n  rerank: {uri}\n  generate: {generate}\n"));
    let offline = [("HF_ENDPOINT", "http://127.0.0.1:9")];
    let status = env.qmd_with(env.root(), &["status"], &offline).success().stdout;
    assert!(status.contains(&format!("Reranking: {uri}")), "{status}");
    assert!(status.contains(&format!("Embedding: {embed}")) && status.contains("not downloaded"), "{status}");
    let generation = status.lines().find(|l| l.contains("Generation:")).unwrap_or_default();
    assert!(generation.contains(generate) && generation.contains("not downloaded"), "{status}");

    let query = "leader";
    let out = env.qmd_with(env.root(), &["query", "--explain", "--json", query], &offline).success();
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(hits.len(), 3, "{}", out.stdout);
    let bodies: Vec<&str> = docs.iter().map(|(_, body)| *body).collect();
    let reference = fixtures.llama("rank", &gguf, &serde_json::json!({"query": query, "documents": bodies}));
    for (i, (name, _)) in docs.iter().enumerate() {
        let expected = reference["scores"][i].as_f64().unwrap();
        let line = out.stderr.lines().find(|l| l.starts_with(&format!("qmd://notes/{name} "))).unwrap();
        let shown: f64 = line.rsplit("rerank ").next().unwrap().trim().parse().unwrap();
        assert!((shown - expected).abs() <= 1.5e-3, "{name}: rerank {shown} vs llama.cpp {expected}\n{}", out.stderr);
    }
}

/// The index's record of how code was chunked, and the chunk positions
/// stored for the content of `file` (a path in the `code` collection), read
/// from the index files as the engine reads them.
fn stored_chunks(env: &Env, file: &str) -> (qmd_core::chunk::ChunkStrategy, Vec<u32>) {
    use qmd_core::Directory;
    let index_dir = env.cache_home().join("qmd/index.qmdx");
    let ram = qmd_core::RamDirectory::new();
    for entry in std::fs::read_dir(&index_dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            ram.write(&entry.file_name().to_string_lossy(), &std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
    let index = qmd_core::index::Index::open(std::rc::Rc::new(ram)).unwrap();
    let hash = index.catalog().unwrap().iter().find(|e| e.record.path == file).expect("indexed").record.hash.clone();
    let set = index.vectors().unwrap().expect("vectors");
    let positions = set
        .segments
        .iter()
        .flat_map(|s| s.contents.iter().filter(|c| c.hash == hash).map(move |c| (s, c)))
        .flat_map(|(s, c)| s.content_vectors(c).unwrap().into_iter().map(|v| v.pos))
        .collect();
    (set.manifest.chunk_strategy, positions)
}

/// `embed --chunk-strategy auto` cuts a code file at its declarations, as
/// the engine's chunker does, and records the strategy in the index; a
/// plain `embed` keeps it; switching re-embeds the code files only.
#[test]
fn auto_chunk_strategy_cuts_code_at_declarations_and_switching_rechunks() {
    use qmd_core::chunk::{ChunkStrategy, Declarations, TokenChunking};
    let env = Env::new();
    let python: String = (0..30)
        .map(|i| {
            format!(
                "def season_{i}(garden):\n    \"\"\"Plant the seeds of season {i} in the garden beds, water them \
                 every morning and note which ones sprout first.\"\"\"\n    beds = garden.beds({i})\n    \
                 return [bed.plant() for bed in beds]\n\n\n"
            )
        })
        .collect();
    env.write("code/garden.py", &python);
    env.write("code/notes.md", "# Notes\n\nThe greenhouse opens in March.\n");
    env.ok(&["collection", "add", &env.arg("code"), "--name", "code", "--mask", "**/*.{py,md}"]);
    let expected = |strategy| -> Vec<u32> {
        let declarations = Declarations::of(&python, "garden.py", strategy).unwrap();
        let chunks = TokenChunking::for_window(256).first_pass(&python, 3.0, &declarations);
        chunks.iter().map(|c| c.pos as u32).collect()
    };
    let (auto, regex) = (expected(ChunkStrategy::Auto), expected(ChunkStrategy::Regex));
    assert_ne!(auto, regex, "the test file must be cut apart by the two strategies");
    let chars: Vec<char> = python.chars().collect();
    let ends_on_def = |positions: &[u32]| {
        let overlap = TokenChunking::for_window(256).overlap * 3;
        positions[1..].iter().all(|&p| chars[p as usize + overlap..].starts_with(&['d', 'e', 'f']))
    };
    assert!(ends_on_def(&auto) && !ends_on_def(&regex), "auto's chunks end where a function starts");

    let out = run(&env, &["embed", "--chunk-strategy", "auto"]).success().stdout;
    assert!(out.contains("from 2 documents") && !out.contains("split again"), "{out}");
    assert_eq!(stored_chunks(&env, "garden.py"), (ChunkStrategy::Auto, auto.clone()));

    let out = run(&env, &["embed"]).success().stdout;
    assert!(out.contains("All content hashes already have embeddings"), "a plain embed keeps auto: {out}");
    let status = run(&env, &["status"]).success().stdout;
    assert!(status.contains("Chunking: auto (code files cut at their declarations)"), "{status}");

    let out = run(&env, &["embed", "--chunk-strategy", "regex"]).success().stdout;
    assert!(out.contains("Chunk strategy changed: 1 code files"), "{out}");
    assert!(out.contains("from 1 documents"), "the markdown file keeps its vectors: {out}");
    assert_eq!(stored_chunks(&env, "garden.py"), (ChunkStrategy::Regex, regex));
    assert!(!run(&env, &["status"]).success().stdout.contains("Chunking:"), "regex, as qmd, says nothing");

    // query reads the flag too, with qmd's error for other values.
    let out = run(&env, &["query", "--no-expand", "--chunk-strategy", "auto", "seeds that sprout first"]).success();
    assert!(out.stdout.contains("qmd://code/garden.py"), "{}", out.stdout);
    let bad = run(&env, &["query", "--chunk-strategy", "tree", "seeds"]).failure();
    assert!(bad.stderr.contains(r#"--chunk-strategy must be "auto" or "regex" (got "tree")"#), "{}", bad.stderr);

    // The collection's own `chunk_strategy:` wins over the flag; setting it
    // re-embeds its code, and status shows it.
    let config = env.config_home().join("qmd/index.yml");
    let yml = std::fs::read_to_string(&config).unwrap();
    let keyed = |value: &str| yml.replace("    pattern:", &format!("    chunk_strategy: {value}\n    pattern:"));
    std::fs::write(&config, keyed("auto")).unwrap();
    let out = run(&env, &["embed", "--chunk-strategy", "regex"]).success().stdout;
    assert!(out.contains("Chunk strategy changed: 1 code files"), "{out}");
    assert_eq!(stored_chunks(&env, "garden.py"), (ChunkStrategy::Regex, auto), "the index's default stays regex");
    let status = run(&env, &["status"]).success().stdout;
    assert!(status.contains("Chunking: auto (its chunk_strategy in index.yml)"), "{status}");
    std::fs::write(&config, keyed("tree")).unwrap();
    let bad = run(&env, &["status"]).failure();
    let refusal = r#"index.yml: collection 'code': chunk_strategy must be "auto" or "regex" (got tree)"#;
    assert!(bad.stderr.contains(refusal), "{}", bad.stderr);
}
