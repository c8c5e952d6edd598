//! Nothing outside a collection's root is ever indexed or printed: not
//! through symlinks (to files or directories), masks, `..` in paths or
//! `qmd://` URIs, absolute paths, nor a sibling directory whose name shares
//! the root's prefix.

use crate::common;

use std::os::unix::fs::symlink;

use common::{Env, Output};

/// Fails if `out` shows any of `secrets`.
#[track_caller]
fn assert_hidden(what: &str, out: &Output, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "{what} printed {secret:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            out.stdout,
            out.stderr
        );
    }
}

/// The `Indexed: …` line of an add/update.
#[track_caller]
fn indexed(out: &Output) -> &str {
    out.stdout.lines().find(|l| l.starts_with("Indexed: ")).unwrap_or_else(|| panic!("no Indexed line: {out:?}"))
}

#[test]
fn symlink_to_a_file_outside_the_root_is_not_indexed() {
    let env = Env::new();
    env.write("notes/a.md", "# Inside\n\nThe insideword lives here.\n");
    let secret = env.write("outside/secret.md", "# Secret\n\nxylophonesecret\n");
    symlink(&secret, env.path("notes/leak.md")).unwrap();
    symlink("../outside/secret.md", env.path("notes/relleak.md")).unwrap();
    // A symlink to a file inside the root is fine.
    symlink("a.md", env.path("notes/alias.md")).unwrap();

    let add = env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert_eq!(indexed(&add), "Indexed: 2 new, 0 updated, 0 unchanged, 0 removed");
    assert!(add.stderr.contains("Skipped qmd://notes/leak.md (OUTSIDE_COLLECTION)"), "{}", add.stderr);
    assert!(add.stderr.contains("Skipped qmd://notes/relleak.md (OUTSIDE_COLLECTION)"), "{}", add.stderr);

    let secrets = ["xylophonesecret"];
    let search = env.ok(&["search", "xylophonesecret"]);
    assert_eq!(search.stdout, "No results found.\n");
    for name in ["leak.md", "qmd://notes/leak.md", "relleak.md", &env.arg("notes/leak.md")] {
        let out = env.qmd(&["get", name]).failure();
        assert_hidden(&format!("get {name}"), &out, &secrets);
    }
    let out = env.qmd(&["multi-get", "*leak.md"]).failure();
    assert_hidden("multi-get", &out, &secrets);
    let all = env.ok(&["multi-get", "**/*.md"]);
    assert_hidden("multi-get **/*.md", &all, &secrets);
    let ls = env.ok(&["ls", "notes"]).stdout;
    assert!(!ls.contains("leak.md"), "{ls}");
    assert!(ls.contains("qmd://notes/alias.md"), "{ls}");

    // Every update skips it again, and still finds nothing new.
    let update = env.ok(&["update"]);
    assert_eq!(indexed(&update), "Indexed: 0 new, 0 updated, 2 unchanged, 0 removed");
    assert!(update.stderr.contains("Skipped qmd://notes/leak.md (OUTSIDE_COLLECTION)"), "{}", update.stderr);
    assert_eq!(env.ok(&["search", "xylophonesecret"]).stdout, "No results found.\n");

    // The in-root alias is an ordinary document.
    let hits = env.ok(&["search", "insideword", "--files"]).stdout;
    assert!(hits.contains(",qmd://notes/a.md\n") && hits.contains(",qmd://notes/alias.md\n"), "{hits}");
    assert!(env.ok(&["get", "alias.md"]).stdout.contains("The insideword lives here."));
}

#[test]
fn indexed_file_replaced_by_an_outside_symlink_is_dropped() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    env.write("notes/b.md", "# B\n\nbravo\n");
    let secret = env.write("outside/secret.md", "# Secret\n\nquetzalsecret\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    env.ok(&["get", "b.md"]);

    std::fs::remove_file(env.path("notes/b.md")).unwrap();
    symlink(&secret, env.path("notes/b.md")).unwrap();
    let update = env.ok(&["update"]);
    assert_eq!(indexed(&update), "Indexed: 0 new, 0 updated, 1 unchanged, 1 removed");
    assert!(update.stderr.contains("Skipped qmd://notes/b.md (OUTSIDE_COLLECTION)"), "{}", update.stderr);
    let out = env.qmd(&["get", "b.md"]).failure();
    assert_hidden("get b.md", &out, &["quetzalsecret", "bravo"]);
    assert_eq!(env.ok(&["search", "quetzalsecret"]).stdout, "No results found.\n");
}

