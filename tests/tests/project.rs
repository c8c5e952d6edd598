//! Project-local indexes (`qmd init`, `.qmd/index.yml` found from any
//! folder below it) and qmd's trust gate for such a config: its update
//! hooks, collection paths outside the project and custom models are used
//! only once approved. Expected texts are qmd 2.8.3's, run side by side.

use crate::common;

use std::fs;
use std::path::Path;

use common::{Env, Output, Recording};

fn run(env: &Env, cwd: &Path, args: &[&str]) -> Output {
    env.qmd_with(cwd, args, &[])
}

/// A project as a `git clone` brings it: a config naming a hook and a
/// folder outside the project.
fn cloned_project(env: &Env) -> std::path::PathBuf {
    let project = env.path("proj");
    env.write("proj/docs/a.md", "# Doc\n\nhello project\n");
    env.write("outside/o.md", "# Out\n\nhello outside\n");
    env.write(
        "proj/.qmd/index.yml",
        &format!(
            "collections:\n  docs:\n    path: {}\n    pattern: \"**/*.md\"\n    update: touch hooked.txt\n  outside:\n    path: {}\n    pattern: \"**/*.md\"\n",
            project.join("docs").display(),
            env.path("outside").display()
        ),
    );
    project
}

#[test]
fn init_creates_a_local_index_that_commands_below_it_use() {
    let env = Env::new();
    let refused = run(&env, env.root(), &["init"]).failure();
    assert!(refused.stderr.contains("Refusing to initialize a local index in $HOME."), "{}", refused.stderr);
    assert!(!env.path(".qmd").exists());

    env.write("proj/notes/n.md", "# Note\n\nlocal walrus\n");
    let project = env.path("proj");
    assert_eq!(run(&env, &project, &["init"]).success().stdout, "ready to go with new local index\n");
    assert_eq!(fs::read_to_string(project.join(".qmd/index.yml")).unwrap(), "collections: {}\n");
    let below = project.join("notes");
    run(&env, &below, &["collection", "add", ".", "--name", "notes"]).success();
    assert!(fs::read_to_string(project.join(".qmd/index.yml")).unwrap().contains("notes:"));
    let status = run(&env, &below, &["status"]).success().stdout;
    assert!(status.contains(&format!("Index: {}", project.join(".qmd/index.qmdx").display())), "{status}");
    assert!(run(&env, &below, &["search", "walrus"]).success().stdout.contains("qmd://notes/n.md"));
    // Outside the project the global index knows nothing of it; --index
    // names a global index even inside it.
    assert_eq!(run(&env, env.root(), &["search", "walrus"]).success().stdout, "No results found.\n");
    assert_eq!(run(&env, &below, &["--index", "index", "search", "walrus"]).success().stdout, "No results found.\n");
    // Init again keeps the config.
    run(&env, &project, &["init"]).success();
    assert!(fs::read_to_string(project.join(".qmd/index.yml")).unwrap().contains("notes:"));
}

