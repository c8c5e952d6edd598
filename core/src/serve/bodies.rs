//! Request bodies read strictly (a field of the wrong type is named in a
//! 400, never guessed at), and qmd's REST query: `{searches: [{type,
//! query}], collections?, limit? = 10, minScore? = 0, candidateLimit?,
//! intent?, rerank? = true}` answered with `{results: [...]}`.

use serde_json::{Map, Value, json};

use super::{HttpResponse, MAX_SEARCHES, engine_error};
use crate::document::number_lines;
use crate::inference::Inference;
use crate::{Engine, QueryHit, QueryRequest, SearchOptions, SearchType, TypedSearch, vpath};

/// The fields of a JSON object (none where the value is not one).
pub(super) struct Args<'a>(Option<&'a Map<String, Value>>);

type Field<T> = Result<Option<T>, HttpResponse>;

fn wrong_type(key: &str, what: &str) -> HttpResponse {
    HttpResponse::error(400, format!("Invalid field: {key} must be {what}"))
}

impl<'a> Args<'a> {
    pub fn new(body: &'a Value) -> Args<'a> {
        Args(body.as_object())
    }

    /// The field's value; an explicit `null` counts as absent.
    fn value(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|fields| fields.get(key)).filter(|v| !v.is_null())
    }

    pub fn string(&self, key: &str) -> Field<String> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(wrong_type(key, "a string")),
        }
    }

    pub fn bool(&self, key: &str) -> Field<bool> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(wrong_type(key, "true or false")),
        }
    }

    pub fn number(&self, key: &str) -> Field<f64> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(wrong_type(key, "a number")),
        }
    }

    /// A count: negative and fractional numbers clamp, as qmd's do.
    pub fn count(&self, key: &str) -> Field<u32> {
        Ok(self.number(key)?.map(count))
    }

    /// A metadata filter (a JSON object), checked as qmd checks it.
    pub fn filter(&self, key: &str) -> Field<crate::metadata::Filter> {
        match self.value(key) {
            None => Ok(None),
            Some(value @ Value::Object(_)) => {
                crate::metadata::Filter::parse(value).map(Some).map_err(|e| HttpResponse::error(400, e.to_string()))
            }
            Some(_) => Err(HttpResponse::error(400, format!("Invalid field: {key} (must be an object)"))),
        }
    }

    pub fn strings(&self, key: &str) -> Field<Vec<String>> {
        let Some(value) = self.value(key) else { return Ok(None) };
        let not_strings = || wrong_type(key, "an array of strings");
        let items = value.as_array().ok_or_else(not_strings)?;
        items.iter().map(|v| v.as_str().map(str::to_string).ok_or_else(not_strings)).collect::<Result<_, _>>().map(Some)
    }
}

/// A JSON number as a count (negative and fractional clamp).
pub fn count(n: f64) -> u32 {
    if n.is_finite() { n.clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 }
}

fn search_type(name: Option<&str>) -> Result<SearchType, HttpResponse> {
    name.and_then(crate::query::document::type_named)
        .ok_or_else(|| HttpResponse::error(400, format!("Invalid search type: {}", name.unwrap_or("(missing)"))))
}

/// The typed searches of a REST body: each `{type, query}`.
fn searches(body: &Value) -> Result<Vec<TypedSearch>, HttpResponse> {
    let Some(list) = body.get("searches").and_then(Value::as_array) else {
        return Err(HttpResponse::error(400, "Missing required field: searches (array)"));
    };
    if list.len() > MAX_SEARCHES {
        return Err(HttpResponse::error(400, format!("Too many searches: {} (at most {MAX_SEARCHES})", list.len())));
    }
    list.iter()
        .enumerate()
        .map(|(i, search)| {
            if !search.is_object() {
                return Err(wrong_type(&format!("searches[{i}]"), "an object {type, query}"));
            }
            let kind = search_type(search.get("type").and_then(Value::as_str))?;
            let query = Args::new(search)
                .string("query")
                .map_err(|_| wrong_type(&format!("searches[{i}].query"), "a string"))?;
            Ok(TypedSearch { kind, query: query.unwrap_or_default() })
        })
        .collect()
}

fn query_request(body: &Value) -> Result<QueryRequest, HttpResponse> {
    let args = Args::new(body);
    Ok(QueryRequest {
        query: None,
        parse_document: false,
        searches: searches(body)?,
        options: SearchOptions {
            collections: args.strings("collections")?.unwrap_or_default(),
            limit: args.count("limit")?.unwrap_or(10) as usize,
            min_score: args.number("minScore")?.unwrap_or(0.0),
            snippet_max_len: 300,
            filter: args.filter("filter")?,
            ..SearchOptions::default()
        },
        intent: args.string("intent")?,
        candidate_limit: args.count("candidateLimit")?.unwrap_or(40) as usize,
        rerank: args.bool("rerank")?.unwrap_or(true),
        chunk_strategy: args
            .string("chunkStrategy")?
            .map(|s| crate::chunk::ChunkStrategy::parse(&s))
            .transpose()
            .map_err(|_| wrong_type("chunkStrategy", "\"auto\" or \"regex\""))?,
    })
}

/// `POST /query` (and `/search`).
pub(super) fn query(engine: &Engine, models: Option<&dyn Inference>, body: &Value) -> HttpResponse {
    let request = match query_request(body) {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    match engine.query_with(&request, models) {
        Ok(result) => {
            let results: Vec<Value> = result.hits.iter().map(hit_json).collect();
            HttpResponse::json(200, &json!({ "results": results }))
        }
        Err(e) => engine_error(e),
    }
}

/// A query hit as qmd's REST shows it: `file` is a `qmd://` URI, the score
/// has two decimals and the snippet is numbered from its line.
pub fn hit_json(hit: &QueryHit) -> Value {
    let h = &hit.hit;
    let mut out = json!({
        "docid": format!("#{}", h.docid),
        "file": vpath::uri(&h.collection, &h.path),
        "title": h.title,
        "score": (h.score * 100.0).round() / 100.0,
        "context": h.context,
        "line": h.line,
        // qmd numbers the snippet from `line`, its `@@` header included.
        "snippet": number_lines(&h.snippet, h.line),
    });
    if let Some(metadata) = &h.metadata {
        out["metadata"] = metadata.clone();
    }
    out
}
