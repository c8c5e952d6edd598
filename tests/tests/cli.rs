//! End-to-end tests of the `qmd` command line against upstream qmd's
//! recorded behaviour (`tests/fixtures/peer/out/*.txt`) over the fixture
//! corpus `tests/fixtures/peer/corpus/{notes,myproject}`.
//!
//! Accepted differences from upstream, asserted as our own behaviour:
//! - multi-get glob results are ordered by collection then path (upstream:
//!   index order), so those are compared as sets of entries;
//! - search scores differ (our BM25 ORs plain terms and uses Lucene's IDF), so
//!   search output is compared with the score digits masked, and results
//!   whose upstream scores tie may come in another order;
//! - `collection remove` has no content-hash table to clean up;
//! - command-line usage errors come from clap (same exit code, other text).

use crate::common;

use std::collections::BTreeMap;
use std::fs;

use common::{Env, Output, Recording, first_docid, mask_lines, multiset, recordings};

/// Compares a run with a recording: stdout, stderr and exit code.
fn exact(env: &Env, rec: &Recording, out: &Output) -> Option<String> {
    let (stdout, stderr) = (env.localize(&rec.stdout), env.localize(&rec.stderr));
    if out.stdout == stdout && out.stderr == stderr && out.code == rec.code {
        return None;
    }
    Some(format!(
        "{}: `{}`\n--- expected stdout ---\n{stdout}--- got stdout ---\n{}--- expected stderr ---\n{stderr}--- got stderr ---\n{}--- exit: expected {}, got {}",
        rec.name, rec.command, out.stdout, out.stderr, rec.code, out.code
    ))
}

#[track_caller]
fn assert_no_failures(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} mismatch(es):\n\n{}", failures.len(), failures.join("\n\n"));
}

#[track_caller]
fn assert_exact(env: &Env, name: &str) -> Output {
    let rec = Recording::load(name);
    let out = env.run_recorded(&rec);
    if let Some(diff) = exact(env, &rec, &out) {
        panic!("{diff}");
    }
    out
}

/// Runs a recording and compares stdout with `mask_lines(…, prefix)` applied
/// to both sides (for `Updated:  4s ago`-style times).
#[track_caller]
fn assert_masked(env: &Env, name: &str, prefix: &str) {
    let rec = Recording::load(name);
    let out = env.run_recorded(&rec);
    assert_eq!(out.code, rec.code, "{name}: {}", out.stderr);
    assert_eq!(out.stderr, env.localize(&rec.stderr), "{name}");
    assert_eq!(mask_lines(&out.stdout, prefix), mask_lines(&env.localize(&rec.stdout), prefix), "{name}");
}

// ---------------------------------------------------------------------------
// Setup, contexts, collections

#[test]
fn setup_matches_upstream() {
    let env = Env::new();
    env.copy_corpus("notes");
    env.copy_corpus("myproject");
    for name in ["collection-add-myproject.txt", "collection-add-notes.txt"] {
        assert_exact(&env, name);
    }
    for name in ["context-add-myproject-src.txt", "context-add-global.txt", "context-add-notes-journals.txt"] {
        assert_exact(&env, name);
    }
    assert_exact(&env, "context-list.txt");
    assert_exact(&env, "collection-show-myproject.txt");
    assert_masked(&env, "collection-list.txt", "  Updated:");
    assert_exact(&env, "ls.txt");
}

#[test]
fn management_errors_match_upstream() {
    let env = Env::peer();
    for name in [
        "error-collection-add-existing-name.txt",
        "error-collection-add-nonexistent.txt",
        "error-collection-remove-nosuch.txt",
        "error-context-rm-nosuch.txt",
    ] {
        assert_exact(&env, name);
    }
    // Usage errors: clap's wording, upstream's exit code.
    for name in ["error-get-no-args.txt", "error-no-command.txt", "error-unknown-command.txt"] {
        let rec = Recording::load(name);
        let out = env.run_recorded(&rec);
        assert_eq!(out.code, rec.code, "{name}");
        assert!(!out.stderr.trim().is_empty(), "{name}: a usage error explains itself on stderr");
    }
}

