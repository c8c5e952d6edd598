//! The MCP server: qmd's four tools and its `qmd://{+path}` resource,
//! answered by warm engine instances from the pool.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::Value;

use super::format;
use super::pool::EnginePool;
use crate::component::bindings::{self, GetError, SearchType};
use qmd_core::serve::count;
use qmd_core::vpath;

/// State shared by every connection (stdio) or request (HTTP).
pub struct Shared {
    pub pool: Arc<EnginePool>,
    pub instructions: String,
}

#[derive(Clone)]
pub struct QmdServer {
    shared: Arc<Shared>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubSearchType {
    Lex,
    Vec,
    Hyde,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct SubSearch {
    /// lex = BM25 keywords (supports "phrase" and -negation); vec = semantic question; hyde = hypothetical answer passage
    #[serde(rename = "type")]
    pub kind: SubSearchType,
    /// The query text. For lex: use keywords, "quoted phrases", and -negation. For vec: natural language question. For hyde: 50-100 word answer passage.
    pub query: String,
}

fn default_limit() -> f64 {
    10.0
}
fn default_true() -> bool {
    true
}
fn default_max_bytes() -> f64 {
    65536.0
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryArgs {
    /// Plain-text query, auto-expanded by the SDK into lex/vec/hyde variants, fused via RRF and reranked. Recommended default for most searches. Mutually exclusive with 'searches'.
    pub query: Option<String>,
    /// Typed sub-queries to execute (lex/vec/hyde). First gets 2x weight. Use for precise control over retrieval strategy. Mutually exclusive with 'query'.
    #[schemars(length(max = 10))]
    pub searches: Option<Vec<SubSearch>>,
    /// Max results (default: 10)
    #[serde(default = "default_limit")]
    pub limit: f64,
    /// Min relevance 0-1 (default: 0)
    #[serde(default)]
    pub min_score: f64,
    /// Maximum candidates to rerank (default: 40, lower = faster but may miss results)
    pub candidate_limit: Option<f64>,
    /// Filter to collections (OR match)
    pub collections: Option<Vec<String>>,
    /// Background context to disambiguate the query. Example: query='performance', intent='web page load times and Core Web Vitals'. Does not search on its own.
    pub intent: Option<String>,
    /// Rerank results using LLM (default: true). Set to false for faster results on CPU-only machines.
    #[serde(default = "default_true")]
    pub rerank: bool,
    /// Only documents whose frontmatter `qmd.metadata` passes. A condition is {"key","operator","value"} with operator eq, ne, gt, gte, lt, lte, in, nin, all or exists; combine with {"operator":"and"|"or","operands":[...]} or {"operator":"not","operand":{...}}. Example: {"key":"status","operator":"eq","value":"published"}.
    pub filter: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetArgs {
    /// File path or docid from search results. Supports a line-range suffix: 'pages/meeting.md:100' starts at line 100; 'pages/meeting.md:100:40' (or '#abc123:100:40') reads 40 lines from line 100.
    pub file: String,
    /// Start from this line number (1-indexed)
    pub from_line: Option<f64>,
    /// Maximum number of lines to return
    pub max_lines: Option<f64>,
    /// Add line numbers to output (format: 'N: content'). On by default; set false for raw content.
    #[serde(default = "default_true")]
    pub line_numbers: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiGetArgs {
    /// Glob pattern, docid, or comma-separated list of file paths/docids
    pub pattern: String,
    /// Maximum lines per file
    pub max_lines: Option<f64>,
    /// Skip files larger than this (default: 65536 = 64KB)
    #[serde(default = "default_max_bytes")]
    pub max_bytes: f64,
    /// Add line numbers to output (format: 'N: content'). On by default; set false for raw content.
    #[serde(default = "default_true")]
    pub line_numbers: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct StatusArgs {}

fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

fn internal(e: anyhow::Error) -> ErrorData {
    ErrorData::internal_error(format!("{e:#}"), None)
}

/// An engine error as qmd's MCP shows it.
fn engine_error(e: bindings::Error) -> CallToolResult {
    error_result(format!("Error: {}", e.message))
}

fn markdown_resource(collection: &str, path: &str, text: String) -> ContentBlock {
    ContentBlock::resource(ResourceContents::TextResourceContents {
        uri: vpath::uri(collection, path),
        mime_type: Some("text/markdown".into()),
        text,
        meta: None,
    })
}

/// Runs a structured or plain query; shared by the tool and REST `/query`.
pub async fn run_query(
    pool: &Arc<EnginePool>,
    request: bindings::QueryRequest,
) -> anyhow::Result<Result<bindings::QueryResult, bindings::Error>> {
    pool.call(move |store, engine| Ok(engine.call_query(store, &request)?)).await
}

/// qmd's query parameters, from the MCP tool or the REST endpoint.
pub struct QueryParams {
    pub query: Option<String>,
    pub searches: Vec<(SearchType, String)>,
    pub collections: Vec<String>,
    pub limit: u32,
    pub min_score: f64,
    pub candidate_limit: Option<u32>,
    pub intent: Option<String>,
    pub rerank: bool,
    /// A metadata filter as JSON text.
    pub filter: Option<String>,
}

impl QueryParams {
    pub fn request(self) -> bindings::QueryRequest {
        bindings::QueryRequest {
            query: self.query,
            parse_document: false,
            searches: self.searches.into_iter().map(|(kind, query)| bindings::TypedSearch { kind, query }).collect(),
            options: bindings::SearchOptions {
                collections: self.collections,
                limit: self.limit,
                min_score: self.min_score,
                snippet_max_len: 300,
                full: false,
                filter: self.filter,
            },
            intent: self.intent,
            candidate_limit: self.candidate_limit.unwrap_or(40),
            rerank: self.rerank,
            chunk_strategy: None,
        }
    }
}

pub fn search_type(kind: SubSearchType) -> SearchType {
    match kind {
        SubSearchType::Lex => SearchType::Lex,
        SubSearchType::Vec => SearchType::Vec,
        SubSearchType::Hyde => SearchType::Hyde,
    }
}

#[tool_router]
impl QmdServer {
    pub fn new(shared: Arc<Shared>) -> Self {
        QmdServer { shared, tool_router: Self::tool_router() }
    }

    #[tool(
        name = "query",
        title = "Query",
        description = include_str!("query_tool.md"),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn query(&self, Parameters(args): Parameters<QueryArgs>) -> Result<CallToolResult, ErrorData> {
        // Neither or both of `query` and `searches`: the engine refuses
        // them, in qmd's words.
        let request = QueryParams {
            query: args.query.filter(|q| !q.is_empty()),
            searches: args.searches.unwrap_or_default().into_iter().map(|s| (search_type(s.kind), s.query)).collect(),
            collections: args.collections.unwrap_or_default(),
            limit: count(args.limit),
            min_score: args.min_score,
            candidate_limit: args.candidate_limit.map(count),
            intent: args.intent,
            rerank: args.rerank,
            filter: args.filter.map(|f| Value::Object(f).to_string()),
        }
        .request();
        match run_query(&self.shared.pool, request).await.map_err(internal)? {
            Ok(result) => {
                let results: Vec<Value> = result.hits.iter().map(format::hit_json).collect();
                let mut out = CallToolResult::success(vec![ContentBlock::text(format::search_summary(
                    &results,
                    &result.primary_query,
                ))]);
                out.structured_content = Some(serde_json::json!({ "results": results }));
                Ok(out)
            }
            Err(e) => Ok(engine_error(e)),
        }
    }

    #[tool(
        name = "get",
        title = "Get Document",
        description = "Retrieve the full content of a document by its file path or docid. Use paths or docids (#abc123) from search results. Suggests similar files if not found.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get(&self, Parameters(args): Parameters<GetArgs>) -> Result<CallToolResult, ErrorData> {
        let request = bindings::GetRequest {
            file: args.file.clone(),
            from_line: args.from_line.map(|n| count(n).max(1)),
            max_lines: args.max_lines.map(count),
            line_numbers: args.line_numbers,
        };
        Ok(match self.fetch(request).await? {
            Ok(doc) => {
                let text = format::with_context(doc.context.as_deref(), doc.body);
                CallToolResult::success(vec![markdown_resource(&doc.collection, &doc.path, text)])
            }
            Err(GetError::NotFound(info)) => {
                let mut message = format!("Document not found: {}", args.file);
                if !info.similar.is_empty() {
                    let list: Vec<String> = info.similar.iter().map(|s| format!("  - {s}")).collect();
                    message += &format!("\n\nDid you mean one of these?\n{}", list.join("\n"));
                }
                error_result(message)
            }
            Err(GetError::Excluded(info)) => error_result(format::excluded_message(&args.file, &info)),
            Err(GetError::Failed(e)) => engine_error(e),
        })
    }

    #[tool(
        name = "multi_get",
        title = "Multi-Get Documents",
        description = "Retrieve multiple documents by glob pattern (e.g., 'journals/2025-05*.md'), comma-separated list, or docids. Skips files larger than maxBytes.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn multi_get(&self, Parameters(args): Parameters<MultiGetArgs>) -> Result<CallToolResult, ErrorData> {
        let max_bytes = if args.max_bytes > 0.0 { args.max_bytes } else { default_max_bytes() } as u64;
        let request = bindings::MultiGetRequest {
            pattern: args.pattern.clone(),
            max_lines: args.max_lines.map(count),
            max_bytes,
            line_numbers: args.line_numbers,
        };
        let result = self.shared.pool.call(move |store, engine| Ok(engine.call_multi_get(store, &request)?)).await;
        let result = match result.map_err(internal)? {
            Ok(result) => result,
            Err(e) => return Ok(engine_error(e)),
        };
        if result.entries.is_empty() && result.errors.is_empty() {
            return Ok(error_result(format!("No files matched pattern: {}", args.pattern)));
        }
        let mut content = Vec::new();
        if !result.errors.is_empty() {
            content.push(ContentBlock::text(format!("Errors:\n{}", result.errors.join("\n"))));
        }
        for entry in result.entries {
            let doc = entry.doc;
            let display = format!("{}/{}", doc.collection, doc.path);
            match entry.skipped {
                Some(reason) => content.push(ContentBlock::text(format!(
                    "[SKIPPED: {display} - {reason}. Use 'qmd_get' with file=\"{display}\" to retrieve.]"
                ))),
                None => {
                    let text = format::with_context(doc.context.as_deref(), doc.body);
                    content.push(markdown_resource(&doc.collection, &doc.path, text));
                }
            }
        }
        Ok(CallToolResult::success(content))
    }

    #[tool(
        name = "status",
        title = "Index Status",
        description = "Show the status of the QMD index: collections, document counts, and health information.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn status(&self, Parameters(_): Parameters<StatusArgs>) -> Result<CallToolResult, ErrorData> {
        let status = self.shared.pool.call(|store, engine| Ok(engine.call_status(store)?)).await.map_err(internal)?;
        Ok(match status {
            Ok(status) => {
                let mut out = CallToolResult::success(vec![ContentBlock::text(format::status_text(&status))]);
                out.structured_content = Some(format::status_json(&status, crate::clock::now_ms()));
                out
            }
            Err(e) => engine_error(e),
        })
    }
}

impl QmdServer {
    /// One document through a pooled instance (`get` and the resource).
    async fn fetch(&self, request: bindings::GetRequest) -> Result<Result<bindings::Document, GetError>, ErrorData> {
        self.shared.pool.call(move |store, engine| Ok(engine.call_get(store, &request)?)).await.map_err(internal)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QmdServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("qmd", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.shared.instructions.clone())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("qmd://{+path}", "document")
                .with_title("QMD Document")
                .with_description(
                    "A markdown document from your QMD knowledge base. Use search tools to discover documents.",
                )
                .with_mime_type("text/markdown"),
        ]))
    }

    /// `qmd://<path>`: the line-numbered document, resolved like `get`; an
    /// unknown path is a text answer, not an error (as in qmd).
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let Some(raw) = uri.strip_prefix("qmd://") else {
            return Err(ErrorData::resource_not_found(format!("Unknown resource: {uri}"), None));
        };
        let decoded = vpath::percent_decode(raw);
        let get = bindings::GetRequest { file: decoded.clone(), from_line: None, max_lines: None, line_numbers: true };
        let (mime, text) = match self.fetch(get).await? {
            Ok(doc) => (Some("text/markdown".to_string()), format::with_context(doc.context.as_deref(), doc.body)),
            Err(GetError::Excluded(info)) => (None, format::excluded_message(&decoded, &info)),
            Err(GetError::NotFound(_)) => (None, format!("Document not found: {decoded}")),
            Err(GetError::Failed(e)) => return Err(ErrorData::internal_error(e.message, None)),
        };
        let contents = ResourceContents::TextResourceContents { uri, mime_type: mime, text, meta: None };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