#[test]
fn an_untrusted_project_config_runs_no_hook_and_reads_nothing_outside_it() {
    let env = Env::new();
    let project = cloned_project(&env);
    let (docs, outside) = (project.join("docs"), env.path("outside"));
    let config = project.join(".qmd/index.yml");
    let out = run(&env, &docs, &["update"]).success();
    assert_eq!(
        out.stdout,
        format!(
            "This project's config defines update commands:
  docs: touch hooked.txt
Collection paths outside this project:
  outside: {outside}
Config that came with a checkout is not trusted by default.
Skipping them — no terminal to confirm on. Indexing of this project continues.
Approve with 'qmd trust', or set QMD_TRUST_LOCAL_CONFIG=1 for unattended runs.

Updating 2 collection(s)...

[1/2] docs (**/*.md)
Collection: {docs} (**/*.md)

Indexed: 1 new, 0 updated, 0 unchanged, 0 removed

[2/2] outside (**/*.md)
Skipping collection 'outside' — path {outside} is outside this project and this .qmd config is not trusted.
Approve with 'qmd trust'.

✓ All collections updated.

Run 'qmd embed' to update embeddings (1 unique hashes need vectors)
",
            outside = outside.display(),
            docs = docs.display()
        )
    );
    assert!(!docs.join("hooked.txt").exists(), "the hook did not run");
    assert_eq!(run(&env, &docs, &["search", "outside"]).stdout, "No results found.\n");

    // `qmd trust` approves this exact set; then both run.
    let trusted = run(&env, &docs, &["trust"]).success().stdout;
    assert!(trusted.contains(&format!("✓ Trusted {}\n", config.display())), "{trusted}");
    let out = run(&env, &docs, &["update"]).success().stdout;
    assert!(out.starts_with(
        "Updating 2 collection(s)...\n\n[1/2] docs (**/*.md)\n    Running update command: touch hooked.txt\n"
    ));
    assert!(docs.join("hooked.txt").exists());
    assert!(run(&env, &docs, &["search", "outside"]).stdout.contains("qmd://outside/o.md"));
    let list = run(&env, &docs, &["trust", "list"]).stdout;
    assert!(list.starts_with(&format!("{} (trusted 20", config.display())), "{list}");

    // Editing the hook re-arms the gate.
    let text = fs::read_to_string(&config).unwrap().replace("touch hooked.txt", "touch edited.txt");
    fs::write(&config, text).unwrap();
    let out = run(&env, &docs, &["update"]).success().stdout;
    assert!(out.starts_with("This project's config defines update commands:\n  docs: touch edited.txt\n"), "{out}");
    assert!(!docs.join("edited.txt").exists());
    // Unattended opt-in.
    env.qmd_with(&docs, &["update"], &[("QMD_TRUST_LOCAL_CONFIG", "1")]).success();
    assert!(docs.join("edited.txt").exists());

    let revoke = run(&env, &docs, &["trust", "revoke"]).success().stdout;
    assert_eq!(revoke, format!("✓ Revoked trust for {}\n", config.display()));
    assert_eq!(run(&env, &docs, &["trust", "revoke"]).stdout, format!("{} was not trusted.\n", config.display()));
    let global = run(&env, env.root(), &["trust"]).success().stdout;
    assert!(global.ends_with("is your own config — it is never gated. Nothing to trust.\n"), "{global}");
    // A corrupt approvals file trusts nothing.
    fs::write(env.config_home().join("qmd/trusted.json"), "{not json").unwrap();
    assert!(run(&env, &docs, &["update"]).stdout.contains("not trusted by default"));
}

#[test]
fn an_untrusted_project_config_does_not_choose_the_models() {
    let env = Env::new();
    let project = env.path("proj");
    env.write("proj/.qmd/index.yml", "collections: {}\nmodels:\n  embed: acme/custom-embedder\n");
    let status = run(&env, &project, &["status"]).success().stdout;
    assert!(status.contains("Embedding: https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"), "{status}");
    run(&env, &project, &["trust"]).success();
    let status = run(&env, &project, &["status"]).success().stdout;
    assert!(status.contains("Embedding: https://huggingface.co/acme/custom-embedder"), "{status}");
}

