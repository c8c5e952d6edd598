//! The read routes, with the MCP tools' argument names: `POST /get`
//! `{file, fromLine?, maxLines?, lineNumbers? = true}`, `POST /multi-get`
//! `{pattern, maxLines?, maxBytes? = 65536, lineNumbers? = true}` and
//! `GET /status`. Answers name documents by `qmd://` URI and docid and never
//! by the server's own paths (an edge service is public).

use serde_json::{Value, json};

use super::bodies::Args;
use super::{HttpResponse, engine_error};
use crate::{Document, Engine, GetError, GetRequest, MultiGetRequest, vpath};

/// qmd's `multi_get` limit on one file's size when the caller sets none.
const DEFAULT_MAX_BYTES: u64 = 65_536;

fn document_json(doc: &Document) -> Value {
    json!({
        "docid": format!("#{}", doc.docid),
        "file": vpath::uri(&doc.collection, &doc.path),
        "title": doc.title,
        "context": doc.context,
        "size": doc.size,
        "body": doc.body,
    })
}

/// A required string field, named in the refusal when missing.
fn required(args: &Args, key: &str) -> Result<String, HttpResponse> {
    match args.string(key)? {
        Some(value) if !value.trim().is_empty() => Ok(value),
        _ => Err(HttpResponse::error(400, format!("Missing required field: {key} (string)"))),
    }
}

fn get_request(body: &Value) -> Result<GetRequest, HttpResponse> {
    let args = Args::new(body);
    Ok(GetRequest {
        file: required(&args, "file")?,
        from_line: args.count("fromLine")?.map(|n| n.max(1)),
        max_lines: args.count("maxLines")?,
        line_numbers: args.bool("lineNumbers")?.unwrap_or(true),
    })
}

/// `POST /get`: one document by path, `qmd://` path or docid, with an
/// optional `:from[:count]` suffix as the `get` tool takes it.
pub(super) fn get(engine: &Engine, body: &Value) -> HttpResponse {
    let request = match get_request(body) {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    match engine.get(&request) {
        Ok(doc) => HttpResponse::json(200, &document_json(&doc)),
        Err(GetError::NotFound { query, similar }) => {
            HttpResponse::json(404, &json!({"error": format!("Document not found: {query}"), "similar": similar}))
        }
        Err(GetError::Excluded { query, collection, matched_path, rule }) => HttpResponse::json(
            404,
            &json!({
                "error": format!("Document excluded by ignore rule: {query}"),
                "collection": collection,
                "matchedPath": matched_path,
                "rule": rule,
            }),
        ),
        Err(GetError::Failed(e)) => engine_error(e),
    }
}

fn multi_get_request(body: &Value) -> Result<MultiGetRequest, HttpResponse> {
    let args = Args::new(body);
    Ok(MultiGetRequest {
        pattern: required(&args, "pattern")?,
        max_lines: args.count("maxLines")?,
        max_bytes: args.number("maxBytes")?.filter(|n| *n > 0.0).map_or(DEFAULT_MAX_BYTES, |n| n as u64),
        line_numbers: args.bool("lineNumbers")?.unwrap_or(true),
    })
}

/// `POST /multi-get`: documents by glob, comma list or docids. A file
/// over `maxBytes` is listed with `skipped` and no body.
pub(super) fn multi_get(engine: &Engine, body: &Value) -> HttpResponse {
    let request = match multi_get_request(body) {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let result = match engine.multi_get(&request) {
        Ok(result) => result,
        Err(e) => return engine_error(e),
    };
    if result.entries.is_empty() {
        let error = match result.errors.is_empty() {
            true => format!("No files matched pattern: {}", request.pattern),
            false => result.errors.join("\n"),
        };
        return HttpResponse::error(404, error);
    }
    let documents: Vec<Value> = result
        .entries
        .iter()
        .map(|entry| {
            let mut doc = document_json(&entry.doc);
            if let Some(reason) = &entry.skipped {
                doc["skipped"] = json!(reason);
                doc["body"] = Value::Null;
            }
            doc
        })
        .collect();
    HttpResponse::json(200, &json!({"documents": documents, "errors": result.errors}))
}

/// `GET /status`: what the index holds (collections by name, not path).
pub(super) fn status(engine: &Engine) -> HttpResponse {
    let status = match engine.status() {
        Ok(status) => status,
        Err(e) => return engine_error(e),
    };
    let collections: Vec<Value> = status
        .collections
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "pattern": c.pattern,
                "documents": c.documents,
                "lastUpdated": c.last_updated.map(crate::clock::iso8601),
            })
        })
        .collect();
    HttpResponse::json(
        200,
        &json!({
            "totalDocuments": status.total_documents,
            "needsEmbedding": status.needs_embedding,
            "hasVectorIndex": status.has_vector_index,
            "vectors": status.vectors,
            "withMetadata": status.with_metadata,
            "invalidMetadata": status.invalid_metadata,
            "generation": status.generation,
            "collections": collections,
        }),
    )
}
