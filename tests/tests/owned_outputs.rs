//! What commands that write files outside the index may touch, and what
//! they report (issue 42): a model id from outside never becomes a path
//! out of the model cache (`qmd pull`); a folder is a command's own only
//! when its marker proves it, and only what that marker lists is removed
//! (`qmd edge build`, `qmd site build`, `qmd skill install`); and what
//! `qmd edge build` reports is the generation it copied.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Env;

/// Every file under `dir` (links as their target's name) with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn visit(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let name = format!("{rel}{}", entry.file_name().to_string_lossy());
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.insert(format!("{name}/"), Vec::new());
                visit(&entry.path(), &format!("{name}/"), out);
            } else if kind.is_symlink() {
                out.insert(name, fs::read_link(entry.path()).unwrap().to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(name, fs::read(entry.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    visit(dir, "", &mut out);
    out
}

/// A hub that answers every request with a small file (so a `pull` that
/// got that far would write), recording each request line.
fn permissive_hub() -> (Arc<Mutex<Vec<String>>>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            seen.lock().unwrap().push(line.trim().to_string());
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
            }
            let body = if line.starts_with("HEAD") { "" } else { "{\"hub\":1}" };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nETag: \"e\"\r\nConnection: close\r\n\r\n{body}"
            );
        }
    });
    (log, url)
}

#[test]
fn pull_refuses_a_model_id_that_leaves_the_model_cache() {
    let env = notes_index(&[("a.md", "# A\n\nalpha\n")]);
    // The model cache is <root>/xdg-cache/qmd/models: five levels up from
    // models/a/b is the root.
    let victim = env.path("victim");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("config.json"), "mine").unwrap();
    let before = tree(env.root());
    let (log, url) = permissive_hub();
    let local = [("QMD_RERANK_MODEL", "./no-reranker"), ("QMD_GENERATE_MODEL", "./no-generator.gguf")];
    for id in [
        "hf:a/b/../../../../../victim",
        "a/b/../../../../../victim",
        "https://huggingface.co/a/b/../../../../../victim",
        "hf:a/b/../../../../../victim/x.gguf",
        "hf:a/b/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/victim",
    ] {
        let envs = [("HF_ENDPOINT", url.as_str()), ("QMD_EMBED_MODEL", id), local[0], local[1]];
        let out = env.qmd_with(env.root(), &["pull"], &envs).failure();
        assert!(
            out.stderr.contains("not a Hugging Face model id") && out.stderr.contains(&format!("\"{id}\"")),
            "{id}: {}",
            out.stderr
        );
        // Every use of the model says the same, and none reads a path.
        let out = env.qmd_with(env.root(), &["embed"], &envs).failure();
        assert!(out.stderr.contains("not a Hugging Face model id"), "{id}: {}", out.stderr);
        // `status` says so too, rather than "not downloaded".
        let out = env.qmd_with(env.root(), &["status"], &envs).success();
        let line = out.stdout.lines().find(|l| l.trim_start().starts_with("Embedding:")).unwrap_or_default();
        assert!(line.contains("not usable") && line.contains("not a Hugging Face model id"), "{id}: {line}");
    }
    // From the user's config too (`models:` in index.yml).
    let config = env.config_home().join("qmd/index.yml");
    let collections = fs::read_to_string(&config).unwrap();
    fs::write(&config, format!("models:\n  embed: \"hf:a/b/../../../../../victim\"\n{collections}")).unwrap();
    let envs = [("HF_ENDPOINT", url.as_str()), local[0], local[1]];
    let out = env.qmd_with(env.root(), &["pull"], &envs).failure();
    assert!(out.stderr.contains("not a Hugging Face model id"), "{}", out.stderr);
    fs::write(&config, collections).unwrap();

    assert!(log.lock().unwrap().is_empty(), "refused before any request: {:?}", log.lock().unwrap());
    assert_eq!(fs::read_to_string(victim.join("config.json")).unwrap(), "mine");
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 1, "nothing written beside it");
    let after = tree(env.root());
    let new: Vec<&String> = after
        .keys()
        .filter(|k| !before.contains_key(*k) && !k.starts_with("xdg-cache/") && !k.starts_with("xdg-config/"))
        .collect();
    assert!(new.is_empty(), "written outside the caches: {new:?}");
}

