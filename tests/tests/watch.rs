//! `qmd update --watch` against real file events in a temporary folder:
//! create, edit, rename, delete, an editor's write-to-temp-then-rename
//! save, a folder moved, the collection folder removed and restored, and
//! 10,000 files at once. After each, the watched index must equal what a
//! fresh `update` of the same folder gives, and the batch reports must show
//! that only what changed was indexed. Idle, the watcher uses ~no CPU; it
//! stops cleanly on SIGTERM.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Env;

/// A running `qmd update --watch`, its stdout collected line by line.
struct Watcher {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Watcher {
    fn start(env: &Env, extra: &[&str]) -> Watcher {
        Watcher::start_with(env, extra, &[])
    }

    fn start_with(env: &Env, extra: &[&str], envs: &[(&str, &str)]) -> Watcher {
        let mut args = vec!["update", "--watch", "--debounce-ms", "100"];
        args.extend_from_slice(extra);
        let mut child =
            env.command(env.root(), &args, envs).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let watcher = Watcher { child, lines };
        watcher.wait_for("the watch to start", |lines| lines.iter().any(|l| l.starts_with("Watching 1 collection(s)")));
        watcher
    }

    fn wait_for(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(&self.lines.lock().unwrap()) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {:?}", self.lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `[new, updated, unchanged, removed]` summed over the batch reports
    /// printed after the first `from` lines.
    fn indexed_since(&self, from: usize) -> [u64; 4] {
        let lines = self.lines.lock().unwrap();
        let mut sum = [0; 4];
        for line in lines[from.min(lines.len())..].iter().filter_map(|l| l.strip_prefix("Indexed: ")) {
            let numbers: Vec<u64> =
                line.split(", ").map(|part| part.split(' ').next().unwrap().parse().unwrap()).collect();
            for (total, n) in sum.iter_mut().zip(numbers) {
                *total += n;
            }
        }
        sum
    }

    fn line_count(&self) -> usize {
        self.lines.lock().unwrap().len()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the index holds, as `ls` lists it (size, date, path per file).
fn listing(env: &Env) -> String {
    env.ok(&["ls", "notes"]).stdout
}

/// The listing a fresh `update` of `folder` gives, in an index of its own.
fn fresh_listing(folder: &Path) -> String {
    let fresh = Env::new();
    fresh.ok(&["collection", "add", folder.to_str().unwrap(), "--name", "notes"]);
    listing(&fresh)
}

/// Waits until the watched index lists what a fresh update lists, then
/// for the batch report that got it there; returns the counts of the
/// reports printed since line `from`.
#[track_caller]
fn settles(env: &Env, watcher: &Watcher, folder: &Path, from: usize, step: &str) -> [u64; 4] {
    let expected = fresh_listing(folder);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = listing(env);
        if got == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{step}: the watched index never matched a fresh update\n{got}\nvs\n{expected}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    watcher.wait_for(step, |lines| lines[from.min(lines.len())..].iter().any(|l| l.starts_with("Indexed: ")));
    // Let any trailing batch of the same change print.
    std::thread::sleep(Duration::from_millis(400));
    watcher.indexed_since(from)
}

fn note(title: &str, words: &str) -> String {
    format!("# {title}\n\nA note about {words}.\n")
}

/// CPU time (user + system, in clock ticks) the process has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn the_watched_index_follows_every_kind_of_change() {
    let env = Env::new();
    let notes = env.path("notes");
    env.write("notes/a.md", &note("Alpha", "apples"));
    env.write("notes/b.md", &note("Beta", "bananas"));
    env.write("notes/sub/c.md", &note("Gamma", "cherries"));
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let watcher = Watcher::start(&env, &[]);

    let from = watcher.line_count();
    env.write("notes/d.md", &note("Delta", "dates"));
    assert_eq!(settles(&env, &watcher, &notes, from, "create"), [1, 0, 3, 0]);

    let from = watcher.line_count();
    env.write("notes/a.md", &note("Alpha", "apples, now with apricots as well"));
    assert_eq!(settles(&env, &watcher, &notes, from, "edit"), [0, 1, 3, 0], "only the edited file is read");

    let from = watcher.line_count();
    std::fs::rename(notes.join("b.md"), notes.join("b2.md")).unwrap();
    assert_eq!(settles(&env, &watcher, &notes, from, "rename"), [1, 0, 3, 1]);

    let from = watcher.line_count();
    std::fs::remove_file(notes.join("sub/c.md")).unwrap();
    assert_eq!(settles(&env, &watcher, &notes, from, "delete"), [0, 0, 3, 1]);

    // An editor's save: the new text goes to a temporary file, which is
    // then renamed over the note.
    let from = watcher.line_count();
    std::fs::write(notes.join(".a.md.swp"), note("Alpha", "apricots only")).unwrap();
    std::fs::rename(notes.join(".a.md.swp"), notes.join("a.md")).unwrap();
    let [new, updated, _, removed] = settles(&env, &watcher, &notes, from, "atomic save");
    assert_eq!((new, updated, removed), (0, 1, 0));

    // A folder moved inside the collection: its notes move with it.
    env.write("notes/sub/e.md", &note("Epsilon", "elderberries"));
    std::fs::create_dir_all(notes.join("archive")).unwrap();
    let from = watcher.line_count();
    std::fs::rename(notes.join("sub"), notes.join("archive/sub")).unwrap();
    settles(&env, &watcher, &notes, from, "folder move");
    let out = env.ok(&["search", "elderberries", "--json"]).stdout;
    assert!(out.contains("qmd://notes/archive/sub/e.md"), "{out}");

    // The collection folder removed and restored: its notes are kept while
    // it is gone, and the folder is watched again once it is back.
    let aside = env.path("notes-aside");
    let before = listing(&env);
    let from = watcher.line_count();
    std::fs::rename(&notes, &aside).unwrap();
    watcher.wait_for("the missing folder's batch", |lines| {
        lines[from..].iter().any(|l| l.starts_with("Indexed: 0 new, 0 updated, 0 unchanged, 0 removed"))
    });
    assert_eq!(listing(&env), before, "documents are kept while the folder is missing");
    std::fs::rename(&aside, &notes).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let from = watcher.line_count();
    env.write("notes/f.md", &note("Zeta", "figs"));
    let [new, updated, _, removed] = settles(&env, &watcher, &notes, from, "restored folder");
    assert_eq!((new, updated, removed), (1, 0, 0));

    // 10,000 files at once, as a `git checkout` makes them.
    let from = watcher.line_count();
    for i in 0..10_000 {
        let dir = notes.join(format!("burst/{:02}", i % 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("n{i}.md")), note(&format!("Note {i}"), &format!("item {i}"))).unwrap();
    }
    let [new, updated, _, removed] = settles(&env, &watcher, &notes, from, "10,000 files");
    assert_eq!((new, updated, removed), (10_000, 0, 0), "each new file once, nothing else re-indexed");

    // Idle: no measurable CPU (the folders are looked at once a second).
    std::thread::sleep(Duration::from_millis(500));
    let pid = watcher.child.id();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(pid) - before;
    assert!(used <= 3, "{used} ticks of CPU in 3 s of idling");

    // SIGTERM: a clean stop.
    let mut watcher = watcher;
    let kill = std::process::Command::new("kill").args(["-TERM", &watcher.child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = watcher.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    watcher.wait_for("the goodbye", |lines| lines.last().is_some_and(|l| l == "Stopped watching."));
}

#[test]
fn polling_finds_changes_too() {
    let env = Env::new();
    let notes = env.path("notes");
    env.write("notes/a.md", &note("Alpha", "apples"));
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let watcher = Watcher::start(&env, &["--poll", "200"]);
    assert!(watcher.lines.lock().unwrap().iter().any(|l| l.contains("polling every 200 ms (--poll)")));
    let from = watcher.line_count();
    env.write("notes/b.md", &note("Beta", "bananas"));
    std::fs::remove_file(notes.join("a.md")).unwrap();
    assert_eq!(settles(&env, &watcher, &notes, from, "poll"), [1, 0, 0, 1]);
}

#[test]
fn with_embed_new_content_gets_vectors_as_it_arrives() {
    let model = qmd_tests::models::test_model_dir();
    let model_env = [("QMD_EMBED_MODEL", model.to_str().unwrap())];
    let env = Env::new();
    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let watcher = Watcher::start_with(&env, &["--embed"], &model_env);
    let vectors = || env.vectors(&model_env);
    assert_eq!(vectors(), "1 embedded", "the first update's content is embedded before watching");
    let from = watcher.line_count();
    env.write("notes/tides.md", "# Tides\n\nThe moon's gravity pulls the oceans, raising high tides twice a day.\n");
    watcher.wait_for("the batch's embedding", |lines| {
        lines[from..].iter().any(|l| l.starts_with("✓ Done! Embedded 1 chunks"))
    });
    assert_eq!(vectors(), "2 embedded");
    let out = env.qmd_with(env.root(), &["vsearch", "--json", "what makes the sea rise"], &model_env).success().stdout;
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["file"], "qmd://notes/tides.md", "{out}");
}

#[test]
fn changes_no_collection_could_index_wake_nothing() {
    let env = Env::new();
    let notes = env.path("notes");
    env.write("notes/a.md", &note("Alpha", "apples"));
    // A link out of the collection: `update` never follows it, so what
    // changes behind it is nothing to index (and not a disk to watch).
    env.write("elsewhere/b.md", &note("Beta", "bananas"));
    std::os::unix::fs::symlink(env.path("elsewhere"), notes.join("elsewhere")).unwrap();
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let watcher = Watcher::start(&env, &[]);
    let from = watcher.line_count();
    // What `git commit` and `npm install` write, a hidden folder's notes,
    // and notes behind the link.
    for i in 0..50 {
        env.write(&format!("elsewhere/e{i}.md"), "# Elsewhere\n");
        env.write(&format!("notes/.git/objects/{i:02}/obj"), "blob");
        env.write(&format!("notes/node_modules/pkg{i}/README.md"), "# A package\n");
        env.write(&format!("notes/.drafts/d{i}.md"), "# Draft\n");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let woke: Vec<String> = watcher.lines.lock().unwrap()[from..].to_vec();
    assert!(!woke.iter().any(|l| l.contains("Changes in")), "{woke:?}");
    // A hidden folder renamed into view is indexed.
    std::fs::rename(notes.join(".drafts"), notes.join("drafts")).unwrap();
    let [new, updated, _, removed] = settles(&env, &watcher, &notes, from, "drafts shown");
    assert_eq!((new, updated, removed), (50, 0, 0));
}
