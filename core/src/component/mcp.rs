//! The `mcp` world's exports: qmd's four MCP tools with the MCP server's
//! defaults (`limit` 10, `max-bytes` 65536, numbered lines), for hosts
//! that turn exports into tools. Keyword search only: no models here.

use super::{Component, Guest, R, document, get_error, hit, index_status, multi_get_result, typed_search_in, wit};
use crate::wasi::engine;

impl Guest for Component {
    fn query(
        query: Option<String>,
        searches: Vec<wit::TypedSearch>,
        collections: Vec<String>,
        limit: Option<u32>,
        min_score: Option<f64>,
        intent: Option<String>,
    ) -> R<Vec<wit::SearchHit>> {
        // A blank text is no query (the engine refuses both or neither).
        let query = query.filter(|q| !q.trim().is_empty());
        let request = crate::QueryRequest {
            query,
            parse_document: false,
            searches: searches.into_iter().map(typed_search_in).collect(),
            options: crate::SearchOptions {
                collections,
                limit: limit.unwrap_or(10) as usize,
                min_score: min_score.unwrap_or(0.0),
                snippet_max_len: 300,
                ..Default::default()
            },
            intent,
            candidate_limit: 40,
            rerank: false,
            ..Default::default()
        };
        Ok(engine().query_with(&request, None)?.hits.into_iter().map(|h| hit(h.hit)).collect())
    }

    fn get(
        file: String,
        from_line: Option<u32>,
        max_lines: Option<u32>,
        line_numbers: Option<bool>,
    ) -> Result<wit::Document, wit::GetError> {
        let request = crate::GetRequest {
            file,
            from_line: from_line.map(|n| n.max(1)),
            max_lines,
            line_numbers: line_numbers.unwrap_or(true),
        };
        engine().get(&request).map(document).map_err(get_error)
    }

    fn multi_get(
        pattern: String,
        max_lines: Option<u32>,
        max_bytes: Option<u64>,
        line_numbers: Option<bool>,
    ) -> R<wit::MultiGetResult> {
        let request = crate::MultiGetRequest {
            pattern,
            max_lines,
            max_bytes: max_bytes.filter(|b| *b > 0).unwrap_or(65_536),
            line_numbers: line_numbers.unwrap_or(true),
        };
        Ok(multi_get_result(engine().multi_get(&request)?))
    }

    fn status() -> R<wit::IndexStatus> {
        Ok(index_status(engine().status()?))
    }
}
