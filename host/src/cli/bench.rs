//! `qmd bench <fixture.json>`: qmd's search-quality harness. Each fixture
//! query runs against four backends — `bm25` (search), `vector`
//! (vsearch), `hybrid` (query without rerank), `full` (query with rerank)
//! — and is scored against its expected files: precision@k, recall@1/3/5,
//! MRR, F1 and latency, with qmd's table, summary and `--json` shape.
//!
//! Where qmd scores a backend that fails (no vectors, no model, a bad
//! query document) as zero, here its row says it failed and why (`FAILED:
//! …` in the table, `"error"` in JSON), its averages leave it out and count
//! it as `failed`, and the run exits 1 after printing the whole report.
//! The fixture is read to at most [`FIXTURE_LIMIT`] bytes.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use qmd_core::SearchType;
use qmd_core::query::document::{QueryDocument, parse_query_document};
use serde::{Deserialize, Serialize};

use crate::cli::output::escape_controls;
use crate::component::bindings::{QueryRequest, SearchOptions};
use crate::session::{Session, engine_result};

#[derive(Deserialize)]
struct Fixture {
    queries: Option<Vec<FixtureQuery>>,
    collection: Option<String>,
}

#[derive(Deserialize)]
struct FixtureQuery {
    id: String,
    query: String,
    #[serde(rename = "type", default)]
    kind: String,
    expected_files: Vec<String>,
    expected_in_top_k: usize,
}

/// One backend's score on one query (qmd's field names).
#[derive(Serialize, Default, Clone)]
struct Scores {
    precision_at_k: f64,
    recall: f64,
    recall_at_1: f64,
    recall_at_3: f64,
    recall_at_5: f64,
    mrr: f64,
    f1: f64,
    hits_at_k: usize,
    total_expected: usize,
    latency_ms: f64,
    top_files: Vec<String>,
    matched_files: Vec<String>,
    unmatched_expected_files: Vec<String>,
}

/// One backend's outcome on one query: its scores, or why it did not run
/// (JSON: the scores object, or `{"error": …, "latency_ms": …}`).
#[derive(Serialize)]
#[serde(untagged)]
enum Outcome {
    Scored(Scores),
    Failed { error: String, latency_ms: f64 },
}

#[derive(Serialize)]
struct QueryResult {
    id: String,
    query: String,
    #[serde(rename = "type")]
    kind: String,
    backends: BTreeMap<&'static str, Outcome>,
}

