//! Metadata filters through the engine: `search`, `vsearch` and `query`
//! keep only documents whose `qmd.metadata` passes, before their limits;
//! hits carry the metadata; a document whose frontmatter failed is left
//! out of filtered results only.

use serde_json::json;

use super::embed::tests::WordHash;
use crate::api::*;
use crate::engine::{EmbedOptions, Engine};
use crate::metadata::Filter;
use crate::source::MemorySource;

fn note(status: &str, priority: u32, topic: &str) -> String {
    format!(
        "---\nqmd:\n  metadata:\n    status: {status}\n    priority: {priority}\n---\n# {topic}\n\n\
         Notes on sourdough bread: {topic} with flour and water.\n"
    )
}

fn engine() -> Engine {
    let mut notes = MemorySource::new();
    notes.insert("/n", "a.md", note("published", 3, "starter"), 0);
    notes.insert("/n", "b.md", note("draft", 1, "proofing"), 0);
    notes.insert("/n", "c.md", note("published", 5, "baking"), 0);
    notes.insert("/n", "plain.md", "# Plain\n\nSourdough bread without any frontmatter.\n", 0);
    notes.insert("/n", "broken.md", "---\nqmd:\n  metadata:\n    status: null\n---\n# Broken\n\nSourdough bread.\n", 0);
    crate::engine::indexed_in_memory(notes, &[("/n", "n")])
}

fn filtered(filter: serde_json::Value, limit: usize) -> SearchOptions {
    SearchOptions { limit, filter: Some(Filter::parse(&filter).unwrap()), ..SearchOptions::default() }
}

fn paths(hits: &[SearchHit]) -> Vec<&str> {
    let mut paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    paths.sort();
    paths
}

#[test]
fn search_keeps_passing_documents_and_the_limit_counts_only_them() {
    let engine = engine();
    let all = engine.search("sourdough bread", &SearchOptions { limit: 10, ..Default::default() }).unwrap();
    assert_eq!(paths(&all), ["a.md", "b.md", "broken.md", "c.md", "plain.md"], "no filter: as before");
    let published = json!({"key": "status", "operator": "eq", "value": "published"});
    assert_eq!(paths(&engine.search("sourdough bread", &filtered(published.clone(), 10)).unwrap()), ["a.md", "c.md"]);
    // A limit of 1 still finds a passing document, whatever the ranking.
    assert_eq!(engine.search("sourdough bread", &filtered(published, 1)).unwrap().len(), 1);
    // exists:false matches documents without the key, but not one whose
    // frontmatter failed.
    let no_status = json!({"key": "status", "operator": "exists", "value": false});
    assert_eq!(paths(&engine.search("sourdough bread", &filtered(no_status, 10)).unwrap()), ["plain.md"]);
    let not_draft = json!({"not": {"key": "status", "operator": "eq", "value": "draft"}});
    assert_eq!(
        paths(&engine.search("sourdough bread", &filtered(not_draft, 10)).unwrap()),
        ["a.md", "c.md", "plain.md"]
    );
}

#[test]
fn hits_carry_the_documents_metadata() {
    let hits = engine().search("sourdough bread", &SearchOptions { limit: 10, ..Default::default() }).unwrap();
    let of = |path: &str| hits.iter().find(|h| h.path == path).unwrap().metadata.clone();
    assert_eq!(of("a.md"), Some(json!({"priority": 3, "status": "published"})));
    assert_eq!(of("plain.md"), None);
    assert_eq!(of("broken.md"), None);
}

#[test]
fn vsearch_and_query_filter_before_their_limits() {
    let engine = engine();
    let model = WordHash::new(64);
    engine.embed_with(&model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
    let high = json!({"key": "priority", "operator": "gte", "value": 3});
    let hits = engine
        .vsearch_with("sourdough bread", &SearchOptions { min_score: 0.0, ..filtered(high.clone(), 10) }, &model)
        .unwrap();
    assert_eq!(paths(&hits), ["a.md", "c.md"]);
    let one = engine
        .vsearch_with("sourdough bread", &SearchOptions { min_score: 0.0, ..filtered(high.clone(), 1) }, &model)
        .unwrap();
    assert_eq!(one.len(), 1, "the limit counts passing documents");

    let request = QueryRequest {
        query: Some("sourdough bread".into()),
        parse_document: true,
        options: filtered(high, 10),
        ..Default::default()
    };
    let result = engine.query_with(&request, Some(&model)).unwrap();
    let found: Vec<&str> = {
        let mut p: Vec<&str> = result.hits.iter().map(|h| h.hit.path.as_str()).collect();
        p.sort();
        p
    };
    assert_eq!(found, ["a.md", "c.md"]);
    assert!(result.lists.iter().any(|l| l.source == "vec") && result.lists.iter().any(|l| l.source == "fts"));
    assert!(result.lists.iter().all(|l| l.hits <= 2), "every list holds only passing documents: {:?}", result.lists);
}