#[test]
fn collection_lifecycle_matches_upstream() {
    let env = Env::peer();

    // Rename: documents move with the collection.
    assert_exact(&env, "lifecycle-01-collection-rename.txt");
    assert_exact(&env, "lifecycle-02-ls.txt");
    let got = env.ok(&["get", "qmd://journal-notes/meeting.md", "-l", "1"]);
    assert_eq!(
        got.stdout,
        "qmd://journal-notes/meeting.md  #9e1671\nFolder Context: Personal knowledge base\n---\n\n1: # Team Meeting Notes\n"
    );
    let gone = env.qmd(&["get", "qmd://notes/meeting.md"]).failure();
    assert!(gone.stderr.starts_with("Document not found: qmd://notes/meeting.md\n"), "{}", gone.stderr);
    env.qmd(&["collection", "show", "notes"]).failure();
    assert!(env.ok(&["collection", "show", "journal-notes"]).stdout.contains("  Contexts: 1\n"));
    assert!(env.ok(&["context", "list"]).stdout.contains("journal-notes\n  journals\n    Daily journals\n"));
    let hits = env.ok(&["search", "meeting", "--files"]).stdout;
    assert!(hits.starts_with("#9e1671,") && hits.contains(",qmd://journal-notes/meeting.md,"), "{hits}");

    // Exclude: not searched by default, still with -c.
    assert_exact(&env, "lifecycle-03-collection-exclude.txt");
    assert_masked(&env, "lifecycle-04-collection-list.txt", "  Updated:");
    assert!(env.ok(&["collection", "show", "myproject"]).stdout.contains("  Include:  no\n"));
    let rec = Recording::load("lifecycle-05-search-journal.txt");
    if let Some(diff) = compare_search(&env, &rec, &env.run_recorded(&rec)) {
        panic!("{diff}");
    }
    assert_eq!(env.ok(&["search", "handleError"]).stdout, "No results found.\n");
    let scoped = env.ok(&["search", "handleError", "-c", "myproject", "--files"]).stdout;
    assert!(scoped.contains(",qmd://myproject/src/errors.ts,"), "{scoped}");
    assert!(scoped.contains(",qmd://myproject/docs/errors.md,"), "{scoped}");
    // `get` is not a search: excluded collections stay readable.
    env.ok(&["get", "src/errors.ts"]);

    // Include: back in default searches.
    assert_exact(&env, "lifecycle-06-collection-include.txt");
    assert!(env.ok(&["collection", "show", "myproject"]).stdout.contains("  Include:  yes (default)\n"));
    assert!(env.ok(&["search", "handleError", "--files"]).stdout.contains(",qmd://myproject/src/errors.ts,"));

    // Remove: upstream also reports cleaning its content-hash table, which we do not have.
    let rec = Recording::load("lifecycle-07-collection-remove.txt");
    let out = env.run_recorded(&rec).success();
    let expected: String = rec.stdout.split_inclusive('\n').filter(|l| !l.starts_with("  Cleaned up ")).collect();
    assert_eq!(out.stdout, expected);
    assert_masked(&env, "lifecycle-08-collection-list.txt", "  Updated:");
    env.qmd(&["get", "meeting.md"]).failure();
    env.qmd(&["get", "#9e1671"]).failure();
    assert_eq!(env.ok(&["search", "journal"]).stdout, "No results found.\n");
    assert_eq!(env.ok(&["ls"]).stdout, "Collections:\n\n  qmd://myproject/  (7 files)\n");
    let status = env.ok(&["status"]).stdout;
    assert!(status.contains("  Total:    7 files indexed\n"), "{status}");
    assert!(!status.contains("journal-notes"), "{status}");
    env.qmd(&["collection", "remove", "journal-notes"]).failure();
}

#[test]
fn rename_refuses_existing_and_invalid_names() {
    let env = Env::peer();
    let out = env.qmd(&["collection", "rename", "notes", "myproject"]).failure();
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
    env.qmd(&["collection", "rename", "notes", "a/b"]).failure();
    env.qmd(&["collection", "rename", "nosuch", "other"]).failure();
    assert!(env.ok(&["ls"]).stdout.contains("  qmd://notes/  (4 files)\n"));
}

// ---------------------------------------------------------------------------
// ls and status

/// An `ls` file line with its date column (`Nov 21 03:49`) masked.
fn mask_ls_date(line: &str) -> String {
    let Some(at) = line.find("  qmd://") else { return line.to_string() };
    let (head, uri) = line.split_at(at);
    assert!(head.len() > 14, "ls line without a date: {line:?}");
    let (size, date) = head.split_at(head.len() - 12);
    let month = &date[..3];
    assert!(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].contains(&month),
        "ls date {date:?} in {line:?}"
    );
    assert!(size.ends_with("  "), "two spaces before the date: {line:?}");
    format!("{size}<date>{uri}")
}

#[test]
fn ls_variants() {
    let env = Env::peer();
    assert_exact(&env, "ls.txt");
    for name in ["ls-notes.txt", "ls-myproject-docs.txt"] {
        let rec = Recording::load(name);
        let out = env.run_recorded(&rec).success();
        let got: Vec<String> = out.stdout.lines().map(mask_ls_date).collect();
        let expected: Vec<String> = rec.stdout.lines().map(mask_ls_date).collect();
        assert_eq!(got, expected, "{name}");
    }
    // The same listing by qmd:// path, by path on disk, and with a trailing slash.
    let docs = env.ok(&["ls", "myproject/docs"]).stdout;
    assert_eq!(env.ok(&["ls", "qmd://myproject/docs"]).stdout, docs);
    assert_eq!(env.ok(&["ls", &env.arg("myproject/docs")]).stdout, docs);
    let journals = env.ok(&["ls", "notes/journals/"]).stdout;
    assert_eq!(journals.lines().count(), 3, "{journals}");
    assert!(journals.lines().all(|l| l.contains("  qmd://notes/journals/2025-")), "{journals}");
    let all = env.ok(&["ls", "myproject"]).stdout;
    let paths: Vec<&str> = all.lines().filter_map(|l| l.split("  qmd://").nth(1)).collect();
    assert_eq!(
        paths,
        [
            "myproject/data/large.json",
            "myproject/data/small.json",
            "myproject/docs/api.md",
            "myproject/docs/architecture.md",
            "myproject/docs/errors.md",
            "myproject/src/errors.ts",
            "myproject/src/utils.ts"
        ]
    );
    // Nothing under a prefix: qmd's message (exit 0).
    assert_eq!(env.ok(&["ls", "notes/nothing-here"]).stdout, "No files found under qmd://notes/nothing-here\n");
    let missing = env.qmd(&["ls", "nosuch"]).failure();
    assert!(missing.stderr.contains("nosuch"), "{}", missing.stderr);
    env.qmd(&["ls", "/definitely/not/a/collection"]).failure();
}