/// An index of `notes/` with the given documents.
fn notes_index(docs: &[(&str, &str)]) -> Env {
    let env = Env::new();
    for (name, text) in docs {
        env.write(&format!("notes/{name}"), text);
    }
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    env
}

fn edge_build(env: &Env, out: &Path) -> common::Output {
    env.qmd(&["edge", "build", "--keyword-only", "--out", &out.to_string_lossy()])
}

/// The `N` of edge build's `Wrote …: N documents …` line.
#[track_caller]
fn reported_documents(stderr: &str) -> u32 {
    let line = stderr.lines().find(|l| l.starts_with("Wrote ")).unwrap_or_else(|| panic!("no Wrote line: {stderr}"));
    let counted = line.rsplit_once(": ").and_then(|(_, rest)| rest.split(' ').next()?.parse().ok());
    counted.unwrap_or_else(|| panic!("{line}"))
}

/// `qmd status`'s document count of a built folder's snapshot.
#[track_caller]
fn snapshot_documents(env: &Env, out: &Path) -> u32 {
    let (index, config) = (out.join("index"), out.join("config"));
    let envs = [("INDEX_PATH", index.to_str().unwrap()), ("QMD_CONFIG_DIR", config.to_str().unwrap())];
    let status = env.qmd_with(env.root(), &["status"], &envs).success().stdout;
    let line = status.lines().find_map(|l| l.trim().strip_prefix("Total:")).unwrap_or_else(|| panic!("{status}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

fn marker(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(out.join(".qmd-owned")).expect("marker")).unwrap()
}

#[test]
fn edge_build_refuses_a_planted_component_beside_the_users_folders() {
    let env = notes_index(&[("a.md", "# A\n\nalpha\n")]);
    let out = env.path("mine");
    fs::create_dir_all(out.join("config")).unwrap();
    fs::create_dir_all(out.join("models/embed")).unwrap();
    fs::write(out.join("config/index.yml"), "collections: {}\n# mine\n").unwrap();
    fs::write(out.join("models/embed/model.safetensors"), "my weights").unwrap();
    fs::write(out.join("models/notes.md"), "mine").unwrap();
    fs::write(out.join("qmd-edge.wasm"), "").unwrap();
    let before = tree(&out);
    let refused = edge_build(&env, &out).failure();
    assert!(refused.stderr.contains("not empty") && refused.stderr.contains(".qmd-owned"), "{}", refused.stderr);
    assert_eq!(tree(&out), before, "the user's folders survive byte for byte");
}

#[test]
fn edge_build_replaces_its_own_earlier_build_and_only_that() {
    let env = notes_index(&[("a.md", "# A\n\nalpha\n")]);
    let out = env.path("edge");
    let first = edge_build(&env, &out).success();
    assert_eq!(reported_documents(&first.stderr), 1);
    let listed: Vec<String> = serde_json::from_value(marker(&out)["files"].clone()).unwrap();
    assert_eq!(marker(&out)["owner"], "qmd edge build");
    for part in ["qmd-edge.wasm", "index/manifest.json", "config/index.yml", "models/models.json"] {
        assert!(listed.iter().any(|f| f == part), "{part} listed: {listed:?}");
    }
    let first_files = tree(&out);
    fs::write(out.join("config/README.md"), "the user's").unwrap();

    env.write("notes/b.md", "# B\n\nbravo\n");
    env.ok(&["update"]);
    let second = edge_build(&env, &out).success();
    assert_eq!(reported_documents(&second.stderr), 2);
    assert_eq!(snapshot_documents(&env, &out), 2);
    let manifest = fs::read(env.cache_home().join("qmd/index.qmdx/manifest.json")).unwrap();
    assert_eq!(fs::read(out.join("index/manifest.json")).unwrap(), manifest, "the index as it is now");
    assert_eq!(fs::read_to_string(out.join("config/README.md")).unwrap(), "the user's", "unlisted: kept");
    // What is there is what the marker lists (and the user's file): the
    // first build's stale segments are gone.
    let listed: Vec<String> = serde_json::from_value(marker(&out)["files"].clone()).unwrap();
    let files: Vec<String> =
        tree(&out).into_keys().filter(|f| !f.ends_with('/') && f != ".qmd-owned" && f != "config/README.md").collect();
    assert_eq!(files, listed);
    assert_ne!(tree(&out), first_files);
}

#[test]
fn a_forged_marker_removes_nothing_outside_and_nothing_unlisted() {
    let env = notes_index(&[("a.md", "# A\n\nalpha\n")]);
    let victim = env.path("victim");
    fs::create_dir_all(victim.join("sub")).unwrap();
    fs::write(victim.join("sub/keep.txt"), "keep").unwrap();
    fs::write(victim.join("qmd-edge.wasm"), "keep").unwrap();
    let out = env.path("edge");
    fs::create_dir_all(out.join("index")).unwrap();
    fs::write(out.join("index/mine.txt"), "mine").unwrap();
    let abs = victim.join("sub/keep.txt");
    let forged = serde_json::json!({
        "owner": "qmd edge build",
        "files": ["../victim/sub/keep.txt", "../victim/qmd-edge.wasm", "../victim", abs.to_str().unwrap(),
                  "index/../../victim/sub/keep.txt", "index\\..\\..\\victim", ""],
    });
    fs::write(out.join(".qmd-owned"), forged.to_string()).unwrap();
    let victim_before = tree(&victim);
    edge_build(&env, &out).success();
    assert_eq!(tree(&victim), victim_before);
    assert_eq!(fs::read_to_string(out.join("index/mine.txt")).unwrap(), "mine");
    let listed = marker(&out)["files"].to_string();
    assert!(!listed.contains("victim") && !listed.contains(".."), "{listed}");
}

#[test]
fn edge_build_reports_the_generation_it_copies() {
    // Two generations of one index: one document, then four.
    let env = notes_index(&[("a.md", "# A\n\nalpha\n")]);
    let index = env.cache_home().join("qmd/index.qmdx");
    let save = |to: &str| {
        let to = env.path(to);
        fs::create_dir_all(&to).unwrap();
        for entry in fs::read_dir(&index).unwrap().flatten().filter(|e| e.file_name() != ".lock") {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
        to
    };
    let restore = |from: &PathBuf| {
        for entry in fs::read_dir(&index).unwrap().flatten().filter(|e| e.file_name() != ".lock") {
            fs::remove_file(entry.path()).unwrap();
        }
        let mut names: Vec<_> = fs::read_dir(from).unwrap().flatten().map(|e| e.file_name()).collect();
        // The manifest last, as a commit writes it.
        names.sort_by_key(|n| n == "manifest.json");
        for name in names {
            fs::copy(from.join(&name), index.join(&name)).unwrap();
        }
    };
    let small = save("gen-small");
    for name in ["b", "c", "d"] {
        env.write(&format!("notes/{name}.md"), &format!("# {name}\n\ntext of {name}\n"));
    }
    env.ok(&["update"]);
    let big = save("gen-big");
    restore(&small);

    // A writer holds the lock; edge build starts and waits for it; the
    // writer commits the bigger generation and lets go.
    let lock = fs::OpenOptions::new().write(true).create(true).truncate(false).open(index.join(".lock")).unwrap();
    lock.lock().unwrap();
    let out = env.path("edge");
    let mut child = env
        .command(env.root(), &["edge", "build", "--keyword-only", "--out", &out.to_string_lossy()], &[])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if line.contains("Waiting for another qmd process") {
                let _ = tx.send(None);
            }
            seen.push_str(&line);
        }
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        let _ = tx.send(Some(seen + &rest));
    });
    let waiting = rx.recv_timeout(Duration::from_secs(60)).expect("edge build never waited for the lock");
    assert!(waiting.is_none(), "edge build finished without waiting: {waiting:?}");
    restore(&big);
    lock.unlock().unwrap();
    let stderr = rx.recv_timeout(Duration::from_secs(120)).expect("edge build did not finish").unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    assert_eq!(reported_documents(&stderr), 4, "reports the copied generation: {stderr}");
    assert_eq!(snapshot_documents(&env, &out), 4);
    assert_eq!(fs::read(out.join("index/manifest.json")).unwrap(), fs::read(big.join("manifest.json")).unwrap());
}