#[test]
fn vector_commands_name_the_untrusted_config_on_stderr_and_keep_stdout_clean() {
    let env = Env::new();
    let project = cloned_project(&env);
    let out = run(&env, &project, &["vsearch", "hello", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("This project's config defines update commands:\n  docs: touch hooked.txt\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("Skipping them — no terminal to confirm on."), "{}", out.stderr);
    assert_eq!(out.stdout, "[]\n", "results alone on stdout");
    // Your own config is never gated: nothing to say.
    let quiet = run(&env, env.root(), &["vsearch", "hello"]);
    assert!(!quiet.stderr.contains("not trusted"), "{}", quiet.stderr);
}

#[test]
fn an_index_untouched_for_two_weeks_gets_qmds_tip() {
    let env = Env::new();
    let old = env.write("notes/old.md", "# Old\n\nancient walrus\n");
    let month_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    fs::File::options().write(true).open(&old).unwrap().set_modified(month_ago).unwrap();
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let out = env.ok(&["vsearch", "walrus"]);
    assert!(out.stderr.contains("Tip: Index last updated 30 days ago. Run 'qmd update' to refresh."), "{}", out.stderr);
}

/// Runs a qmd 2.8.3 recording in `cwd` and compares all of it (the
/// recording machine's fixture folder mapped to this test's root).
#[track_caller]
fn assert_recorded(env: &Env, cwd: &Path, name: &str) {
    let rec = Recording::load(name);
    let out = env.run_recorded_in(cwd, &rec);
    assert_eq!(out.stdout, env.localize(&rec.stdout), "{name}: stdout");
    assert_eq!(out.stderr, env.localize(&rec.stderr), "{name}: stderr");
    assert_eq!(out.code, rec.code, "{name}: exit code");
}

#[test]
fn init_update_and_trust_match_upstream_recordings() {
    let env = Env::new();
    env.write("proj/docs/a.md", "# Doc\n\nhello project\n");
    env.write("outside/o.md", "# Out\n\nhello outside\n");
    let project = env.path("proj");
    assert_recorded(&env, &project, "parity-project-init.txt");
    // The config a clone brings (paths as on the recording machine, mapped).
    let config = "collections:\n  docs:\n    path: /tmp/peer/fixtures/proj/docs\n    pattern: \"**/*.md\"\n    update: touch hooked.txt\n  outside:\n    path: /tmp/peer/fixtures/outside\n    pattern: \"**/*.md\"\n";
    fs::write(project.join(".qmd/index.yml"), env.localize(config)).unwrap();
    let docs = project.join("docs");
    for name in [
        "parity-project-update-untrusted.txt",
        "parity-project-trust.txt",
        "parity-project-trust-revoke.txt",
        "parity-project-trust-revoke-again.txt",
    ] {
        assert_recorded(&env, &docs, name);
    }
    assert!(!docs.join("hooked.txt").exists(), "the untrusted hook never ran");
}

#[test]
fn relative_collection_paths_mean_the_project_from_any_folder_below_it() {
    let env = Env::new();
    let project = env.path("proj");
    for i in 0..5 {
        env.write(&format!("proj/docs/d{i}.md"), &format!("# Doc {i}\n\nproject walrus {i}\n"));
    }
    // A decoy where a path resolved against the current folder would land.
    env.write("proj/sub/docs/decoy.md", "# Decoy\n\ndecoy walrus\n");
    env.write(
        "proj/.qmd/index.yml",
        "collections:\n  docs:\n    path: docs\n    pattern: \"**/*.md\"\n    update: pwd > ran-here.txt\n",
    );
    let trust = [("QMD_TRUST_LOCAL_CONFIG", "1")];
    assert_eq!(env.qmd_with(&project, &["update"], &trust).success().indexed(), [5, 0, 0, 0]);
    let sub = project.join("sub");
    let out = env.qmd_with(&sub, &["update"], &trust).success();
    assert_eq!(out.indexed(), [0, 0, 5, 0], "{}", out.stdout);
    let deeper = project.join("sub/docs");
    assert_eq!(env.qmd_with(&deeper, &["update"], &trust).success().indexed(), [0, 0, 5, 0]);
    // The hook ran in the project's folder each time, never in the decoy.
    let ran = fs::read_to_string(project.join("docs/ran-here.txt")).unwrap();
    assert_eq!(Path::new(ran.trim()).canonicalize().unwrap(), project.join("docs").canonicalize().unwrap());
    assert!(!sub.join("docs/ran-here.txt").exists());
    assert_eq!(run(&env, &deeper, &["search", "decoy"]).stdout, "No results found.\n");
    let shown = run(&env, &sub, &["collection", "show", "docs"]).success().stdout;
    assert!(shown.contains(&format!("Path:     {}\n", project.join("docs").display())), "{shown}");
    // The file keeps the path as written.
    env.qmd_with(&sub, &["collection", "exclude", "docs"], &[]).success();
    assert!(fs::read_to_string(project.join(".qmd/index.yml")).unwrap().contains("path: docs\n"));
    // A relative path is inside the project: nothing for the gate.
    let gate = run(&env, &sub, &["trust"]).success().stdout;
    assert!(gate.contains("defines update commands"), "{gate}");
    assert!(!gate.contains("outside this project"), "{gate}");
}

#[test]
fn collection_add_and_update_cmd_approve_only_what_they_wrote() {
    let env = Env::new();
    let project = cloned_project(&env);
    env.write("proj/notes/n.md", "# Note\n\nhello notes\n");
    let docs = project.join("docs");
    let added = run(&env, &project, &["collection", "add", "notes", "--name", "notes"]).success().stdout;
    assert!(added.contains("items you have not approved"), "{added}");
    assert!(added.contains("  docs: touch hooked.txt"), "{added}");
    let out = run(&env, &project, &["update"]).success().stdout;
    assert!(out.contains("not trusted by default"), "the hook it never showed stays gated:\n{out}");
    assert!(!docs.join("hooked.txt").exists(), "the hook did not run");

    run(&env, &project, &["collection", "update-cmd", "notes", "touch", "mine.txt"]).success();
    run(&env, &project, &["update"]).success();
    assert!(!docs.join("hooked.txt").exists() && !project.join("notes/mine.txt").exists(), "still gated");
    assert!(run(&env, &project, &["search", "outside"]).stdout.contains("No results"), "outside path still gated");

    // Once the user approved the set, their own edits keep it approved.
    run(&env, &project, &["trust"]).success();
    run(&env, &project, &["collection", "update-cmd", "notes", "touch", "mine2.txt"]).success();
    let out = run(&env, &project, &["update"]).success().stdout;
    assert!(!out.contains("not trusted"), "{out}");
    assert!(docs.join("hooked.txt").exists() && project.join("notes/mine2.txt").exists());
}

#[test]
fn a_path_through_a_link_and_dotdot_never_reads_outside_an_untrusted_project() {
    let env = Env::new();
    let project = env.path("proj");
    env.write("proj/p.md", "# Project\n\nhello project\n");
    env.write("outside/deep/secret.md", "# Secret\n\nhello outside secret\n");
    env.write("outside/leak.md", "# Leak\n\nhello outside leak\n");
    std::os::unix::fs::symlink(env.path("outside/deep"), project.join("link")).unwrap();
    for (path, what) in
        [("link/..", "dotdot"), ("link", "link"), ("./link/../link", "both"), ("link/../../outside", "up")]
    {
        env.write(
            "proj/.qmd/index.yml",
            &format!("collections:\n  c:\n    path: \"{path}\"\n    pattern: \"**/*.md\"\n"),
        );
        let index = project.join(".qmd/index.qmdx");
        let _ = fs::remove_dir_all(&index);
        let out = run(&env, &project, &["update"]).success();
        for word in ["secret", "leak"] {
            let found = run(&env, &project, &["search", word]).stdout;
            assert_eq!(found, "No results found.\n", "{what} ({path}): read outside the project\n{}", out.stdout);
        }
    }
}

#[test]
fn control_characters_in_gated_items_and_names_reach_no_terminal() {
    let env = Env::new();
    let project = env.path("proj");
    env.write("proj/docs/a.md", "# A\n\nhello\n");
    // A hook that shows "touch harmless.txt" on a raw terminal.
    env.write(
        "proj/.qmd/index.yml",
        "collections:\n  \"ev\\e[31mil\\r\":\n    path: docs\n    pattern: \"**/*.md\"\n    update: \"touch hidden.txt\\r\\e[2Ktouch harmless.txt\"\n    context:\n      /: \"ctx \\e]0;title\\a\"\n",
    );
    let out = run(&env, &project, &["update"]).success();
    assert!(
        out.stdout.contains("touch hidden.txt\\r\\x1b[2Ktouch harmless.txt"),
        "the whole command, escaped:\n{}",
        out.stdout
    );
    for args in [
        &["update"][..],
        &["trust"],
        &["collection", "list"],
        &["collection", "show", "ev\x1b[31mil\r"],
        &["context", "list"],
        &["status"],
        &["ls"],
        &["ls", "ev\x1b[31mil\r"],
        &["trust", "revoke"],
    ] {
        let out = run(&env, &project, args);
        for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !text.contains('\x1b') && !text.contains('\r') && !text.contains('\x07'),
                "qmd {args:?} {stream}: {text:?}"
            );
        }
    }

    // On a real terminal the prompt shows the same escaped command, and
    // "n" runs nothing.
    run(&env, &project, &["trust", "revoke"]);
    // script(1) gives the command a pseudo-terminal, with the test's env.
    let shell = format!("{} update", common::qmd_bin().display());
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &shell, "/dev/null"]).current_dir(&project);
    for (key, value) in env.command(&project, &[], &[]).get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("script(1) runs");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"n\n").unwrap();
    let shown = String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).into_owned();
    assert!(shown.contains("Trust this project's .qmd config? [y/N]"), "a prompt on the terminal:\n{shown}");
    assert!(shown.contains("touch hidden.txt\\r\\x1b[2Ktouch harmless.txt"), "{shown}");
    // The progress bar draws with its own escapes; none of the config's.
    assert!(!shown.contains("\x1b[31m") && !shown.contains("\x1b[2Ktouch"), "{shown:?}");
    assert!(!project.join("docs/hidden.txt").exists() && !project.join("docs/harmless.txt").exists());

    // Such names are refused when a command would write them.
    env.write("notes/n.md", "# N\n\nnote\n");
    for name in [".", "..", "a\x1b[2Kb", "tab\tname"] {
        let out = run(&env, env.root(), &["collection", "add", &env.arg("notes"), "--name", name]).failure();
        assert!(out.stderr.contains("Invalid collection name"), "{name:?}: {}", out.stderr);
    }
    run(&env, env.root(), &["collection", "add", &env.arg("notes"), "--name", "notes"]).success();
    for name in [".", "..", "x\ry"] {
        let out = run(&env, env.root(), &["collection", "rename", "notes", name]).failure();
        assert!(out.stderr.contains("Invalid collection name"), "{name:?}: {}", out.stderr);
    }
}