#[test]
fn ls_and_status_on_an_empty_index() {
    let env = Env::new();
    assert_eq!(env.ok(&["ls"]).stdout, "Collections:\n\n");
    let status = env.ok(&["status"]).stdout;
    assert!(status.contains("  Total:    0 files indexed\n"), "{status}");
    assert_eq!(env.ok(&["collection", "list"]).stdout, "Collections (0):\n\n");
    assert_eq!(env.ok(&["search", "anything"]).stdout, "No results found.\n");
}

#[test]
fn status_counts() {
    let env = Env::peer();
    let status = env.ok(&["status"]).stdout;
    let index = env.cache_home().join("qmd/index.qmdx");
    for needle in [
        "QMD Status\n\n".to_string(),
        format!("Index: {}\n", index.display()),
        "  Total:    11 files indexed\n".into(),
        "  Vectors:  0 embedded\n".into(),
        "  myproject (qmd://myproject/)\n    Pattern:  **/*.{md,ts,json}\n    Files:    7 (updated ".into(),
        "    Contexts: 1\n      /src: Source code for error utilities\n".into(),
        "  notes (qmd://notes/)\n    Pattern:  **/*.md\n    Files:    4 (updated ".into(),
        "    Contexts: 1\n      /journals: Daily journals\n".into(),
        "\nGlobal context: Personal knowledge base\n".into(),
    ] {
        assert!(status.contains(&needle), "status lacks {needle:?}:\n{status}");
    }
    // Upstream's section order: myproject before notes.
    assert!(status.find("  myproject (").unwrap() < status.find("  notes (").unwrap());
}

// ---------------------------------------------------------------------------
// get

#[test]
fn get_recordings_match_upstream() {
    let env = Env::peer();
    let names = recordings("get-");
    assert!(names.len() >= 15, "recordings missing: {names:?}");
    let failures: Vec<String> = names
        .iter()
        .filter_map(|name| {
            let rec = Recording::load(name);
            exact(&env, &rec, &env.run_recorded(&rec))
        })
        .collect();
    assert_no_failures(failures);
}

#[test]
fn get_shows_the_full_context_of_the_resolved_document() {
    // Upstream shows only the global context for some spellings; we show the
    // context chain of the document, however it was named.
    let env = Env::peer();
    let header = "qmd://myproject/src/utils.ts  #cd9f6f\nFolder Context: Personal knowledge base\n\nSource code for error utilities\n---\n\n";
    for spelling in
        ["src/utils.ts", "qmd://myproject/src/utils.ts", "utils.ts", "#cd9f6f", "cd9f6f", "myproject/src/utils.ts"]
    {
        let out = env.ok(&["get", spelling, "-l", "1"]);
        assert_eq!(out.stdout, format!("{header}1: export function formatDate(date: Date): string {{\n"), "{spelling}");
    }
    let path = env.arg("myproject/src/utils.ts");
    let out = env.ok(&["get", &path, "-l", "1"]);
    assert!(out.stdout.starts_with(header), "{}", out.stdout);
}

#[test]
fn get_line_options() {
    let env = Env::peer();
    let body = |args: &[&str]| {
        let out = env.ok(args).stdout;
        out.split_once("---\n\n").map(|(_, b)| b.to_string()).expect("get header")
    };
    assert_eq!(body(&["get", "meeting.md", "-l", "2", "--no-line-numbers"]), "# Team Meeting Notes\n\n");
    assert_eq!(body(&["get", "meeting.md:3:1"]), "3: Date: 2025-05-03\n");
    // Flags win over the suffix.
    assert_eq!(body(&["get", "meeting.md:3:1", "--from", "1", "-l", "1"]), "1: # Team Meeting Notes\n");
    assert_eq!(body(&["get", "docs/api.md", "--from", "121"]), "121: \n");
    assert!(!body(&["get", "docs/api.md", "--from", "500"]).contains("Line"));
    let full = env.ok(&["get", "docs/errors.md", "--full-path", "-l", "1"]).stdout;
    assert_eq!(
        full,
        "./myproject/docs/errors.md\nFolder Context: Personal knowledge base\n---\n\n1: # Error Handling Guide\n"
    );
}

// ---------------------------------------------------------------------------
// multi-get

/// Splits `multi-get` CLI output into its `File: …` entries.
fn multi_get_entries(stdout: &str) -> Vec<String> {
    let separator = format!("\n{}\nFile: ", "=".repeat(60));
    let mut parts = stdout.split(separator.as_str());
    assert_eq!(parts.next(), Some(""), "multi-get output starts with an entry: {stdout:?}");
    parts.map(|entry| format!("File: {}", entry.trim_end_matches('\n'))).collect()
}

