//! qmd's MCP texts and result shapes, as pure functions of engine results.

use serde_json::{Value, json};

use crate::clock::iso8601;
use crate::component::bindings::{ExcludedInfo, IndexStatus, QueryHit};
use qmd_core::document::number_lines;

/// `<!-- Context: … -->` before a document's text, when it has one.
pub fn with_context(context: Option<&str>, text: String) -> String {
    match context {
        Some(ctx) => format!("<!-- Context: {ctx} -->\n\n{text}"),
        None => text,
    }
}

/// qmd's MCP text for a document an ignore rule hides (`get` and the
/// resource), naming it as the caller did.
pub fn excluded_message(name: &str, info: &ExcludedInfo) -> String {
    format!(
        "Document excluded by ignore rule: {name}\nCollection: {}\nMatched path: {}\nIgnore rule: {}",
        info.collection, info.matched_path, info.rule
    )
}

/// A query hit as qmd's MCP `structuredContent` shows it: `file` is
/// `coll/path` (REST's answer, `qmd_core::serve`, names a `qmd://` URI).
pub fn hit_json(hit: &QueryHit) -> Value {
    let h = &hit.hit;
    let mut out = json!({
        "docid": format!("#{}", h.docid),
        "file": format!("{}/{}", h.collection, h.path),
        "title": h.title,
        "score": (h.score * 100.0).round() / 100.0,
        "context": h.context,
        "line": h.line,
        // qmd numbers the snippet from `line`, its `@@` header included.
        "snippet": number_lines(&h.snippet, h.line),
    });
    // Only where the document has metadata, as qmd's.
    if let Some(metadata) = h.metadata.as_deref().and_then(|m| serde_json::from_str::<Value>(m).ok()) {
        out["metadata"] = metadata;
    }
    out
}

/// qmd's `formatSearchSummary` over the JSON results.
pub fn search_summary(results: &[Value], query: &str) -> String {
    if results.is_empty() {
        return format!("No results found for \"{query}\"");
    }
    let plural = if results.len() == 1 { "" } else { "s" };
    let mut lines = vec![format!("Found {} result{plural} for \"{query}\":\n", results.len())];
    for r in results {
        let score = r["score"].as_f64().unwrap_or(0.0);
        lines.push(format!(
            "{} {}% {} - {}",
            r["docid"].as_str().unwrap_or(""),
            (score * 100.0).round() as i64,
            r["file"].as_str().unwrap_or(""),
            r["title"].as_str().unwrap_or("")
        ));
    }
    lines.join("\n")
}

/// The `status` tool's text.
pub fn status_text(status: &IndexStatus) -> String {
    let mut lines = vec![
        "QMD Index Status:".to_string(),
        format!("  Total documents: {}", status.total_documents),
        format!("  Needs embedding: {}", status.needs_embedding),
        format!("  Vector index: {}", if status.has_vector_index { "yes" } else { "no" }),
        format!("  Collections: {}", status.collections.len()),
    ];
    for c in &status.collections {
        lines.push(format!("    - {}: {} ({} docs)", c.name, c.path, c.documents));
    }
    lines.join("\n")
}

/// The `status` tool's `structuredContent`.
pub fn status_json(status: &IndexStatus, now_ms: i64) -> Value {
    json!({
        "totalDocuments": status.total_documents,
        "needsEmbedding": status.needs_embedding,
        "hasVectorIndex": status.has_vector_index,
        "withMetadata": status.with_metadata,
        "invalidMetadata": status.invalid_metadata,
        "collections": status.collections.iter().map(|c| json!({
            "name": c.name,
            "path": c.path,
            "pattern": c.pattern,
            "documents": c.documents,
            "lastUpdated": iso8601(c.last_updated.unwrap_or(now_ms)),
        })).collect::<Vec<_>>(),
    })
}

/// Server instructions from the index state (qmd's `buildInstructions`).
pub fn instructions(status: &IndexStatus) -> String {
    let mut lines =
        vec![format!("QMD is your local search engine over {} markdown documents.", status.total_documents)];
    if let Some(ctx) = &status.global_context {
        lines.push(format!("Context: {ctx}"));
    }
    if !status.collections.is_empty() {
        let names: Vec<&str> = status.collections.iter().map(|c| c.name.as_str()).collect();
        lines.push(String::new());
        lines.push(format!("Collections (scope with `collections` parameter): {}", names.join(", ")));
        lines.push("Call the `status` tool for collection descriptions, paths, and per-collection doc counts.".into());
    }
    if !status.has_vector_index {
        lines.push(String::new());
        lines.push("Note: No vector embeddings yet. Run `qmd embed` to enable semantic search (vec/hyde).".into());
    } else if status.needs_embedding > 0 {
        lines.push(String::new());
        lines.push(format!("Note: {} documents need embedding. Run `qmd embed` to update.", status.needs_embedding));
    }
    lines.extend(
        [
            "",
            "Search: Use `query` with sub-queries (lex/vec/hyde):",
            "  - type:'lex' — BM25 keyword search (exact terms, fast)",
            "  - type:'vec' — semantic vector search (meaning-based)",
            "  - type:'hyde' — hypothetical document (write what the answer looks like)",
            "",
            "  Always provide `intent` on every search call to disambiguate and improve snippets.",
            "",
            "Examples:",
            "  Quick keyword lookup: [{type:'lex', query:'error handling'}]",
            "  Semantic search: [{type:'vec', query:'how to handle errors gracefully'}]",
            "  Best results: [{type:'lex', query:'error'}, {type:'vec', query:'error handling best practices'}]",
            "  With intent: searches=[{type:'lex', query:'performance'}], intent='web page load times'",
            "",
            "Retrieval:",
            "  - `get` — single document by path or docid (#abc123). Supports a line-range suffix: `file.md:100` (from line 100) or `file.md:100:40` (40 lines from line 100).",
            "  - `multi_get` — batch retrieve by glob (`journals/2025-05*.md`), comma-separated list, or docids (#abc123).",
            "",
            "Tips:",
            "  - File paths in results are relative to their collection.",
            "  - Use `minScore: 0.5` to filter low-confidence results.",
            "  - Results include a `context` field describing the content type.",
        ]
        .map(str::to_string),
    );
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_qmd() {
        let results = vec![json!({"docid": "#abc123", "score": 0.5, "file": "notes/a.md", "title": "A"})];
        assert_eq!(search_summary(&results, "x"), "Found 1 result for \"x\":\n\n#abc123 50% notes/a.md - A");
        assert_eq!(search_summary(&[], "x"), "No results found for \"x\"");
        assert_eq!(with_context(Some("c"), "1: a".into()), "<!-- Context: c -->\n\n1: a");
    }
}