#[test]
fn site_build_adopts_an_unmarked_bundle_and_removes_none_of_it() {
    let env = Env::new();
    env.write("site/index.html", "<main><h1>Home</h1><p>archives and folders</p></main>");
    let bundle = env.path("out/qmd");
    // An earlier version's bundle (no marker): its files, named as the
    // build names them, and one of the user's.
    env.write("out/qmd/t/0123.bin", "older");
    env.write("out/qmd/f/0011/3.json", "older");
    env.write("out/qmd/custom.css", "mine");
    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    assert!(!out.stdout.contains("Removed"), "{}", out.stdout);
    for (rel, text) in [("t/0123.bin", "older"), ("f/0011/3.json", "older"), ("custom.css", "mine")] {
        assert_eq!(fs::read_to_string(bundle.join(rel)).unwrap(), text, "{rel}");
    }
    assert_eq!(marker(&bundle)["owner"], "qmd site build");
    // A rebuild removes its own earlier files, still none of those.
    let entry: serde_json::Value = serde_json::from_slice(&fs::read(bundle.join("entry.json")).unwrap()).unwrap();
    let meta = entry["meta"].as_str().unwrap().to_string();
    env.write("site/index.html", "<main><h1>Home</h1><p>other words now</p></main>");
    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    assert!(out.stdout.contains("Removed"), "{}", out.stdout);
    assert!(!bundle.join(&meta).exists(), "its own stale file goes");
    assert!(bundle.join("t/0123.bin").is_file() && bundle.join("custom.css").is_file());
    // Another command's folder is refused.
    let edge = env.path("other/qmd");
    fs::create_dir_all(&edge).unwrap();
    fs::write(edge.join(".qmd-owned"), r#"{"owner":"qmd edge build","files":[]}"#).unwrap();
    let refused = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("other")]).failure();
    assert!(refused.stderr.contains("qmd edge build"), "{}", refused.stderr);
}