#[test]
fn symlinked_directory_outside_the_root_is_not_followed() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    env.write("outdir/deep.md", "# Deep\n\nmarimbasecret\n");
    env.write("outdir/nested/deeper.md", "# Deeper\n\nmarimbasecret again\n");
    symlink(env.path("outdir"), env.path("notes/linked")).unwrap();
    symlink("../outdir/nested", env.path("notes/rellinked")).unwrap();

    let add = env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert_eq!(indexed(&add), "Indexed: 1 new, 0 updated, 0 unchanged, 0 removed");
    let secrets = ["marimbasecret"];
    assert_eq!(env.ok(&["search", "marimbasecret"]).stdout, "No results found.\n");
    let ls = env.ok(&["ls", "notes"]).stdout;
    assert!(!ls.contains("linked"), "{ls}");
    for pattern in ["linked/*.md", "rellinked/*.md", "**/deep*.md"] {
        let out = env.qmd(&["multi-get", pattern]).failure();
        assert_hidden(&format!("multi-get {pattern}"), &out, &secrets);
    }
    for name in
        ["linked/deep.md", "qmd://notes/linked/deep.md", "rellinked/deeper.md", &env.arg("notes/linked/deep.md")]
    {
        let out = env.qmd(&["get", name]).failure();
        assert_hidden(&format!("get {name}"), &out, &secrets);
    }
    let update = env.ok(&["update"]);
    assert_eq!(indexed(&update), "Indexed: 0 new, 0 updated, 1 unchanged, 0 removed");
    assert_eq!(env.ok(&["search", "marimbasecret"]).stdout, "No results found.\n");
}

const ESCAPING_MASKS: [&str; 7] = [
    "../**/*.md",
    "../outside/*.md",
    "./../outside/*.md",
    "sub/../../outside/*.md",
    "**/*.md,../outside/*.md",
    "/etc/*",
    "/tmp/**/*.md",
];

#[test]
fn masks_that_leave_the_root_are_refused() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    env.write("outside/secret.md", "# Secret\n\nocarinasecret\n");
    for mask in ESCAPING_MASKS {
        let out = env.qmd(&["collection", "add", &env.arg("notes"), "--name", "escape", "--mask", mask]).failure();
        assert!(
            out.stderr.contains("Invalid pattern '") && out.stderr.contains("may not use '..' or absolute paths"),
            "mask {mask:?}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("created successfully"), "mask {mask:?}: {}", out.stdout);
    }
    // Nothing was added or indexed.
    assert_eq!(env.ok(&["collection", "list"]).stdout, "Collections (0):\n\n");
    assert_eq!(env.ok(&["ls"]).stdout, "Collections:\n\n");
    assert!(env.ok(&["status"]).stdout.contains("  Total:    0 files indexed\n"));
    assert_eq!(env.ok(&["search", "ocarinasecret"]).stdout, "No results found.\n");
    let config = env.config_home().join("qmd/index.yml");
    if let Ok(yaml) = std::fs::read_to_string(&config) {
        assert!(!yaml.contains("escape"), "{yaml}");
    }
}

#[test]
fn masks_with_dotdot_in_a_brace_group_are_refused() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    for mask in ["{../outside/*,*}.md", "{**/*.md,../outside/*.md}"] {
        let out = env.qmd(&["collection", "add", &env.arg("notes"), "--name", "escape", "--mask", mask]);
        assert_ne!(out.code, 0, "mask {mask:?} was accepted: {}", out.stdout);
    }
}

#[test]
fn accepted_brace_masks_still_index_nothing_outside() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    env.write("outside/secret.md", "# Secret\n\nocarinasecret\n");
    // Whether or not such a mask is refused, a walk of the root cannot reach outside it.
    let out =
        env.qmd(&["collection", "add", &env.arg("notes"), "--name", "braces", "--mask", "{**/*.md,../outside/*.md}"]);
    assert_hidden("collection add", &out, &["ocarinasecret"]);
    if out.code == 0 {
        assert_eq!(indexed(&out), "Indexed: 1 new, 0 updated, 0 unchanged, 0 removed");
        env.ok(&["update"]);
    }
    assert_eq!(env.ok(&["search", "ocarinasecret"]).stdout, "No results found.\n");
    env.qmd(&["get", "../outside/secret.md"]).failure();
}

