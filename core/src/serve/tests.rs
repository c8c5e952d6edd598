use serde_json::{Value, json};

use super::*;
use crate::MemorySource;

fn engine() -> Engine {
    let mut notes = MemorySource::new();
    notes.insert("/notes", "cap.md", "# CAP theorem\n\nConsistency, availability, partitions.\n", 0);
    notes.insert("/notes", "raft.md", "# Raft\n\nLeader election and log replication.\n", 0);
    notes.insert("/notes", "big.md", format!("# Big\n\n{}\n", "availability ".repeat(2000)), 0);
    crate::engine::indexed_in_memory(notes, &[("/notes", "notes")])
}

fn call(engine: &Engine, method: &str, path: &str, body: &str) -> (u16, Value) {
    let response = handle(engine, None, &HttpRequest { method, path, body: body.as_bytes() });
    let value = serde_json::from_str(&response.body).unwrap_or(Value::String(response.body.clone()));
    (response.status, value)
}

fn error_of(engine: &Engine, method: &str, path: &str, body: &str) -> (u16, String) {
    let (status, value) = call(engine, method, path, body);
    (status, value["error"].as_str().unwrap_or_default().to_string())
}

#[test]
fn rest_query_answers_in_qmds_shape() {
    let engine = engine();
    let body = json!({"searches": [{"type": "lex", "query": "consistency"}], "limit": 5}).to_string();
    let (status, value) = call(&engine, "POST", "/query", &body);
    assert_eq!(status, 200, "{value}");
    let results = value["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["file"], "qmd://notes/cap.md");
    assert!(results[0]["docid"].as_str().unwrap().starts_with('#'));
    assert!(results[0]["snippet"].as_str().unwrap().contains(": "), "numbered snippet");
    assert_eq!(call(&engine, "POST", "/search", &body), (status, value.clone()));
    // qmd's SDK option; markdown is chunked alike either way.
    let auto = json!({"searches": [{"type": "lex", "query": "consistency"}], "limit": 5, "chunkStrategy": "auto"});
    assert_eq!(call(&engine, "POST", "/query", &auto.to_string()), (status, value));
}

#[test]
fn bad_bodies_are_refused_by_name() {
    let engine = engine();
    let cases = [
        ("{", "Request body must be JSON"),
        ("[1]", "Request body must be a JSON object"),
        ("{}", "Missing required field: searches (array)"),
        (r#"{"searches": [{"type": "sql", "query": "x"}]}"#, "Invalid search type: sql"),
        (r#"{"searches": [7]}"#, "Invalid field: searches[0] must be an object"),
        (r#"{"searches": [{"type": "lex", "query": 3}]}"#, "Invalid field: searches[0].query must be a string"),
        (r#"{"searches": [{"type": "lex", "query": "a"}], "limit": "5"}"#, "Invalid field: limit must be a number"),
        (r#"{"searches": [{"type": "lex", "query": "a"}], "collections": "notes"}"#, "collections must be an array"),
        (r#"{"searches": [{"type": "lex", "query": "a"}], "collections": ["nope"]}"#, "Collection not found: nope"),
        (
            r#"{"searches": [{"type": "lex", "query": "a"}], "chunkStrategy": "ast"}"#,
            r#"Invalid field: chunkStrategy must be "auto" or "regex""#,
        ),
        (
            r#"{"searches": [{"type": "lex", "query": "a"}], "chunkStrategy": 1}"#,
            r#"Invalid field: chunkStrategy must be a string"#,
        ),
    ];
    for (body, expected) in cases {
        let (status, error) = error_of(&engine, "POST", "/query", body);
        assert!(status == 400 || status == 404, "{body}: {status}");
        assert!(error.contains(expected), "{body}: {error}");
    }
    let many = json!({"searches": vec![json!({"type": "lex", "query": "a"}); 11]}).to_string();
    assert_eq!(error_of(&engine, "POST", "/query", &many), (400, "Too many searches: 11 (at most 10)".into()));
    let huge = vec![b' '; MAX_BODY_BYTES + 1];
    let response = handle(&engine, None, &HttpRequest { method: "POST", path: "/query", body: &huge });
    assert_eq!(response.status, 413);
}

#[test]
fn unknown_paths_and_methods() {
    let engine = engine();
    assert_eq!(call(&engine, "GET", "/nope", "").0, 404);
    let response = handle(&engine, None, &HttpRequest { method: "GET", path: "/query", body: b"" });
    assert_eq!((response.status, response.allow), (405, Some("POST")));
    assert_eq!(call(&engine, "POST", "/status", "{}").0, 405);
    assert!(serves("/multi-get") && serves("/status") && !serves("/health") && !serves("/mcp"));
}

#[test]
fn get_reads_by_path_and_docid_and_refuses_escapes() {
    let engine = engine();
    let (status, doc) = call(&engine, "POST", "/get", r#"{"file": "notes/cap.md:3", "maxLines": 1}"#);
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["body"], "3: Consistency, availability, partitions.");
    assert_eq!(doc["file"], "qmd://notes/cap.md");
    let docid = doc["docid"].as_str().unwrap().to_string();
    let (status, by_id) = call(&engine, "POST", "/get", &json!({"file": docid, "lineNumbers": false}).to_string());
    assert_eq!(status, 200);
    assert!(by_id["body"].as_str().unwrap().starts_with("# CAP theorem"));

    let (status, missing) = call(&engine, "POST", "/get", r#"{"file": "cap2.md"}"#);
    assert_eq!(status, 404);
    assert_eq!(missing["similar"][0], "cap.md");
    for escape in ["qmd://notes/../../etc/passwd", "/etc/passwd", "../../../etc/passwd", "notes/%2e%2e/%2e%2e/x"] {
        let (status, value) = call(&engine, "POST", "/get", &json!({ "file": escape }).to_string());
        assert!((400..500).contains(&status), "{escape}: {status} {value}");
        assert!(value.get("body").is_none(), "{escape}: {value}");
    }
    assert_eq!(error_of(&engine, "POST", "/get", "{}"), (400, "Missing required field: file (string)".into()));
}

#[test]
fn multi_get_lists_and_skips_large_files() {
    let engine = engine();
    let (status, value) = call(&engine, "POST", "/multi-get", r#"{"pattern": "notes/*.md", "maxBytes": 1000}"#);
    assert_eq!(status, 200, "{value}");
    let docs = value["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 3);
    let big = docs.iter().find(|d| d["file"] == "qmd://notes/big.md").unwrap();
    assert!(big["skipped"].as_str().unwrap().starts_with("File too large"), "{big}");
    assert!(big["body"].is_null());
    let (status, error) = error_of(&engine, "POST", "/multi_get", r#"{"pattern": "nothing/*.md"}"#);
    assert_eq!((status, error.as_str()), (404, "No files matched pattern: nothing/*.md"));
}

#[test]
fn status_counts_without_paths() {
    let engine = engine();
    let (status, value) = call(&engine, "GET", "/status", "");
    assert_eq!(status, 200);
    assert_eq!(value["totalDocuments"], 3);
    assert_eq!(value["collections"][0]["name"], "notes");
    assert!(!value.to_string().contains("/notes\""), "no server paths: {value}");
}
