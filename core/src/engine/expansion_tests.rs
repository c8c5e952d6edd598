//! `query` and `vsearch` with an expansion model, on recorded generations
//! (qmd's rules need no model to check): the probe and strong-signal skip,
//! the lists each expansion adds and their weights, the failure fallback,
//! and dropping a cached expansion that found nothing.

use super::embed::tests::{WordHash, engine};
use crate::api::*;
use crate::engine::{EmbedOptions, Engine};

fn recorded(output: &str) -> WordHash {
    let mut model = WordHash::new(64);
    model.expansion = Some(output.to_string());
    model
}

fn plain(query: &str) -> QueryRequest {
    QueryRequest { query: Some(query.into()), parse_document: true, ..Default::default() }
}

fn lists(result: &QueryResult) -> Vec<(String, String, String, f64)> {
    result.lists.iter().map(|l| (l.source.clone(), l.query_type.clone(), l.query.clone(), l.weight)).collect()
}

fn list(source: &str, query_type: &str, query: &str, weight: f64) -> (String, String, String, f64) {
    (source.into(), query_type.into(), query.into(), weight)
}

fn embedded(model: &WordHash) -> Engine {
    let engine = engine();
    engine.embed_with(model, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
    engine
}

const BREAD: &str = "lex: sourdough flour\nvec: how to bake sourdough bread at home\n\
                     hyde: Sourdough bread needs flour, water and patience.\nlex: unrelated gardening\n";

#[test]
fn a_weak_probe_expands_and_each_line_becomes_a_list() {
    // Two documents tie on the probe: no strong signal.
    let model = recorded(BREAD);
    let result = engine().query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    let kinds: Vec<_> = result.expansion.iter().map(|s| (s.kind, s.query.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (SearchType::Lex, "sourdough flour"),
            (SearchType::Vec, "how to bake sourdough bread at home"),
            (SearchType::Hyde, "Sourdough bread needs flour, water and patience."),
        ],
        "the line sharing no query term is dropped"
    );
    assert_eq!(
        lists(&result),
        [list("fts", "original", "sourdough bread", 2.0), list("fts", "lex", "sourdough flour", 1.0)]
    );
    assert!(!result.notes.iter().any(|n| n.contains("fallback")), "{:?}", result.notes);
    assert!(result.notes.iter().any(|n| n.contains("no vector index")), "{:?}", result.notes);
    assert!(model.forgotten.borrow().is_empty());

    // With vectors: the original text and every vec/hyde line are vector
    // lists, the original at double weight.
    let engine = embedded(&model);
    let result = engine.query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    let types: Vec<(String, String, f64)> =
        result.lists.iter().map(|l| (l.source.clone(), l.query_type.clone(), l.weight)).collect();
    let want = [("fts", "original", 2.0), ("fts", "lex", 1.0), ("vec", "original", 2.0), ("vec", "vec", 1.0)];
    let want: Vec<(String, String, f64)> = want.iter().map(|(s, t, w)| (s.to_string(), t.to_string(), *w)).collect();
    assert_eq!(types[..4], want[..]);
    assert!(types.iter().any(|(s, t, _)| s == "vec" && t == "hyde"), "{types:?}");
    assert_eq!(result.hits[0].hit.path, "bread.md");
}

#[test]
fn a_failed_expansion_searches_the_query_alone() {
    let model = recorded("!fail");
    let result = engine().query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    assert!(result.expansion.is_empty());
    assert_eq!(lists(&result), [list("fts", "original", "sourdough bread", 2.0)]);
    assert!(
        result.notes.iter().any(|n| n == "query expansion failed (generation failed): searched the query alone"),
        "{:?}",
        result.notes
    );
    assert!(model.forgotten.borrow().is_empty(), "nothing was cached");
}

#[test]
fn an_expansion_that_finds_nothing_is_forgotten() {
    // The lex line can run and finds nothing: the cached expansion goes.
    let model = recorded("lex: breadboxes zeppelins\n");
    let result = engine().query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    assert_eq!(lists(&result), [list("fts", "original", "sourdough bread", 2.0)]);
    assert_eq!(*model.forgotten.borrow(), ["sourdough bread"]);
    // A vec line cannot run without vectors: it says nothing of the
    // expansion, which stays.
    let model = recorded("vec: breadboxes zeppelins\n");
    engine().query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    assert!(model.forgotten.borrow().is_empty());
    // One list from the expansion is enough to keep it.
    let model = recorded("lex: breadboxes zeppelins\nlex: sourdough yeast\n");
    engine().query_with(&plain("sourdough bread"), Some(&model)).unwrap();
    assert!(model.forgotten.borrow().is_empty());
}

#[test]
fn a_strong_signal_skips_the_model_unless_there_is_an_intent() {
    let model = recorded(BREAD);
    let query = "leader election log replication replicas";
    let result = engine().query_with(&plain(query), Some(&model)).unwrap();
    let top = result.strong_signal.expect("one document matches every term");
    assert!(top >= 0.85, "{top}");
    assert!(result.expansion.is_empty());
    // An intent turns the skip off: the model is asked (its lines share no
    // term with this query, so qmd's hyde fallback is what is left).
    let mut request = plain(query);
    request.intent = Some("distributed systems".into());
    let result = engine().query_with(&request, Some(&model)).unwrap();
    assert_eq!(result.strong_signal, None);
    let kinds: Vec<_> = result.expansion.iter().map(|s| (s.kind, s.query.as_str())).collect();
    assert_eq!(kinds, [(SearchType::Hyde, "Information about leader election log replication replicas")]);
}

/// A caller that drives the steps itself gets the expansion step between
/// the probe and the vectors, and an answer out of turn is refused.
#[test]
fn the_expansion_is_a_step_of_its_own() {
    let engine = engine();
    let models = crate::engine::QueryModels { generator: Some("m".into()), ..Default::default() };
    let (mut job, step) = engine.query_start(&plain("sourdough bread"), models).unwrap();
    assert_eq!(step, crate::QueryStep::Expand("sourdough bread".into()));
    assert!(engine.query_answer_vectors(&mut job, vec![]).is_err());
    let searches = vec![TypedSearch { kind: SearchType::Lex, query: "sourdough yeast".into() }];
    let step = engine.query_answer_expansion(&mut job, Ok(searches)).unwrap();
    assert_eq!(step, crate::QueryStep::Done);
    assert!(engine.query_answer_expansion(&mut job, Ok(vec![])).is_err(), "answered once");
    let result = job.into_result();
    assert_eq!(result.lists.len(), 2);
}

#[test]
fn vsearch_searches_the_vec_and_hyde_lines_only() {
    let options = SearchOptions { min_score: 0.3, ..Default::default() };
    let paths = |model: &WordHash, engine: &Engine| -> Vec<String> {
        engine.vsearch_with("yeast", &options, model).unwrap().into_iter().map(|h| h.path).collect()
    };
    let lexical = recorded("lex: yeast gardening tomatoes\n");
    let engine = embedded(&lexical);
    assert!(!paths(&lexical, &engine).contains(&"garden.md".to_string()), "lex lines are not vector searches");
    let semantic = recorded("vec: yeast gardening tomatoes\n");
    assert!(paths(&semantic, &engine).contains(&"garden.md".to_string()));
    // A failed expansion leaves the query alone, and still answers.
    assert!(paths(&recorded("!fail"), &engine).contains(&"bread.md".to_string()));
}
