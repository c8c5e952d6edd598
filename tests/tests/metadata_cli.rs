//! Metadata filters from the command line: `search` and `query` with
//! `--filter` keep only documents whose frontmatter `qmd.metadata`
//! passes (through the WASI component), JSON results carry the metadata,
//! and bad filters are refused with qmd's messages (exit 1).

use crate::common;

use common::Env;

fn note(status: &str, priority: u32, topics: &str) -> String {
    format!(
        "---\ntitle: x\nqmd:\n  metadata:\n    status: {status}\n    priority: {priority}\n    topics: [{topics}]\n---\n\
         # Sourdough {status}\n\nSourdough bread with flour, water and salt.\n"
    )
}

fn indexed() -> Env {
    let env = Env::new();
    let dir = env.path("notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.md"), note("published", 3, "baking, bread")).unwrap();
    std::fs::write(dir.join("b.md"), note("draft", 1, "bread")).unwrap();
    std::fs::write(dir.join("c.md"), note("published", 7, "baking")).unwrap();
    std::fs::write(dir.join("plain.md"), "# Plain\n\nSourdough bread, no frontmatter.\n").unwrap();
    std::fs::write(dir.join("bad.md"), "---\nqmd:\n  metadata:\n    when: [1, a]\n---\n# Bad\n\nSourdough bread.\n")
        .unwrap();
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    env
}

fn files(stdout: &str) -> Vec<String> {
    let hits: Vec<serde_json::Value> = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let mut files: Vec<String> = hits.iter().map(|h| h["file"].as_str().unwrap().to_string()).collect();
    files.sort();
    files
}

#[test]
fn search_and_query_filter_and_results_carry_metadata() {
    let env = indexed();
    let published = r#"{"key":"status","operator":"eq","value":"published"}"#;
    let out = env.ok(&["search", "sourdough", "--json", "--filter", published]);
    assert_eq!(files(&out.stdout), ["qmd://notes/a.md", "qmd://notes/c.md"]);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    let a = hits.iter().find(|h| h["file"] == "qmd://notes/a.md").unwrap();
    assert_eq!(a["metadata"], serde_json::json!({"priority": 3, "status": "published", "topics": ["baking", "bread"]}));

    // The limit counts only passing documents.
    let one = env.ok(&["search", "sourdough", "--json", "-n", "1", "--filter", published]);
    assert_eq!(files(&one.stdout).len(), 1);

    // Unfiltered: every document, the plain and the bad one included, and
    // no metadata field where a document has none.
    let all = env.ok(&["search", "sourdough", "--json"]);
    assert_eq!(files(&all.stdout).len(), 5);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&all.stdout).unwrap();
    assert!(hits.iter().filter(|h| h.get("metadata").is_some()).count() == 3, "{}", all.stdout);

    let tree = r#"{"or":[{"key":"topics","operator":"all","value":["baking","bread"]},{"key":"priority","operator":"gt","value":5}]}"#;
    let out = env.ok(&["query", "sourdough bread", "--json", "--no-rerank", "--no-expand", "--filter", tree]);
    assert_eq!(files(&out.stdout), ["qmd://notes/a.md", "qmd://notes/c.md"]);

    // exists:false takes the document without metadata, not the one whose
    // frontmatter failed.
    let absent = r#"{"key":"status","operator":"exists","value":false}"#;
    let out = env.ok(&["search", "sourdough", "--json", "--filter", absent]);
    assert_eq!(files(&out.stdout), ["qmd://notes/plain.md"]);
}

#[test]
fn bad_filters_are_refused_with_qmds_messages() {
    let env = indexed();
    let out =
        env.qmd(&["search", "sourdough", "--filter", r#"{"key":"a","operator":"exists","value":"yes"}"#]).failure();
    assert!(
        out.stderr.contains("Invalid metadata filter at $.value: 'exists' requires a boolean value"),
        "{}",
        out.stderr
    );
    let out = env.qmd(&["query", "sourdough", "--filter", "{status: published}"]).failure();
    assert!(out.stderr.contains("Invalid --filter JSON: "), "{}", out.stderr);
    assert!(
        out.stderr.contains(r#"--filter '{"key":"status","operator":"eq","value":"published"}'"#),
        "{}",
        out.stderr
    );
    let out = env.qmd(&["search", "x", "--filter", r#"{"key":"a","operator":"near","value":1}"#]).failure();
    assert!(out.stderr.contains("unknown operator 'near' — expected one of: and, or, not"), "{}", out.stderr);
}

#[test]
fn update_warns_of_invalid_frontmatter_and_status_counts_metadata() {
    let env = Env::new();
    let dir = env.path("notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.md"), note("published", 3, "baking")).unwrap();
    std::fs::write(dir.join("plain.md"), "# Plain\n").unwrap();
    std::fs::write(dir.join("bad.md"), "---\nqmd:\n  metadata:\n    gone: null\n---\n# Bad\n").unwrap();
    let out = env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert!(
        out.stderr.contains("⚠ 1 file(s) have invalid qmd.metadata frontmatter and are excluded from filtered search"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("qmd://notes/bad.md: metadata key \"gone\": null is not supported"), "{}", out.stderr);
    let status = env.ok(&["status"]);
    assert!(
        status.stdout.contains(
            "Metadata: 1 documents with qmd.metadata (1 with invalid qmd.metadata frontmatter, excluded from --filter searches)"
        ),
        "{}",
        status.stdout
    );

    // Fixed and extended: the next update says nothing, status counts anew;
    // an unchanged file is not read again, so it is not warned of twice.
    std::fs::write(dir.join("bad.md"), note("draft", 1, "bread")).unwrap();
    std::fs::write(dir.join("plain.md"), note("draft", 2, "bread")).unwrap();
    let out = env.ok(&["update"]);
    assert!(!out.stderr.contains("qmd.metadata"), "{}", out.stderr);
    let status = env.ok(&["status"]);
    assert!(status.stdout.contains("Metadata: 3 documents with qmd.metadata\n"), "{}", status.stdout);
    let drafts =
        env.ok(&["search", "sourdough", "--json", "--filter", r#"{"key":"status","operator":"eq","value":"draft"}"#]);
    assert_eq!(files(&drafts.stdout), ["qmd://notes/bad.md", "qmd://notes/plain.md"]);
}
