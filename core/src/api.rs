//! Plain request and result types of the engine, one per WIT record
//! (`wit/world.wit`), so the component glue is a field-by-field copy.
//! Results serialize (serde) so the browser bindings hand them to
//! JavaScript as plain objects; requests do not need to.

/// Options shared by `search` and `query`.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Empty: every collection included by default.
    pub collections: Vec<String>,
    pub limit: usize,
    pub min_score: f64,
    pub snippet_max_len: usize,
    pub full: bool,
    /// Only documents whose metadata passes (qmd's `--filter`); the limit
    /// counts only those.
    pub filter: Option<crate::metadata::Filter>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            collections: Vec::new(),
            limit: 5,
            min_score: 0.0,
            snippet_max_len: 500,
            full: false,
            filter: None,
        }
    }
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct SearchHit {
    pub docid: String,
    pub collection: String,
    pub path: String,
    pub title: String,
    pub context: Option<String>,
    pub score: f64,
    pub line: u32,
    pub line_matched: bool,
    pub snippet: String,
    pub body: Option<String>,
    pub source_path: String,
    /// The document's `qmd.metadata`, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

#[derive(serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SearchType {
    Lex,
    Vec,
    Hyde,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct TypedSearch {
    pub kind: SearchType,
    pub query: String,
}

#[derive(Clone, Debug)]
pub struct QueryRequest {
    /// Plain text (auto-expanded); exclusive with `searches`.
    pub query: Option<String>,
    /// Read `query` as a query document (typed `lex:`/`vec:`/`hyde:`/
    /// `intent:` lines), as the CLI does; MCP and REST take it as plain text.
    pub parse_document: bool,
    pub searches: Vec<TypedSearch>,
    pub options: SearchOptions,
    pub intent: Option<String>,
    pub candidate_limit: usize,
    pub rerank: bool,
    /// How candidates are cut to pick the chunk the reranker reads
    /// (`--chunk-strategy`); `None`: as the index's vectors were chunked.
    pub chunk_strategy: Option<crate::chunk::ChunkStrategy>,
}

impl Default for QueryRequest {
    fn default() -> Self {
        QueryRequest {
            query: None,
            parse_document: false,
            searches: Vec::new(),
            options: SearchOptions { limit: 10, ..SearchOptions::default() },
            intent: None,
            candidate_limit: 40,
            rerank: true,
            chunk_strategy: None,
        }
    }
}

/// One ranked list that went into the fusion.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct RankedListInfo {
    /// `fts` or `vec`.
    pub source: String,
    /// `original`, `lex`, `vec` or `hyde`.
    pub query_type: String,
    pub query: String,
    /// Set when the list was searched in one collection.
    pub collection: Option<String>,
    pub weight: f64,
    pub hits: u32,
}

