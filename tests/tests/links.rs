//! Links and odd names around the folders `qmd site build` and
//! `qmd skill install` write: a link is never followed while cleaning or
//! writing, a linked folder the command would write through is refused,
//! and a site build skips (with a warning) what it cannot read.

#![cfg(unix)]

use crate::common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use common::*;

/// A folder's entries, `/`-separated, with the contents of its files.
type Snapshot = Vec<(String, Option<Vec<u8>>)>;

/// Every entry under `dir` (not following links), `/`-separated, sorted,
/// with file contents: to show a folder outside was left exactly as it was.
fn snapshot(dir: &Path) -> Snapshot {
    fn walk(root: &Path, dir: &Path, out: &mut Snapshot) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.push((format!("{rel}/"), None));
                walk(root, &path, out);
            } else if kind.is_symlink() {
                out.push((format!("{rel} -> {}", fs::read_link(&path).unwrap().display()), None));
            } else {
                out.push((rel, Some(fs::read(&path).unwrap())));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Links under `dir`, not following any.
fn links_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            out.push(entry.path());
        } else if kind.is_dir() {
            out.extend(links_under(&entry.path()));
        }
    }
    out
}

/// An outside folder of precious files (one named like a bundle shard, an
/// empty folder like an old fragment set), and its snapshot.
fn victim(env: &Env, name: &str) -> (PathBuf, Snapshot) {
    env.write(&format!("{name}/old.bin"), &format!("{name}: precious shard-named bytes"));
    env.write(&format!("{name}/notes.txt"), &format!("{name}: notes"));
    env.write(&format!("{name}/qmd/SKILL.md"), &format!("{name}: someone else's skill"));
    fs::create_dir_all(env.path(&format!("{name}/0042"))).unwrap();
    let dir = env.path(name);
    let snap = snapshot(&dir);
    (dir, snap)
}

fn site(env: &Env) {
    env.write("site/index.html", "<main><h1>Home</h1><p>archives and folders</p></main>");
    env.write("site/docs/install.html", "<main><h1>Install</h1><p>apt install packrat</p></main>");
}

fn entry(bundle: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(bundle.join("entry.json")).expect("entry.json")).expect("JSON")
}

#[test]
fn site_build_never_follows_links_planted_inside_the_bundle() {
    let env = Env::new();
    site(&env);
    let (outside, before) = victim(&env, "outside");
    let (fragments, fragments_before) = victim(&env, "fragments");
    let precious = env.write("precious.txt", "do not touch");
    let engine_target = env.write("engine-target.wasm", "not an engine");

    // A first build, then links planted where the bundle writes and cleans:
    // linked shard and fragment folders, links at an old shard's name, at
    // the entry, at a file a rebuild reuses, and at the module.
    env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    let bundle = env.path("out/qmd");
    let engine = entry(&bundle)["engine"].as_str().unwrap().to_string();
    fs::remove_dir_all(bundle.join("t")).unwrap();
    symlink(&outside, bundle.join("t")).unwrap();
    fs::remove_dir_all(bundle.join("f")).unwrap();
    symlink(&fragments, bundle.join("f")).unwrap();
    symlink(&precious, bundle.join("meta.00ff.bin")).unwrap();
    fs::remove_file(bundle.join("entry.json")).unwrap();
    symlink(&precious, bundle.join("entry.json")).unwrap();
    fs::remove_file(bundle.join(&engine)).unwrap();
    symlink(&engine_target, bundle.join(&engine)).unwrap();
    symlink(&precious, bundle.join("qmd-search.js.tmp")).unwrap();
    fs::remove_file(bundle.join("qmd-search.js")).unwrap();
    symlink(&precious, bundle.join("qmd-search.js")).unwrap();
    // A changed page: new shard names, old ones to clean.
    env.write("site/docs/install.html", "<main><h1>Install</h1><p>brew install packrat</p></main>");

    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    assert!(out.stdout.contains("Indexed 2 HTML pages"), "{}", out.stdout);
    assert_eq!(snapshot(&outside), before, "nothing written or removed through a linked folder");
    assert_eq!(snapshot(&fragments), fragments_before, "nothing written or removed through a linked folder");
    assert_eq!(fs::read_to_string(&precious).unwrap(), "do not touch");
    assert_eq!(fs::read_to_string(&engine_target).unwrap(), "not an engine");

    // The links themselves were replaced by the build's own files.
    // Links at names the build never wrote (not in its marker) are not
    // the build's to remove: they stay, and nothing is written through them.
    let mut left: Vec<PathBuf> = links_under(&bundle);
    left.sort();
    assert_eq!(
        left,
        vec![bundle.join("meta.00ff.bin"), bundle.join("qmd-search.js.tmp")],
        "only links the build does not own stay"
    );
    let entry = entry(&bundle);
    assert_eq!(entry["docs"], 2);
    for name in [entry["meta"].as_str().unwrap(), entry["engine"].as_str().unwrap()] {
        assert!(fs::symlink_metadata(bundle.join(name)).unwrap().is_file(), "{name}");
    }
    assert!(fs::symlink_metadata(bundle.join("t")).unwrap().is_dir());
    assert!(fs::read_dir(bundle.join("t")).unwrap().count() > 0, "the shards are inside the bundle");
    assert!(fs::read_dir(bundle.join("f")).unwrap().count() > 0, "the fragments are inside the bundle");
}