/// The `File:` name of an entry.
fn entry_name(entry: &str) -> &str {
    let line = entry.lines().next().unwrap_or_default();
    line.strip_prefix("File: ").and_then(|l| l.split("  #").next()).unwrap_or(line)
}

#[test]
fn multi_get_recordings_match_upstream() {
    // Globs upstream returns in index order; we sort by collection, then path.
    const REORDERED: [&str; 2] = ["multi-get-docs-l20.txt", "multi-get-doublestar.txt"];
    let env = Env::peer();
    let names = recordings("multi-get-");
    assert!(names.len() >= 20, "recordings missing: {names:?}");
    let mut failures = Vec::new();
    for name in &names {
        let rec = Recording::load(name);
        let out = env.run_recorded(&rec);
        if !REORDERED.contains(&name.as_str()) {
            failures.extend(exact(&env, &rec, &out));
            continue;
        }
        let (ours, theirs) = (multi_get_entries(&out.stdout), multi_get_entries(&rec.stdout));
        let mut sorted: Vec<&str> = ours.iter().map(|e| entry_name(e)).collect();
        sorted.sort();
        let names_in_order: Vec<&str> = ours.iter().map(|e| entry_name(e)).collect();
        if out.code != rec.code || out.stderr != rec.stderr || multiset(&ours) != multiset(&theirs) {
            failures.push(format!(
                "{name}: entries differ (as sets)\n--- expected ---\n{}--- got ---\n{}--- stderr ---\n{}",
                rec.stdout, out.stdout, out.stderr
            ));
        } else if names_in_order != sorted {
            failures.push(format!("{name}: entries not sorted by path: {names_in_order:?}"));
        }
    }
    assert_no_failures(failures);
}

#[test]
fn multi_get_across_collections_is_sorted_by_collection_then_path() {
    let env = Env::peer();
    let out = env.ok(&["multi-get", "**/*.md", "-l", "1", "--format", "files"]).stdout;
    let files: Vec<&str> = out.lines().filter_map(|l| l.split(',').nth(1)).collect();
    assert_eq!(
        files,
        [
            "docs/api.md",
            "docs/architecture.md",
            "docs/errors.md",
            "journals/2025-04-30.md",
            "journals/2025-05-01.md",
            "journals/2025-05-02.md",
            "meeting.md"
        ],
        "{out}"
    );
}

#[test]
fn multi_get_lists_and_docids() {
    let env = Env::peer();
    // Duplicates collapse; docids with or without `#`.
    let out = env.ok(&["multi-get", "#cd9f6f, src/utils.ts, qmd://myproject/src/utils.ts", "--format", "files"]);
    assert_eq!(
        out.stdout,
        "#cd9f6f,qmd://myproject/src/utils.ts,\"Personal knowledge base\n\nSource code for error utilities\"\n"
    );
    // Only misses: the messages, and success, as qmd (a pattern that
    // matches nothing fails).
    let out = env.ok(&["multi-get", "missing.md, nothere.md"]);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("File not found: missing.md"), "{}", out.stderr);
    assert!(out.stderr.contains("File not found: nothere.md"), "{}", out.stderr);
    // -l applies per file, with the truncation marker numbered too.
    let out = env.ok(&["multi-get", "meeting.md, docs/errors.md", "-l", "2"]).stdout;
    let entries = multi_get_entries(&out);
    assert_eq!(entries.len(), 2);
    assert!(
        entries[0].ends_with("1: # Team Meeting Notes\n2: \n3: \n4: [... truncated 41 more lines]"),
        "{}",
        entries[0]
    );
    assert!(entries[1].ends_with("3: \n4: [... truncated 12 more lines]"), "{}", entries[1]);
    // --no-line-numbers.
    let out = env.ok(&["multi-get", "src/errors.ts", "--no-line-numbers"]).stdout;
    assert!(
        out.ends_with(
            "---\n\nexport function handleError(err: Error) {\n  console.error(err.message);\n  throw err;\n}\n\n"
        ),
        "{out}"
    );
}

// ---------------------------------------------------------------------------
// search

/// One search result as printed, with its score masked.
#[derive(Debug)]
struct Hit {
    docid: String,
    text: String,
    score: Option<f64>,
}

fn search_format(args: &[String]) -> &'static str {
    let mut format = "cli";
    for (i, arg) in args.iter().enumerate() {
        let named = match arg.as_str() {
            "--format" => args.get(i + 1).map(String::as_str).unwrap_or_default(),
            other => other.strip_prefix("--format=").or_else(|| other.strip_prefix("--")).unwrap_or_default(),
        };
        if let Some(f) = ["json", "csv", "md", "xml", "files"].into_iter().find(|f| *f == named) {
            format = f;
        }
    }
    format
}