#[test]
fn get_and_multi_get_never_print_outside_files() {
    let env = Env::new();
    env.copy_corpus("notes");
    env.write("outside/secret.md", "# Secret\n\nbanjosecret\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    // /etc/passwd's first line on any Linux; and our own secret.
    let secrets = ["root:", "banjosecret"];
    let outside = env.arg("outside/secret.md");
    let notes_up = format!("{}/../outside/secret.md", env.arg("notes"));
    for name in [
        "qmd://notes/../../etc/passwd",
        "qmd://notes/../outside/secret.md",
        "qmd://notes/journals/../../outside/secret.md",
        "../../etc/passwd",
        "../outside/secret.md",
        "notes/../outside/secret.md",
        "/etc/passwd",
        "/etc/passwd:1:5",
        outside.as_str(),
        notes_up.as_str(),
    ] {
        let out = env.qmd(&["get", name]);
        assert_ne!(out.code, 0, "get {name} succeeded: {}", out.stdout);
        assert_eq!(out.stdout, "", "get {name}");
        assert_hidden(&format!("get {name}"), &out, &secrets);
    }
    let list = format!("../outside/secret.md, /etc/passwd, {outside}");
    for pattern in ["../**/*.md", "/etc/*", "../outside/*.md", "/**/passwd", "qmd://notes/../../etc/*", list.as_str()] {
        let out = env.qmd(&["multi-get", pattern]);
        // A comma list of misses reports each and exits 0, as qmd; a
        // pattern that matches nothing fails.
        if pattern != list {
            assert_ne!(out.code, 0, "multi-get {pattern} succeeded: {}", out.stdout);
        }
        assert_eq!(out.stdout, "", "multi-get {pattern}");
        assert_hidden(&format!("multi-get {pattern}"), &out, &secrets);
    }
    // A glob that does match inside the root prints only indexed documents.
    let out = env.ok(&["multi-get", "**/*"]);
    assert_hidden("multi-get **/*", &out, &secrets);
    assert_eq!(out.stdout.matches("\nFile: ").count(), 4, "{}", out.stdout);
}

#[test]
fn sibling_root_sharing_a_name_prefix_stays_outside() {
    let env = Env::new();
    env.write("notes/a.md", "# A\n\nalpha\n");
    let evil = env.write("notes-evil/secret.md", "# Evil\n\ntheorbosecret\n");
    symlink("../notes-evil/secret.md", env.path("notes/link.md")).unwrap();
    let add = env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert_eq!(indexed(&add), "Indexed: 1 new, 0 updated, 0 unchanged, 0 removed");
    assert!(add.stderr.contains("Skipped qmd://notes/link.md (OUTSIDE_COLLECTION)"), "{}", add.stderr);

    let secrets = ["theorbosecret"];
    assert_eq!(env.ok(&["search", "theorbosecret"]).stdout, "No results found.\n");
    let evil_path = evil.to_string_lossy().into_owned();
    for name in [evil_path.as_str(), "link.md", "qmd://notes/../notes-evil/secret.md", "qmd://notes-evil/secret.md"] {
        let out = env.qmd(&["get", name]).failure();
        assert_hidden(&format!("get {name}"), &out, &secrets);
    }
    // `ls` and `context add` by path do not treat notes-evil as under notes.
    env.qmd(&["ls", &env.arg("notes-evil")]).failure();
    env.qmd(&["context", "add", &env.arg("notes-evil"), "Evil"]).failure();

    // As a collection of its own, it is reachable by its own name only.
    env.ok(&["collection", "add", &env.arg("notes-evil"), "--name", "notes-evil"]);
    let out = env.qmd(&["get", "qmd://notes/../notes-evil/secret.md"]).failure();
    assert_hidden("get qmd://notes/../notes-evil/secret.md", &out, &secrets);
    let out = env.ok(&["get", "qmd://notes-evil/secret.md"]);
    assert!(out.stdout.starts_with("qmd://notes-evil/secret.md  #"), "{}", out.stdout);
    assert!(out.stdout.contains("theorbosecret"));
    let out = env.ok(&["get", &evil_path]);
    assert!(out.stdout.starts_with("qmd://notes-evil/secret.md  #"), "{}", out.stdout);
    // The symlink in notes is still not a document of notes.
    let update = env.ok(&["update"]);
    assert!(update.stderr.contains("Skipped qmd://notes/link.md (OUTSIDE_COLLECTION)"), "{}", update.stderr);
    env.qmd(&["get", "qmd://notes/link.md"]).failure();
    let hits = env.ok(&["search", "theorbosecret", "--files"]).stdout;
    assert_eq!(hits.lines().count(), 1, "{hits}");
    assert!(hits.contains(",qmd://notes-evil/secret.md"), "{hits}");
    let ls = env.ok(&["ls", "notes"]).stdout;
    assert!(!ls.contains("link.md") && !ls.contains("secret"), "{ls}");
}