#[test]
fn site_build_refuses_a_bundle_folder_that_is_a_link_or_a_file() {
    let env = Env::new();
    site(&env);
    let (outside, before) = victim(&env, "elsewhere");
    fs::create_dir_all(env.path("out")).unwrap();
    let link = env.path("out/qmd");
    symlink(&outside, &link).unwrap();
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]).failure();
    assert!(out.stderr.contains(&link.display().to_string()), "names the link: {}", out.stderr);
    assert!(out.stderr.contains("link"), "{}", out.stderr);
    assert_eq!(snapshot(&outside), before);
    assert_eq!(fs::read_link(&link).unwrap(), outside, "the link is left alone");

    // The bundle inside the site it indexes, its folder a link: refused too.
    let inner = env.path("site/qmd");
    symlink(&outside, &inner).unwrap();
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("site")]).failure();
    assert!(out.stderr.contains(&inner.display().to_string()), "{}", out.stderr);
    assert_eq!(snapshot(&outside), before);
    fs::remove_file(&inner).unwrap();

    // A file where the bundle folder goes is the user's: refused, kept.
    fs::remove_file(&link).unwrap();
    fs::write(&link, "a file named qmd").unwrap();
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]).failure();
    assert!(out.stderr.contains(&link.display().to_string()), "{}", out.stderr);
    assert!(out.stderr.contains("not a folder"), "{}", out.stderr);
    assert_eq!(fs::read_to_string(&link).unwrap(), "a file named qmd");

    // `--out` itself is the user's choice: a linked output folder is used.
    let target = env.path("public");
    fs::create_dir_all(&target).unwrap();
    symlink(&target, env.path("deploy")).unwrap();
    env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("deploy")]);
    assert_eq!(entry(&target.join("qmd"))["docs"], 2);
}