/// A `query` result: the hit plus how it was scored (for `--explain`).
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct QueryHit {
    pub hit: SearchHit,
    /// 1-based position in the fused candidate list.
    pub rrf_rank: u32,
    pub rrf_score: f64,
    pub top_rank_bonus: f64,
    pub contributions: Vec<crate::search::fusion::Contribution>,
    /// The reranker's score, when a reranker ran.
    pub rerank_score: Option<f64>,
    /// Weight of the position score `1/rrf_rank` in the final score.
    pub blend_weight: f64,
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct QueryResult {
    pub hits: Vec<QueryHit>,
    /// The text whose terms picked chunks and snippets.
    pub primary_query: String,
    pub intent: Option<String>,
    pub lists: Vec<RankedListInfo>,
    /// Searches the expansion step added (plain queries).
    pub expansion: Vec<TypedSearch>,
    /// Top BM25 score when it was strong enough to skip expansion.
    pub strong_signal: Option<f64>,
    /// What the pipeline could not do and did instead, for `--explain`.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct GetRequest {
    pub file: String,
    pub from_line: Option<u32>,
    pub max_lines: Option<u32>,
    pub line_numbers: bool,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Document {
    pub docid: String,
    pub collection: String,
    pub path: String,
    pub title: String,
    pub context: Option<String>,
    pub body: String,
    pub source_path: String,
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum GetError {
    NotFound { query: String, similar: Vec<String> },
    Excluded { query: String, collection: String, matched_path: String, rule: String },
    Failed(crate::Error),
}

#[derive(Clone, Debug)]
pub struct MultiGetRequest {
    pub pattern: String,
    pub max_lines: Option<u32>,
    pub max_bytes: u64,
    pub line_numbers: bool,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct MultiGetEntry {
    pub doc: Document,
    pub skipped: Option<String>,
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct MultiGetResult {
    pub entries: Vec<MultiGetEntry>,
    pub errors: Vec<String>,
    /// The pattern was read as a comma list or docids, not a glob.
    pub by_list: bool,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct CollectionInfo {
    pub name: String,
    pub path: String,
    pub pattern: String,
    pub ignore: Vec<String>,
    pub include_by_default: bool,
    pub documents: u32,
    pub last_updated: Option<i64>,
    pub contexts: u32,
    pub update_command: Option<String>,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct ContextEntry {
    pub collection: String,
    pub prefix: String,
    pub text: String,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct CollectionStatus {
    pub name: String,
    pub path: String,
    pub pattern: String,
    pub documents: u32,
    pub last_updated: Option<i64>,
    pub include_by_default: bool,
    /// The collection's own `chunk_strategy:` (`index.yml`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_strategy: Option<crate::chunk::ChunkStrategy>,
}

/// What `cleanup` reclaimed (or, in a dry run, would).
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct CleanupReport {
    /// Documents deleted from segments (old versions, removed files) that
    /// still take space until their segment is rewritten.
    pub inactive_documents: u32,
    /// Vector rows of contents no live document has.
    pub orphaned_vectors: u64,
    pub segments_before: u32,
    pub segments_after: u32,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct IndexStatus {
    pub total_documents: u32,
    pub needs_embedding: u32,
    pub has_vector_index: bool,
    /// Chunk vectors stored, and the model that made them.
    pub vectors: u64,
    pub embed_model: Option<String>,
    /// How the vectors' code files were chunked (shown when `auto`).
    #[serde(skip_serializing_if = "crate::chunk::ChunkStrategy::is_regex")]
    pub chunk_strategy: crate::chunk::ChunkStrategy,
    pub index_bytes: u64,
    pub segments: u32,
    pub generation: u64,
    pub global_context: Option<String>,
    pub collections: Vec<CollectionStatus>,
    pub contexts: Vec<ContextEntry>,
    /// Modification time (ms) of the newest indexed document.
    pub newest_document: Option<i64>,
    /// Documents with `qmd.metadata`, and documents whose `qmd.metadata`
    /// frontmatter is invalid (indexed without it).
    pub with_metadata: u32,
    pub invalid_metadata: u32,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct FileEntry {
    pub collection: String,
    pub path: String,
    pub size: u64,
    pub modified: i64,
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Listing {
    Collections(Vec<(String, u32)>),
    /// The files under `collection/prefix`, by path.
    Files {
        collection: String,
        prefix: String,
        files: Vec<FileEntry>,
    },
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct CollectionReport {
    pub name: String,
    pub added: u32,
    pub updated: u32,
    pub unchanged: u32,
    pub removed: u32,
    pub skipped: Vec<SkippedFile>,
    /// Files indexed without metadata because their `qmd.metadata`
    /// frontmatter is invalid, with the reason.
    pub invalid_metadata: Vec<SkippedFile>,
    /// Files indexed with bytes invalid in their encoding read as U+FFFD,
    /// with where ([`crate::encoding::note_text`]).
    pub lossy_text: Vec<SkippedFile>,
    /// Why the collection was not scanned (its folder is missing or cannot
    /// be listed); its documents are kept.
    pub error: Option<String>,
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct UpdateReport {
    pub collections: Vec<CollectionReport>,
    pub segments_merged: u32,
    pub generation: u64,
    /// What a rebuild kept or dropped, for the user.
    pub notes: Vec<String>,
}