/// Splits search output into hits. Every hit's text runs to the start of
/// the next one (the last gets the separator the others carry), so the hits
/// partition the output exactly.
fn split_hits(format: &str, stdout: &str) -> Vec<Hit> {
    if format == "json" {
        let value: serde_json::Value = serde_json::from_str(stdout).expect("search --json output is JSON");
        return value
            .as_array()
            .expect("a JSON array")
            .iter()
            .map(|hit| {
                let mut hit = hit.clone();
                let score = hit.get("score").and_then(serde_json::Value::as_f64);
                hit["score"] = serde_json::Value::Null;
                let docid = hit["docid"].as_str().unwrap_or_default().trim_start_matches('#').to_string();
                Hit { docid, text: serde_json::to_string_pretty(&hit).expect("json"), score }
            })
            .collect();
    }
    let lines: Vec<&str> = stdout.split_inclusive('\n').collect();
    let is_row =
        |l: &str| l.get(..8).is_some_and(|p| p.starts_with('#') && p.ends_with(',') && first_docid(p).is_some());
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let (line, next) = (lines[i], lines.get(i + 1).copied().unwrap_or_default());
            match format {
                "cli" => line.starts_with("qmd://") && next.starts_with("Title: "),
                "md" => line == "---\n" && next.starts_with("# "),
                "xml" => line.starts_with("<file "),
                "csv" | "files" => is_row(line),
                _ => unreachable!("format {format}"),
            }
        })
        .collect();
    if let Some(&first) = starts.first() {
        let head = if format == "csv" { 1 } else { 0 };
        assert_eq!(first, head, "unexpected text before the first hit: {stdout:?}");
    }
    let separator = match format {
        "cli" => "\n\n",
        _ => "",
    };
    let mut hits = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let mut text: String = lines[start..end].concat();
        if k + 1 == starts.len() {
            text.push_str(separator);
        }
        let docid = first_docid(&text).unwrap_or_default();
        let mut score = None;
        match format {
            "cli" => {
                text = text
                    .split_inclusive('\n')
                    .map(|line| match line.strip_prefix("Score: ") {
                        Some(pct) if score.is_none() => {
                            let pct = pct.trim().trim_end_matches('%');
                            score = Some(pct.parse::<f64>().expect("score percentage") / 100.0);
                            "Score: <masked>\n".to_string()
                        }
                        _ => line.to_string(),
                    })
                    .collect();
            }
            "csv" | "files" => {
                let mut fields = text.splitn(3, ',');
                let (id, value, rest) = (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
                score = Some(value.parse().expect("score field"));
                text = format!("{id},<masked>,{rest}");
            }
            _ => {}
        }
        hits.push(Hit { docid, text, score });
    }
    hits
}

/// Compares a search run with its recording, scores aside: the same hits
/// with the same docids, titles, contexts, lines and snippets, in the same
/// order except among hits whose upstream scores tie.
fn compare_search(env: &Env, rec: &Recording, out: &Output) -> Option<String> {
    let fail = |why: String| {
        Some(format!(
            "{}: `{}`: {why}\n--- expected stdout ---\n{}--- got stdout ---\n{}--- got stderr ---\n{}",
            rec.name, rec.command, rec.stdout, out.stdout, out.stderr
        ))
    };
    if out.code != rec.code || out.stderr != env.localize(&rec.stderr) {
        return fail(format!("exit {} (expected {}) or stderr differs", out.code, rec.code));
    }
    let format = search_format(&rec.args());
    if format == "csv" && out.stdout.lines().next() != rec.stdout.lines().next() {
        return fail("CSV header differs".into());
    }
    let (theirs, ours) = (split_hits(format, &rec.stdout), split_hits(format, &out.stdout));
    if theirs.is_empty() {
        // The empty forms (`No results found.`, `[]`, …) are exact.
        return (out.stdout != rec.stdout).then(|| fail("empty result differs".into())).flatten();
    }
    if theirs.len() != ours.len() {
        return fail(format!("{} hits, expected {}", ours.len(), theirs.len()));
    }
    // md/xml print no scores: take upstream's from the same query's CLI recording.
    let base: BTreeMap<String, f64> = match format {
        "md" | "xml" => {
            let base = Recording::load(&rec.name.replace(&format!("-{format}.txt"), ".txt"));
            split_hits("cli", &base.stdout).into_iter().filter_map(|h| Some((h.docid, h.score?))).collect()
        }
        _ => BTreeMap::new(),
    };
    let score_of = |h: &Hit| h.score.or_else(|| base.get(&h.docid).copied());
    // Upstream's tie groups: consecutive hits whose scores are within rounding.
    let mut start = 0;
    while start < theirs.len() {
        let mut end = start + 1;
        while end < theirs.len() {
            match (score_of(&theirs[end - 1]), score_of(&theirs[end])) {
                (Some(a), Some(b)) if (a - b).abs() < 0.005 => end += 1,
                _ => break,
            }
        }
        let expected: Vec<&str> = theirs[start..end].iter().map(|h| h.text.as_str()).collect();
        let got: Vec<&str> = ours[start..end].iter().map(|h| h.text.as_str()).collect();
        if multiset(&expected) != multiset(&got) {
            return fail(format!("hits {}..{} differ (scores masked)", start + 1, end));
        }
        start = end;
    }
    // Our own scores: in (0, 1], best first.
    let scores: Vec<f64> = ours.iter().filter_map(|h| h.score).collect();
    if scores.iter().any(|s| !(*s > 0.0 && *s <= 1.0)) || scores.windows(2).any(|w| w[0] < w[1]) {
        return fail(format!("scores out of range or order: {scores:?}"));
    }
    None
}

