//! Crash safety: `qmd update` killed with SIGKILL at random moments must
//! leave the index exactly as it was before the update or exactly as the
//! update would have left it, never an error and never a mix; and the next
//! `qmd update` must bring it to the new state.
//!
//! Seed with `QMD_CRASH_SEED`, change the number of kills with
//! `QMD_CRASH_KILLS`.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

const COLLECTION: &str = "crash";
const SHARED: &str = "sharedword";
const FILES: usize = 600;
const EDITED: usize = 200;
const DELETED: usize = 100;
const ADDED: usize = 200;

fn qmd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("QMD_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target dir").join("qmd")
}

/// splitmix64: a tiny seeded PRNG, enough for picking words and delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An isolated qmd environment: its own cache, config and home.
struct Env {
    home: PathBuf,
}

impl Env {
    fn cache(&self) -> PathBuf {
        self.home.join("cache")
    }

    fn config(&self) -> PathBuf {
        self.home.join("config")
    }

    fn index_dir(&self) -> PathBuf {
        self.cache().join("qmd").join("index.qmdx")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(qmd_bin());
        cmd.args(args)
            .current_dir(&self.home)
            .env("XDG_CACHE_HOME", self.cache())
            .env("XDG_CONFIG_HOME", self.config())
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .env_remove("INDEX_PATH")
            .env_remove("QMD_CONFIG_DIR");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().expect("spawn qmd")
    }