/// A backend's averages over the queries it ran, and how many it failed
/// (`failed` is left out of the JSON when 0; the averages when it ran none).
#[derive(Serialize)]
struct Summary {
    #[serde(flatten)]
    averages: Option<Averages>,
    #[serde(skip_serializing_if = "is_zero")]
    failed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct Averages {
    avg_precision: f64,
    avg_recall: f64,
    avg_recall_at_1: f64,
    avg_recall_at_3: f64,
    avg_recall_at_5: f64,
    avg_mrr: f64,
    avg_f1: f64,
    avg_latency_ms: f64,
}

#[derive(Serialize)]
struct Report {
    timestamp: String,
    fixture: String,
    results: Vec<QueryResult>,
    summary: BTreeMap<&'static str, Summary>,
}

const BACKENDS: [&str; 4] = ["bm25", "vector", "hybrid", "full"];

/// The largest fixture read: a fixture is a list of queries, and `stat`
/// cannot tell the size of `/dev/zero` or a FIFO, so the read itself stops.
const FIXTURE_LIMIT: u64 = 16 << 20;

/// The fixture's text, read to at most [`FIXTURE_LIMIT`] bytes.
fn read_fixture(path: &str) -> Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {path}"))?;
    let mut bytes = Vec::new();
    file.take(FIXTURE_LIMIT + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {path}"))?;
    if bytes.len() as u64 > FIXTURE_LIMIT {
        bail!("Fixture {path} is larger than the {} MiB limit of bench fixtures; not reading it.", FIXTURE_LIMIT >> 20);
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("invalid fixture {path}: not UTF-8 text"))
}

/// A structured query's typed searches, read as the CLI reads query
/// documents (`None`: plain text; an invalid document is an error, which
/// fails the backend's run).
fn typed_lines(query: &str) -> Result<Option<Vec<(SearchType, String)>>> {
    match parse_query_document(query).map_err(|e| anyhow::anyhow!(e.message))? {
        QueryDocument::Expand(_) => Ok(None),
        QueryDocument::Structured { searches, .. } => {
            Ok(Some(searches.into_iter().map(|s| (s.kind, s.query)).collect()))
        }
    }
}

/// Files a backend returns for a query (qmd:// paths), best first.
fn run_backend(
    session: &Session,
    backend: &str,
    query: &FixtureQuery,
    collection: Option<&str>,
) -> Result<Vec<String>> {
    let limit = query.expected_in_top_k.max(10);
    let options = SearchOptions {
        collections: collection.map(str::to_string).into_iter().collect(),
        limit: limit as u32,
        min_score: 0.0,
        snippet_max_len: 300,
        full: false,
        filter: None,
    };
    let files = |hits: Vec<crate::component::bindings::SearchHit>| -> Vec<String> {
        hits.into_iter().map(|h| format!("qmd://{}/{}", h.collection, h.path)).collect()
    };
    let lines = typed_lines(&query.query)?;
    let per_line = |kinds: &[SearchType], run: &dyn Fn(&str) -> Result<Vec<String>>| -> Result<Vec<String>> {
        let Some(lines) = &lines else { return run(&query.query) };
        let mut out: Vec<String> = Vec::new();
        for (_, text) in lines.iter().filter(|(k, _)| kinds.contains(k)) {
            for file in run(text)? {
                if !out.contains(&file) && out.len() < limit {
                    out.push(file);
                }
            }
        }
        Ok(out)
    };
    match backend {
        "bm25" => per_line(&[SearchType::Lex], &|text| {
            Ok(files(session.read(|store, engine| engine_result(engine.call_search(store, text, &options)))?))
        }),
        "vector" => per_line(&[SearchType::Vec, SearchType::Hyde], &|text| {
            let hits = session
                .read(|store, engine| engine_result(engine.qmd_engine_vectors().call_vsearch(store, text, &options)))?;
            Ok(files(hits))
        }),
        _ => {
            let request = QueryRequest {
                query: Some(query.query.clone()),
                parse_document: true,
                searches: Vec::new(),
                options: options.clone(),
                intent: None,
                candidate_limit: 40,
                rerank: backend == "full",
                chunk_strategy: None,
            };
            let result = session.read(|store, engine| engine_result(engine.call_query(store, &request)))?;
            Ok(files(result.hits.into_iter().map(|h| h.hit).collect()))
        }
    }
}

/// qmd's path match: `qmd://<collection>/` stripped, lowercase, slashes
/// trimmed; equal, or one ends with the other.
fn normalize(path: &str) -> String {
    let path = match path.strip_prefix("qmd://") {
        Some(rest) => rest.split_once('/').map_or(rest, |(_, p)| p),
        None => path,
    };
    path.to_lowercase().trim_matches('/').to_string()
}

fn same_file(result: &str, expected: &str) -> bool {
    let (r, e) = (normalize(result), normalize(expected));
    r == e || r.ends_with(&e) || e.ends_with(&r)
}

fn score(files: &[String], expected: &[String], k: usize) -> Scores {
    let within = |n: usize| expected.iter().filter(|e| files.iter().take(n).any(|f| same_file(f, e))).count();
    let share = |n: usize| if expected.is_empty() { 0.0 } else { n as f64 / expected.len() as f64 };
    let (matched, unmatched): (Vec<String>, Vec<String>) =
        expected.iter().cloned().partition(|e| files.iter().any(|f| same_file(f, e)));
    let mrr = files.iter().position(|f| expected.iter().any(|e| same_file(f, e))).map_or(0.0, |i| 1.0 / (i + 1) as f64);
    let hits_at_k = within(k);
    let denominator = k.min(expected.len());
    let precision = if denominator > 0 { hits_at_k as f64 / denominator as f64 } else { 0.0 };
    let recall = share(matched.len());
    Scores {
        precision_at_k: precision,
        recall,
        recall_at_1: share(within(1)),
        recall_at_3: share(within(3)),
        recall_at_5: share(within(5)),
        mrr,
        f1: if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 },
        hits_at_k,
        total_expected: expected.len(),
        top_files: files.iter().take(10).cloned().collect(),
        matched_files: matched,
        unmatched_expected_files: unmatched,
        ..Scores::default()
    }
}