#[test]
fn search_recordings_match_upstream() {
    let env = Env::peer();
    let names = recordings("search-");
    assert!(names.len() >= 20, "recordings missing: {names:?}");
    let mut failures = Vec::new();
    for name in &names {
        let rec = Recording::load(name);
        let out = env.run_recorded(&rec);
        match name.as_str() {
            // A leading `-` is an option to both; only the wording differs.
            "search-minus-work.txt" => {
                if !(out.code == 1 || out.code == 2) || out.stderr.trim().is_empty() || !out.stdout.is_empty() {
                    failures.push(format!("{name}: expected a usage error, got {out:?}"));
                }
            }
            _ => failures.extend(compare_search(&env, &rec, &out)),
        }
    }
    assert_no_failures(failures);
}

#[test]
fn search_scores_and_limits() {
    let env = Env::peer();
    // Scores are what the CLI shows; --min-score filters on them.
    let rows = env.ok(&["search", "engine", "--csv"]).stdout;
    let scores: Vec<f64> = rows.lines().skip(1).filter_map(|l| l.split(',').nth(1)?.parse().ok()).collect();
    assert!(!scores.is_empty(), "{rows}");
    let threshold = format!("{}", scores[0] - 0.001);
    let filtered = env.ok(&["search", "engine", "--files", "--min-score", &threshold]).stdout;
    assert!(filtered.lines().count() >= 1 && filtered.lines().count() <= scores.len(), "{filtered}");
    let above = format!("{}", scores[0] + 0.001);
    let none = env.ok(&["search", "engine", "--min-score", &above]).stdout;
    assert_eq!(
        none,
        "No results found above minimum score threshold.
"
    );
    // `--files` rows (contexts may span lines).
    let rows = |args: &[&str]| -> Vec<String> {
        env.ok(args).stdout.lines().filter(|l| l.starts_with('#')).map(str::to_string).collect()
    };
    // -n, --all.
    assert_eq!(rows(&["search", "line", "--files", "-n", "1"]).len(), 1);
    assert_eq!(rows(&["search", "line", "--files", "-n", "2"]).len(), 2);
    let all = rows(&["search", "the", "--files", "--all"]).len();
    assert!(all > 5, "--all returns every match ({all})");
    let cli = env.ok(&["search", "the"]).stdout.matches("\nTitle: ").count();
    assert_eq!(cli, 5, "cli defaults to 5 results");
    // -c restricts, and is repeatable.
    let notes = rows(&["search", "the", "--files", "--all", "-c", "notes"]);
    assert!(!notes.is_empty() && notes.iter().all(|l| l.contains(",qmd://notes/")), "{notes:?}");
    let both = rows(&["search", "the", "--files", "--all", "-c", "notes", "-c", "myproject"]);
    assert_eq!(both.len(), all);
    // Negation only: nothing.
    assert_eq!(env.ok(&["search", "--", "-work"]).stdout, "No results found.\n");
    // Legacy flags and --format agree.
    assert_eq!(
        env.ok(&["search", "journal", "--json"]).stdout,
        env.ok(&["search", "journal", "--format", "json"]).stdout
    );
}

// ---------------------------------------------------------------------------
// update

#[test]
fn update_reports_changes() {
    let env = Env::peer();
    // One `Indexed:` line per collection, as qmd: their sum.
    let indexed = |out: &Output| {
        let mut sums = [0u32; 4];
        for line in out.stdout.lines().filter_map(|l| l.strip_prefix("Indexed: ")) {
            let numbers = line.split(", ").map(|part| part.split(' ').next().unwrap().parse::<u32>().unwrap());
            sums.iter_mut().zip(numbers).for_each(|(sum, n)| *sum += n);
        }
        let [new, updated, unchanged, removed] = sums;
        format!("Indexed: {new} new, {updated} updated, {unchanged} unchanged, {removed} removed")
    };
    assert_eq!(indexed(&env.ok(&["update"])), "Indexed: 0 new, 0 updated, 11 unchanged, 0 removed");

    let meeting = env.path("notes/meeting.md");
    let text = fs::read_to_string(&meeting).unwrap();
    fs::write(&meeting, format!("{text}\nAction item: buy a quokkaplush.\n")).unwrap();
    assert_eq!(indexed(&env.ok(&["update"])), "Indexed: 0 new, 1 updated, 10 unchanged, 0 removed");
    let hit = env.ok(&["search", "quokkaplush", "--files"]).stdout;
    assert!(hit.contains(",qmd://notes/meeting.md,"), "{hit}");
    assert!(env.ok(&["get", "meeting.md"]).stdout.contains("quokkaplush"));

    fs::remove_file(env.path("notes/journals/2025-04-30.md")).unwrap();
    assert_eq!(indexed(&env.ok(&["update"])), "Indexed: 0 new, 0 updated, 10 unchanged, 1 removed");
    let gone = env.qmd(&["get", "journals/2025-04-30.md"]).failure();
    assert!(gone.stderr.starts_with("Document not found: journals/2025-04-30.md\n"), "{}", gone.stderr);
    env.qmd(&["get", "#c00322"]).failure();
    assert_eq!(env.ok(&["search", "Planned"]).stdout, "No results found.\n");
    assert!(env.ok(&["status"]).stdout.contains("  Total:    10 files indexed\n"));

    env.write("notes/journals/2025-05-03.md", "# May 3 Journal\n\nWrote end-to-end tests.\n");
    assert_eq!(indexed(&env.ok(&["update"])), "Indexed: 1 new, 0 updated, 10 unchanged, 0 removed");
    let hit = env.ok(&["get", "journals/2025-05-03.md", "-l", "1"]).stdout;
    assert!(hit.starts_with("qmd://notes/journals/2025-05-03.md  #"), "{hit}");
    assert!(hit.contains("Folder Context: Personal knowledge base\n\nDaily journals\n"), "{hit}");
    assert!(env.ok(&["ls"]).stdout.contains("  qmd://notes/  (4 files)\n"));
    // Files outside the mask are not picked up.
    env.write("notes/todo.txt", "quokkaplush\n");
    assert_eq!(indexed(&env.ok(&["update"])), "Indexed: 0 new, 0 updated, 11 unchanged, 0 removed");
}

