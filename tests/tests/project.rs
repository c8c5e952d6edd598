//! Project-local indexes (`qmd init`, `.qmd/index.yml` found from any
//! folder below it) and qmd's trust gate for such a config: its update
//! hooks, collection paths outside the project and custom models are used
//! only once approved. Expected texts are qmd 2.8.3's, run side by side.

mod common;

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