/// qmd's guards: a named collection must exist and hold documents; with
/// none named, the index must hold some.
fn check_ready(session: &Session, collection: Option<&str>) -> Result<()> {
    let status = session.read(|store, engine| engine_result(engine.call_status(store)))?;
    match collection {
        Some(name) => {
            let Some(c) = status.collections.iter().find(|c| c.name == name) else {
                let names: Vec<&str> = status.collections.iter().map(|c| c.name.as_str()).collect();
                let hint = if names.is_empty() {
                    "Run 'qmd ls' to see available collections.".to_string()
                } else {
                    format!("Available: {}. Run 'qmd ls' to inspect.", names.join(", "))
                };
                bail!("Collection not found: {name}\n{hint}");
            };
            if c.documents == 0 {
                bail!(
                    "Collection '{name}' has no indexed documents.\nRun 'qmd update', then 'qmd ls {name}' to confirm files are indexed before bench."
                );
            }
        }
        None if status.total_documents == 0 => bail!(
            "No indexed documents found.\nIndex a collection with 'qmd collection add' / 'qmd update' before running bench."
        ),
        None => {}
    }
    Ok(())
}

pub fn run(session: &Session, fixture_path: &str, json: bool, collection: Option<String>) -> Result<ExitCode> {
    let text = read_fixture(fixture_path)?;
    let fixture: Fixture = serde_json::from_str(&text).with_context(|| format!("invalid fixture {fixture_path}"))?;
    let Some(queries) = fixture.queries else { bail!("Invalid fixture: missing 'queries' array") };
    let collection = collection.or(fixture.collection);
    check_ready(session, collection.as_deref())?;

    let mut results = Vec::new();
    for query in &queries {
        let mut backends = BTreeMap::new();
        for backend in BACKENDS {
            if !json {
                eprint!("  {} / {backend}...", query.id);
            }
            let started = Instant::now();
            // A backend that cannot run (no vectors, no model, a bad query
            // document) is reported as failed: qmd scored it zero.
            let run = run_backend(session, backend, query, collection.as_deref());
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            let outcome = match run {
                Ok(files) => {
                    let mut scores = score(&files, &query.expected_files, query.expected_in_top_k);
                    scores.latency_ms = latency_ms;
                    Outcome::Scored(scores)
                }
                Err(e) => Outcome::Failed { error: format!("{e:#}"), latency_ms },
            };
            if !json {
                match &outcome {
                    Outcome::Scored(_) => eprintln!(" {}ms", latency_ms.round()),
                    Outcome::Failed { error, .. } => eprintln!(" failed: {}", escape_controls(error)),
                }
            }
            backends.insert(backend, outcome);
        }
        results.push(QueryResult {
            id: query.id.clone(),
            query: query.query.clone(),
            kind: query.kind.clone(),
            backends,
        });
    }
    let summary = summarize(&results);
    let failed: usize = summary.values().map(|s| s.failed).sum();
    let all_zero = summary
        .values()
        .filter_map(|s| s.averages.as_ref())
        .all(|a| a.avg_precision == 0.0 && a.avg_recall == 0.0 && a.avg_mrr == 0.0);
    if failed > 0 {
        eprintln!("\n{failed} backend run(s) failed; their rows say why (FAILED, or \"error\" in --json).");
    } else if all_zero {
        let ls = collection.as_deref().map_or("qmd ls".to_string(), |c| format!("qmd ls {c}"));
        eprintln!(
            "\nAll benchmark scores were 0.00 — the collection is likely unindexed or the fixture's expected files are missing. Check with '{ls}'."
        );
    }
    let report = Report {
        timestamp: crate::clock::iso8601(crate::clock::now_ms()).replace([':', '.', '-'], "")[..15].to_string(),
        fixture: fixture_path.to_string(),
        results,
        summary,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn summarize(results: &[QueryResult]) -> BTreeMap<&'static str, Summary> {
    let mut out = BTreeMap::new();
    for backend in BACKENDS {
        let outcomes: Vec<&Outcome> = results.iter().filter_map(|r| r.backends.get(backend)).collect();
        if outcomes.is_empty() {
            continue;
        }
        let rows: Vec<&Scores> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Scored(s) => Some(s),
                Outcome::Failed { .. } => None,
            })
            .collect();
        let failed = outcomes.len() - rows.len();
        let avg = |f: fn(&Scores) -> f64| rows.iter().map(|s| f(s)).sum::<f64>() / rows.len() as f64;
        let averages = (!rows.is_empty()).then(|| Averages {
            avg_precision: avg(|s| s.precision_at_k),
            avg_recall: avg(|s| s.recall),
            avg_recall_at_1: avg(|s| s.recall_at_1),
            avg_recall_at_3: avg(|s| s.recall_at_3),
            avg_recall_at_5: avg(|s| s.recall_at_5),
            avg_mrr: avg(|s| s.mrr),
            avg_f1: avg(|s| s.f1),
            avg_latency_ms: avg(|s| s.latency_ms),
        });
        out.insert(backend, Summary { averages, failed });
    }
    out
}