// ---------------------------------------------------------------------------
// Index locations

#[test]
fn index_and_config_follow_xdg_dirs() {
    let env = Env::peer();
    let index = env.cache_home().join("qmd/index.qmdx");
    assert!(index.join("manifest.json").is_file(), "no index at {}", index.display());
    let config = env.config_home().join("qmd/index.yml");
    let yaml = fs::read_to_string(&config).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    for needle in ["myproject", "notes", "**/*.{md,ts,json}", "Personal knowledge base", "Daily journals"] {
        assert!(yaml.contains(needle), "index.yml lacks {needle:?}:\n{yaml}");
    }
    // Nothing under HOME's defaults.
    assert!(!env.path(".cache/qmd").exists());
    assert!(!env.path(".config/qmd").exists());
    assert!(env.ok(&["status"]).stdout.contains(&format!("Index: {}\n", index.display())));
}

#[test]
fn named_index_is_isolated() {
    let env = Env::new();
    env.copy_corpus("notes");
    env.copy_corpus("myproject");
    env.ok(&["--index", "other", "collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert!(env.cache_home().join("qmd/other.qmdx/manifest.json").is_file());
    assert!(env.config_home().join("qmd/other.yml").is_file());
    assert!(!env.config_home().join("qmd/index.yml").exists());

    // The default index knows nothing of it.
    assert_eq!(env.ok(&["ls"]).stdout, "Collections:\n\n");
    assert_eq!(env.ok(&["search", "journal"]).stdout, "No results found.\n");
    env.qmd(&["get", "meeting.md"]).failure();

    // The named one does, with --index before or after the command.
    assert_eq!(env.ok(&["--index", "other", "ls"]).stdout, "Collections:\n\n  qmd://notes/  (4 files)\n");
    let hits = env.ok(&["search", "journal", "--files", "--index", "other"]).stdout;
    assert_eq!(hits.lines().count(), 3, "{hits}");
    env.ok(&["--index", "other", "get", "meeting.md"]);

    // And the default index's collections stay out of it.
    env.ok(&["collection", "add", &env.arg("myproject"), "--name", "myproject"]);
    assert_eq!(env.ok(&["ls"]).stdout, "Collections:\n\n  qmd://myproject/  (3 files)\n");
    assert_eq!(env.ok(&["--index", "other", "ls"]).stdout, "Collections:\n\n  qmd://notes/  (4 files)\n");
    env.qmd(&["--index", "other", "get", "docs/api.md"]).failure();
    env.qmd(&["get", "meeting.md"]).failure();
    // Contexts too.
    env.ok(&["--index", "other", "context", "add", "/", "Other global"]);
    assert!(!env.ok(&["status"]).stdout.contains("Other global"));
    assert!(env.ok(&["--index", "other", "status"]).stdout.contains("Global context: Other global\n"));
}

// ---------------------------------------------------------------------------
// Behaviour gaps closed after side-by-side runs (recorded from qmd 2.8.3)

#[test]
fn empty_answers_match_upstream() {
    let env = Env::peer();
    for name in ["parity-ls-no-files.txt", "parity-multi-get-all-missing.txt", "parity-vsearch-no-vectors.txt"] {
        assert_exact(&env, name);
    }
    // We differ from qmd here on purpose: past the end qmd printed an
    // invented `999: ` line; we print no line, and say why on stderr.
    let rec = Recording::load("parity-get-past-end.txt");
    let out = env.run_recorded(&rec);
    assert_eq!(out.code, rec.code, "{}", out.stderr);
    assert_eq!(out.stdout, env.localize(&rec.stdout).replace("\n999: \n", "\n"));
    assert!(
        out.stderr.contains("qmd://myproject/docs/api.md ends at line 121: nothing from line 999."),
        "{}",
        out.stderr
    );
    // `-n 0` is "not given": the default limit, as qmd.
    assert_eq!(env.ok(&["search", "engine", "-n", "0"]).stdout, env.ok(&["search", "engine"]).stdout);
    let json = env.ok(&["search", "the", "-n", "0", "--json"]).stdout;
    let default = env.ok(&["search", "the", "--json"]).stdout;
    assert_eq!(json, default);
}

#[test]
fn update_hooks_run_before_their_collections_scan() {
    let env = Env::peer();
    for name in [
        "parity-update-cmd-set.txt",
        "parity-update-cmd-show.txt",
        "parity-update-hook.txt",
        "parity-update-cmd-adds.txt",
        "parity-update-hook-adds.txt",
    ] {
        assert_exact(&env, name);
    }
    // The file the hook wrote is indexed by the same run.
    assert!(env.ok(&["search", "zebrafish"]).stdout.contains("qmd://notes/fresh.md"));
    // A failing hook ends the run with its code; the collections before it
    // were updated and committed, the one after it was not scanned.
    fs::remove_file(env.path("notes/fresh.md")).unwrap();
    env.write("myproject/docs/late.md", "# Late\n\nwalrus\n");
    assert_exact(&env, "parity-update-cmd-fail.txt");
    let rec = Recording::load("parity-update-hook-fails.txt");
    let out = env.run_recorded(&rec);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.stdout, env.localize(&rec.stdout).replace("0 new, 0 updated, 7", "1 new, 0 updated, 7"));
    assert!(env.ok(&["search", "walrus"]).stdout.contains("qmd://myproject/docs/late.md"));
    assert!(env.ok(&["search", "zebrafish"]).stdout.contains("qmd://notes/fresh.md"), "notes was not rescanned");
    assert_exact(&env, "parity-update-cmd-clear.txt");
    let config = fs::read_to_string(env.config_home().join("qmd/index.yml")).unwrap();
    assert!(!config.contains("update:"), "{config}");
    let out = env.ok(&["update"]);
    assert!(out.stdout.contains("✓ All collections updated."), "{}", out.stdout);
    assert!(!env.ok(&["search", "zebrafish"]).stdout.contains("fresh.md"), "the hook is gone: its file too");
}

#[test]
fn pending_counts_distinct_contents() {
    let env = Env::new();
    env.write("twins/a.md", "# Same\n\nidentical text\n");
    env.write("twins/b.md", "# Same\n\nidentical text\n");
    env.write("twins/c.md", "# Other\n\ndifferent text\n");
    let out = env.ok(&["collection", "add", &env.arg("twins"), "--name", "twins"]);
    assert!(out.stdout.contains("(2 unique hashes need vectors)"), "{}", out.stdout);
    assert!(env.ok(&["status"]).stdout.contains("  Pending:  2 need embedding (run 'qmd embed')"));
}

#[test]
fn bench_scores_each_backend_on_a_fixture_with_qmds_guards() {
    let env = Env::new();
    let fixture = common::tests_dir().join("fixtures/bench/example.json");
    let fixture = fixture.to_str().unwrap();
    let empty = env.qmd(&["bench", fixture, "-c", "eval-docs"]).failure();
    assert!(
        empty.stderr.contains("Collection not found: eval-docs\nRun 'qmd ls' to see available collections."),
        "{}",
        empty.stderr
    );
    let none = env.qmd(&["bench", fixture, "--json"]).failure();
    assert!(
        none.stderr.contains("Collection not found: eval-docs"),
        "the fixture names its collection: {}",
        none.stderr
    );

    common::copy_dir(&common::tests_dir().join("fixtures/qmd-eval/docs"), &env.path("eval-docs"));
    env.ok(&["collection", "add", &env.arg("eval-docs"), "--name", "eval-docs"]);
    let missing = env.qmd(&["bench", fixture, "-c", "nosuch"]).failure();
    assert!(missing.stderr.contains("Collection not found: nosuch\nAvailable: eval-docs. Run 'qmd ls' to inspect."));
    env.write("bad.json", "{\"description\": \"no queries\"}");
    let bad = env.qmd(&["bench", &env.arg("bad.json")]).failure();
    assert!(bad.stderr.contains("Invalid fixture: missing 'queries' array"), "{}", bad.stderr);

    // A backend that cannot run fails the run (exit 1) after the whole
    // report is printed; qmd exited 0 and scored it zero.
    let out = env.qmd(&["bench", fixture, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["results"].as_array().unwrap().len(), 10);
    let bm25 = &report["summary"]["bm25"];
    assert!(bm25["avg_mrr"].as_f64().unwrap() >= 0.9, "{bm25}");
    assert!(
        report["results"][0]["backends"]["bm25"]["top_files"][0]
            .as_str()
            .unwrap()
            .ends_with("api-design-principles.md")
    );
    // No embedding model: the vector backend cannot run. qmd scored it
    // zero; we report it failed, with why, and exit 1.
    if out.code != 0 {
        assert_eq!(report["summary"]["vector"]["failed"], 10, "{}", report["summary"]);
        assert!(report["results"][0]["backends"]["vector"]["error"].is_string());
    }
    let table = env.qmd(&["bench", fixture]).stdout;
    assert!(
        table.contains("Query                     Backend  P@k    R@1    R@3    R@5    MRR    F1     ms"),
        "{table}"
    );
    assert!(table.contains("Summary:\n") && table.contains("  bm25     P@k= "), "{table}");
}