    /// Runs a command that must succeed; returns its stdout.
    fn ok(&self, args: &[&str], context: &str) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{context}: `qmd {}` failed with {}\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// What a reader sees: (docid, file) of every hit for the shared word,
    /// and the collection's listing. Both commands must succeed cleanly.
    fn state(&self, context: &str) -> State {
        let json = self.ok(&["search", SHARED, "--json", "--all"], context);
        let hits: serde_json::Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{context}: search output is not JSON ({e}):\n{json}"));
        let hits = hits.as_array().unwrap_or_else(|| panic!("{context}: search output is not an array"));
        let docs = hits
            .iter()
            .map(|h| {
                (
                    h["docid"].as_str().unwrap_or_default().to_string(),
                    h["file"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let listing = self.ok(&["ls", COLLECTION], context);
        // `status` reads every part of the manifest; it must work too.
        self.ok(&["status"], context);
        State { docs, listing }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct State {
    docs: BTreeSet<(String, String)>,
    listing: String,
}

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
    "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
    "yankee", "zulu", "segment", "manifest", "commit", "search", "index", "crash", "update", "markdown",
];

fn write_doc(path: &Path, n: usize, rng: &mut Rng, extra: &str) {
    let mut text = format!("# Document {n}\n\nuniquetoken{n} {SHARED} {extra}\n\n");
    for _ in 0..24 {
        for w in 0..24 {
            if w > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            text.push_str(&rng.below(400).to_string());
        }
        text.push_str("\n\n");
    }
    fs::write(path, text).expect("write doc");
}

fn doc_path(corpus: &Path, n: usize) -> PathBuf {
    corpus.join(format!("d{:02}", n % 17)).join(format!("doc-{n:05}.md"))
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Replaces `to` with a copy of `from`.
fn restore(from: &Path, to: &Path) {
    if to.exists() {
        fs::remove_dir_all(to).expect("remove");
    }
    copy_dir(from, to);
}

fn file_names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()).unwrap_or_default()
}

#[test]
fn killed_update_leaves_old_or_new_index() {
    let seed = std::env::var("QMD_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_c0de_u64);
    let kills: usize = std::env::var("QMD_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().expect("tempdir");
    let corpus = tmp.path().join("corpus");
    for n in 0..FILES {
        let path = doc_path(&corpus, n);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_doc(&path, n, &mut rng, "");
    }

    let env = Env { home: tmp.path().join("home") };
    fs::create_dir_all(&env.home).unwrap();
    env.ok(&["collection", "add", corpus.to_str().unwrap(), "--name", COLLECTION], "collection add");
    let old = env.state("old state");
    assert_eq!(old.docs.len(), FILES, "every document holds the shared word");

    // The saved old index and config, restored before every kill.
    let saved = tmp.path().join("saved");
    copy_dir(&env.index_dir(), &saved.join("index"));
    copy_dir(&env.config(), &saved.join("config"));
    let old_files = file_names(&env.index_dir());

    // Change the corpus: edit, delete, add.
    let mut order: Vec<usize> = (0..FILES).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for &n in &order[..EDITED] {
        write_doc(&doc_path(&corpus, n), n, &mut rng, "edited");
    }
    for &n in &order[EDITED..EDITED + DELETED] {
        fs::remove_file(doc_path(&corpus, n)).unwrap();
    }
    for n in FILES..FILES + ADDED {
        write_doc(&doc_path(&corpus, n), n, &mut rng, "added");
    }

    // The expected new state and the update's duration, from an
    // uninterrupted update on a copy (its own cache and config dirs).
    let copy = Env { home: tmp.path().join("copy") };
    copy_dir(&env.home, &copy.home);
    let mut durations = Vec::new();
    let mut new = None;
    for round in 0..3 {
        if round > 0 {
            restore(&saved.join("index"), &copy.index_dir());
            restore(&saved.join("config"), &copy.config());
        }
        let started = Instant::now();
        copy.ok(&["update"], "uninterrupted update");
        durations.push(started.elapsed());
        let state = copy.state("new state");
        if let Some(previous) = &new {
            assert_eq!(previous, &state, "two uninterrupted updates disagree");
        }
        new = Some(state);
    }
    let new = new.unwrap();
    assert_eq!(new.docs.len(), FILES - DELETED + ADDED);
    assert_ne!(old, new);
    durations.sort();
    let duration = durations[1];
    println!("uninterrupted update: {:?} (median of {:?})", duration, durations);

    let mut saw_old = 0;
    let mut saw_new = 0;
    let mut old_with_debris = 0;
    let mut new_but_signalled = 0;
    for kill in 0..kills {
        restore(&saved.join("index"), &env.index_dir());
        restore(&saved.join("config"), &env.config());
        let delay = duration.mul_f64(rng.unit());
        let mut child = env
            .command(&["update"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn update");
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("wait");
        let signalled = status.signal() == Some(9);

        let context = format!("kill {kill} after {delay:?} (seed {seed:#x})");
        let state = env.state(&context);
        let debris = file_names(&env.index_dir()) != old_files;
        let verdict = if state == old {
            saw_old += 1;
            old_with_debris += usize::from(debris);
            "old"
        } else if state == new {
            saw_new += 1;
            new_but_signalled += usize::from(signalled);
            "new"
        } else {
            let gone: Vec<_> = old.docs.difference(&state.docs).take(5).collect();
            let extra: Vec<_> = state.docs.difference(&old.docs).take(5).collect();
            panic!(
                "{context}: index is neither old nor new: {} docs (old {}, new {}); e.g. missing vs old {gone:?}, extra vs old {extra:?}",
                state.docs.len(),
                old.docs.len(),
                new.docs.len()
            );
        };
        println!(
            "kill {kill:2} after {:7.1} ms: {} -> {verdict}{}",
            delay.as_secs_f64() * 1000.0,
            if signalled { "killed" } else { "had exited" },
            if debris && verdict == "old" { " (partial files left)" } else { "" }
        );

        // Whatever the kill left behind, the next update finishes the job.
        env.ok(&["update"], &format!("{context}: update after the kill"));
        let converged = env.state(&format!("{context}: after re-update"));
        assert!(converged == new, "{context}: update after the kill did not reach the new state");
    }

    println!(
        "kills: {kills}; saw old state: {saw_old} ({old_with_debris} with partial files on disk); saw new state: {saw_new} ({new_but_signalled} killed after the commit)"
    );
    assert_eq!(saw_old + saw_new, kills);
    assert!(saw_old >= 3, "only {saw_old} of {kills} kills interrupted the update; the test is not testing anything");
}
