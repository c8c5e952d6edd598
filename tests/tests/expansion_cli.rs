//! `query` and `vsearch` with a real GGUF expansion model (SmolLM2-135M
//! Instruct Q4_1, `scripts/test-weights.sh smollm2`), end to end through
//! the CLI: qmd's stderr progress and tree, the grammar on every line, the
//! per-query cache (used, and rebuilt when damaged), `--no-expand`, and
//! the fallback when the model is missing.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Env, Output};
use qmd_tests::models::{script_path_with, test_model_dir};

const QUERY: &str = "how do teams handle remote work";

fn generator() -> PathBuf {
    script_path_with("test-weights.sh", &["smollm2"])
}

/// The eval notes, indexed and embedded with the test weights.
fn indexed() -> Env {
    let env = Env::new();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qmd-eval/docs");
    common::copy_dir(&docs, &env.path("notes"));
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    let embed = test_model_dir().to_string_lossy().into_owned();
    env.qmd_with(env.root(), &["embed"], &[("QMD_EMBED_MODEL", &embed)]).success();
    env
}

fn run(env: &Env, generator: &Path, args: &[&str]) -> Output {
    let (embed, generate) = (test_model_dir(), generator.to_string_lossy().into_owned());
    let envs = [("QMD_EMBED_MODEL", embed.to_str().unwrap()), ("QMD_GENERATE_MODEL", generate.as_str())];
    env.qmd_with(env.root(), args, &envs).success()
}

/// The expansion tree's search lines (`├─ lex: …`), without the query's.
fn tree(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("├─ ") || l.starts_with("└─ "))
        .skip(1)
        .map(|l| l[l.find(' ').unwrap() + 1..].to_string())
        .collect()
}

fn cache_files(env: &Env) -> Vec<PathBuf> {
    let dir = env.cache_home().join("qmd/expansions");
    std::fs::read_dir(dir).map_or_else(|_| Vec::new(), |d| d.map(|e| e.unwrap().path()).collect())
}

#[test]
fn query_expands_with_the_model_caches_and_survives_a_damaged_cache() {
    let env = indexed();
    let model = generator();
    let first = run(&env, &model, &["query", "--json", QUERY]);
    // qmd's progress lines: the timing, the tree, the count.
    assert!(first.stderr.contains("Expanding query... ("), "{}", first.stderr);
    assert!(first.stderr.contains(&format!("├─ {QUERY}\n")), "{}", first.stderr);
    let searches = tree(&first.stderr);
    assert!(first.stderr.contains(&format!("Searching {} queries...", searches.len() + 1)), "{}", first.stderr);
    // Every kept line follows the grammar and shares a term with the query.
    for line in &searches {
        let (kind, text) = line.split_once(": ").expect("type: text");
        assert!(["lex", "vec", "hyde"].contains(&kind), "{line}");
        let lower = text.to_lowercase();
        assert!(QUERY.split(' ').any(|t| lower.contains(t)), "{line}");
    }
    let hits: Vec<serde_json::Value> = serde_json::from_str(&first.stdout).unwrap();
    assert!(!hits.is_empty(), "{}", first.stdout);

    // The expansion is cached, one file for the query and model.
    let files = cache_files(&env);
    assert_eq!(files.len(), usize::from(!searches.is_empty()), "{files:?}");
    if let Some(file) = files.first() {
        let entry: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert_eq!(entry["query"], QUERY);
        // A repeat reads the cache: an entry rewritten by hand is what the
        // next query searches.
        let planted = serde_json::json!({
            "query": QUERY, "model": entry["model"],
            "searches": [{"type": "lex", "query": "remote work stipend"}],
        });
        std::fs::write(file, planted.to_string()).unwrap();
        let out = run(&env, &model, &["query", "--explain", QUERY]);
        assert_eq!(tree(&out.stderr), ["lex: remote work stipend"], "{}", out.stderr);
        assert!(out.stderr.contains("fts lex \"remote work stipend\""), "{}", out.stderr);
        // A damaged entry is a miss: the model runs again, with the same
        // (seeded) answer, and the entry is whole again.
        std::fs::write(file, &planted.to_string().as_bytes()[..20]).unwrap();
        let again = run(&env, &model, &["query", "--json", QUERY]);
        assert_eq!(tree(&again.stderr), searches, "{}", again.stderr);
        assert_eq!(again.stdout, first.stdout);
        let entry: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert_eq!(entry["query"], QUERY);
    }

    // vsearch expands too, and searches only the vec/hyde lines.
    let out = run(&env, &model, &["vsearch", QUERY]);
    let vector_lines: Vec<String> = searches.iter().filter(|l| !l.starts_with("lex: ")).cloned().collect();
    assert_eq!(tree(&out.stderr), vector_lines, "{}", out.stderr);
    assert!(out.stderr.contains(&format!("Searching {} vector queries...", vector_lines.len() + 1)), "{}", out.stderr);

    // --no-expand: no model, qmd's fallback.
    let out = run(&env, &model, &["query", "--no-expand", "--explain", QUERY]);
    assert!(!out.stderr.contains("Expanding query"), "{}", out.stderr);
    assert!(out.stderr.contains(&format!("hyde: Information about {QUERY}")), "{}", out.stderr);
}

#[test]
fn without_the_model_query_falls_back_and_says_so_once() {
    let env = indexed();
    let missing = env.path("models/missing.gguf");
    let out = run(&env, &missing, &["query", "--explain", QUERY]);
    let notes: Vec<&str> = out.stderr.lines().filter(|l| l.contains("missing.gguf")).collect();
    assert_eq!(notes.len(), 1, "{}", out.stderr);
    assert!(notes[0].contains("does not exist") && notes[0].contains("fallback"), "{}", notes[0]);
    assert!(out.stderr.contains(&format!("hyde: Information about {QUERY}")), "{}", out.stderr);
    assert!(!out.stderr.contains("Expanding query"), "{}", out.stderr);
    assert!(cache_files(&env).is_empty(), "nothing cached without a model");
    // Typed searches never ask for the model, so they say nothing of it.
    let typed = run(&env, &missing, &["query", "lex: remote work"]);
    assert!(!typed.stderr.contains("missing.gguf"), "{}", typed.stderr);
    let status = run(&env, &missing, &["status"]).stdout;
    let line = status.lines().find(|l| l.contains("Generation:")).unwrap_or_default();
    assert!(line.contains("missing.gguf") && line.contains("not downloaded"), "{status}");
}