#[test]
fn skill_install_force_never_deletes_a_folder_it_did_not_write() {
    let env = Env::new();
    let project = env.path("project");
    let dir = project.join(".agents/skills/qmd");
    fs::create_dir_all(dir.join("notes")).unwrap();
    fs::write(dir.join("notes/plan.md"), "mine").unwrap();
    fs::write(dir.join("SKILL.md"), "my own skill").unwrap();
    env.qmd_with(&project, &["skill", "install"], &[]).failure();
    env.qmd_with(&project, &["skill", "install", "--force"], &[]).success();
    assert_eq!(fs::read_to_string(dir.join("notes/plan.md")).unwrap(), "mine", "unlisted: kept");
    assert!(fs::read_to_string(dir.join("SKILL.md")).unwrap().contains("qmd skill show"), "--force writes its files");
    // Its own earlier files are what a later --force removes.
    let listed = marker(&dir)["files"].to_string();
    assert!(listed.contains("SKILL.md") && !listed.contains("plan.md"), "{listed}");
    env.qmd_with(&project, &["skill", "install", "--force"], &[]).success();
    assert_eq!(fs::read_to_string(dir.join("notes/plan.md")).unwrap(), "mine");
    // A folder with things in it where the Claude link goes is not replaced.
    let claude = project.join(".claude/skills/qmd");
    fs::create_dir_all(&claude).unwrap();
    fs::write(claude.join("keep.md"), "mine").unwrap();
    let out = env.qmd_with(&project, &["skill", "install", "--force", "--yes"], &[]).failure();
    assert!(out.stderr.contains("only a link or an empty folder is replaced"), "{}", out.stderr);
    assert_eq!(fs::read_to_string(claude.join("keep.md")).unwrap(), "mine");
}