#[test]
fn skill_install_never_deletes_or_writes_through_a_linked_folder() {
    let env = Env::new();
    // `.agents/skills`, `.agents` or `.claude` linked out of the project.
    for (name, planted, target_rel) in
        [("skills", ".agents/skills", ""), ("agents", ".agents", "skills"), ("claude", ".claude", "skills")]
    {
        let project = env.path(&format!("p-{name}"));
        fs::create_dir_all(&project).unwrap();
        let (outside, _) = victim(&env, &format!("v-{name}"));
        if !target_rel.is_empty() {
            fs::create_dir_all(outside.join(target_rel)).unwrap();
            fs::rename(outside.join("qmd"), outside.join(target_rel).join("qmd")).unwrap();
        }
        let before = snapshot(&outside);
        let link = project.join(planted);
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(&outside, &link).unwrap();
        let runs: &[&[&str]] = if name == "claude" {
            &[&["skill", "install", "--force", "--yes"]]
        } else {
            &[&["skill", "install", "--force", "--yes"], &["skill", "install"]]
        };
        for args in runs {
            let out = env.qmd_in(&project, args).failure();
            assert!(out.stderr.contains(&link.display().to_string()), "{name} {args:?}: {}", out.stderr);
            assert!(out.stderr.contains("link"), "{}", out.stderr);
            assert_eq!(snapshot(&outside), before, "{name} {args:?}: the outside folder is untouched");
            assert_eq!(fs::read_link(&link).unwrap(), outside);
        }
    }

    // A linked `qmd` folder itself is replaced (the link, never its
    // target) only with --force.
    let project = env.path("p-qmd");
    let (outside, before) = victim(&env, "v-qmd");
    fs::create_dir_all(project.join(".agents/skills")).unwrap();
    let link = project.join(".agents/skills/qmd");
    symlink(outside.join("qmd"), &link).unwrap();
    let out = env.qmd_in(&project, &["skill", "install"]).failure();
    assert!(out.stderr.contains("Skill already exists"), "{}", out.stderr);
    env.qmd_in(&project, &["skill", "install", "--force", "--yes"]).success();
    assert_eq!(snapshot(&outside), before);
    assert!(fs::symlink_metadata(&link).unwrap().is_dir(), "a real folder now");
    assert!(fs::read_to_string(link.join("SKILL.md")).unwrap().contains("qmd skill show"));
    // The Claude link still works, and a linked `.claude/skills/qmd` is
    // replaced as a link.
    let claude = project.join(".claude/skills/qmd");
    assert_eq!(fs::read_link(&claude).unwrap(), Path::new("../../.agents/skills/qmd"));
    fs::remove_file(&claude).unwrap();
    symlink(outside.join("qmd"), &claude).unwrap();
    env.qmd_in(&project, &["skill", "install", "--force", "--yes"]).success();
    assert_eq!(fs::read_link(&claude).unwrap(), Path::new("../../.agents/skills/qmd"));
    assert_eq!(snapshot(&outside), before);
}

#[test]
fn site_build_skips_what_it_cannot_read_and_names_it() {
    let env = Env::new();
    site(&env);
    let precious = env.write("precious.html", "<main>outside page</main>");
    let root = env.path("site");
    symlink(env.path("nowhere.html"), root.join("dead\n.html")).unwrap();
    symlink(root.join("loop.html"), root.join("loop.html")).unwrap();
    symlink(root.join("ping.html"), root.join("pong.html")).unwrap();
    symlink(root.join("pong.html"), root.join("ping.html")).unwrap();
    symlink(env.path("gone"), root.join("gone")).unwrap();
    symlink(&root, root.join("docs/up")).unwrap();
    fs::write(root.join(OsStr::from_bytes(b"bad\xff.html")), "<main>latin caf\u{e9}</main>").unwrap();
    let bad_dir = root.join(OsStr::from_bytes(b"d\xfe\x1bir"));
    fs::create_dir_all(&bad_dir).unwrap();
    fs::write(bad_dir.join("c.html"), "<main>in a badly named folder</main>").unwrap();
    fs::create_dir_all(root.join("ok")).unwrap();
    fs::write(root.join(OsStr::from_bytes(b"ok/x\xc3(.htm")), "<main>x</main>").unwrap();

    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]).success();
    assert!(out.stdout.contains("Indexed 2 HTML pages"), "{}", out.stdout);
    for named in [
        r"dead\n.html",
        "loop.html",
        "ping.html",
        "pong.html",
        "gone",
        r"bad\xff.html",
        r"d\xfe\x1bir",
        r"ok/x\xc3(.htm",
    ] {
        assert!(out.stderr.lines().any(|l| l.contains(named)), "a warning names {named}: {}", out.stderr);
    }
    assert!(!out.stderr.contains('\u{1b}') && !out.stderr.contains('\u{fffd}'), "escaped: {:?}", out.stderr);
    assert_eq!(out.stderr.lines().filter(|l| l.contains("dead")).count(), 1, "one line: {:?}", out.stderr);
    assert_eq!(fs::read_to_string(&precious).unwrap(), "<main>outside page</main>");
}