/// qmd's table and summary.
fn table(report: &Report) -> String {
    let pad = |s: &str, n: usize| format!("{:n$}", s.chars().take(n).collect::<String>());
    let num = |x: f64| format!("{x:5.2}");
    let mut out = format!(
        "\n{} {} {} {} {} {} {} {} {}\n{}\n",
        pad("Query", 25),
        pad("Backend", 8),
        pad("P@k", 6),
        pad("R@1", 6),
        pad("R@3", 6),
        pad("R@5", 6),
        pad("MRR", 6),
        pad("F1", 6),
        pad("ms", 8),
        "-".repeat(88)
    );
    for r in &report.results {
        for backend in BACKENDS {
            let s = match r.backends.get(backend) {
                Some(Outcome::Scored(s)) => s,
                Some(Outcome::Failed { error, latency_ms }) => {
                    out += &format!(
                        "{} {} FAILED: {} ({}ms)\n",
                        pad(&r.id, 25),
                        pad(backend, 8),
                        escape_controls(error),
                        latency_ms.round() as u64
                    );
                    continue;
                }
                None => continue,
            };
            out += &format!(
                "{} {} {} {} {} {} {} {} {:7}ms\n",
                pad(&r.id, 25),
                pad(backend, 8),
                num(s.precision_at_k),
                num(s.recall_at_1),
                num(s.recall_at_3),
                num(s.recall_at_5),
                num(s.mrr),
                num(s.f1),
                s.latency_ms.round() as u64
            );
        }
        out += "\n";
    }
    out += &format!("Summary:\n{}\n", "-".repeat(70));
    for backend in BACKENDS {
        let Some(summary) = report.summary.get(backend) else { continue };
        let Some(s) = &summary.averages else {
            out += &format!("  {} FAILED on all {} queries\n", pad(backend, 8), summary.failed);
            continue;
        };
        let failed = if summary.failed > 0 { format!(" ({} failed)", summary.failed) } else { String::new() };
        out += &format!(
            "  {} P@k={:6.3} R@1={:6.3} R@3={:6.3} R@5={:6.3} MRR={:6.3} F1={:6.3} Avg={}ms{failed}\n",
            pad(backend, 8),
            s.avg_precision,
            s.avg_recall_at_1,
            s.avg_recall_at_3,
            s.avg_recall_at_5,
            s.avg_mrr,
            s.avg_f1,
            s.avg_latency_ms.round() as u64
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_as_qmd_computes_them() {
        let files: Vec<String> = ["qmd://c/docs/a.md", "qmd://c/b.md", "qmd://c/x/C.md"].map(String::from).to_vec();
        let expected: Vec<String> = ["b.md", "c.md", "missing.md"].map(String::from).to_vec();
        let s = score(&files, &expected, 3);
        assert_eq!(s.hits_at_k, 2);
        assert!((s.precision_at_k - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.recall_at_1, 0.0);
        assert!((s.mrr - 0.5).abs() < 1e-12, "first relevant at rank 2");
        assert_eq!(s.unmatched_expected_files, ["missing.md"]);
        assert!(same_file("qmd://coll/Docs/A.md/", "docs/a.md"));
        assert!(!same_file("qmd://coll/a.md", "b.md"));
        assert_eq!(typed_lines("plain words").unwrap(), None);
        assert_eq!(typed_lines("lex: a b\nvec: c").unwrap().unwrap().len(), 2);
        assert!(typed_lines("lex: a\nno prefix").is_err(), "the CLI's query-document errors");
    }

    #[test]
    fn fixtures_are_read_to_a_limit() {
        // `/dev/zero` has no end and reports size 0.
        let err = read_fixture("/dev/zero").unwrap_err().to_string();
        assert!(err.contains("/dev/zero") && err.contains("16 MiB"), "{err}");
        assert!(read_fixture("/nonexistent/fixture.json").unwrap_err().to_string().contains("cannot read"));
    }
}
