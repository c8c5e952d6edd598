//! The WASI component: exports the engine through `wit/world.wit`. This is
//! the only module that names WIT types; it maps them field by field.

// Generated bindings mirror WIT signatures, some with many parameters.
#![allow(clippy::too_many_arguments)]

#[cfg(feature = "mcp")]
mod mcp;
#[cfg(not(any(feature = "plugin", feature = "mcp")))]
mod models;
#[cfg(not(feature = "mcp"))]
mod tools;

#[cfg(not(any(feature = "plugin", feature = "mcp")))]
wit_bindgen::generate!({
    path: "../wit",
    world: "engine",
});

// For plugin hosts: the same exports, no import beyond WASI.
#[cfg(all(feature = "plugin", not(feature = "mcp")))]
wit_bindgen::generate!({
    path: "../wit",
    world: "tools",
});

// For hosts that make each export an agent's tool: qmd's four MCP tools.
#[cfg(feature = "mcp")]
wit_bindgen::generate!({
    path: "../wit",
    world: "mcp",
});

use qmd::engine::types as wit;

impl From<crate::Error> for wit::Error {
    fn from(e: crate::Error) -> Self {
        use crate::ErrorKind as K;
        let kind = match e.kind {
            K::NotFound => wit::ErrorKind::NotFound,
            K::InvalidArgument => wit::ErrorKind::InvalidArgument,
            K::AlreadyExists => wit::ErrorKind::AlreadyExists,
            K::CorruptIndex => wit::ErrorKind::CorruptIndex,
            K::Io => wit::ErrorKind::Io,
            K::Internal => wit::ErrorKind::Internal,
        };
        wit::Error { kind, message: e.message }
    }
}

fn hit(h: crate::SearchHit) -> wit::SearchHit {
    wit::SearchHit {
        docid: h.docid,
        collection: h.collection,
        path: h.path,
        title: h.title,
        context: h.context,
        score: h.score,
        line: h.line,
        line_matched: h.line_matched,
        snippet: h.snippet,
        body: h.body,
        source_path: h.source_path,
        metadata: h.metadata.map(|m| m.to_string()),
    }
}

#[cfg(not(feature = "mcp"))]
fn options(o: wit::SearchOptions) -> crate::Result<crate::SearchOptions> {
    Ok(crate::SearchOptions {
        collections: o.collections,
        limit: o.limit as usize,
        min_score: o.min_score,
        snippet_max_len: o.snippet_max_len as usize,
        full: o.full,
        filter: o.filter.as_deref().map(crate::metadata::Filter::parse_json).transpose()?,
    })
}

fn typed_search_in(s: wit::TypedSearch) -> crate::TypedSearch {
    let kind = match s.kind {
        wit::SearchType::Lex => crate::SearchType::Lex,
        wit::SearchType::Vec => crate::SearchType::Vec,
        wit::SearchType::Hyde => crate::SearchType::Hyde,
    };
    crate::TypedSearch { kind, query: s.query }
}

#[cfg(not(feature = "mcp"))]
fn chunk_strategy_in(s: wit::ChunkStrategy) -> crate::chunk::ChunkStrategy {
    match s {
        wit::ChunkStrategy::Regex => crate::chunk::ChunkStrategy::Regex,
        wit::ChunkStrategy::Auto => crate::chunk::ChunkStrategy::Auto,
    }
}

fn chunk_strategy_out(s: crate::chunk::ChunkStrategy) -> wit::ChunkStrategy {
    match s {
        crate::chunk::ChunkStrategy::Regex => wit::ChunkStrategy::Regex,
        crate::chunk::ChunkStrategy::Auto => wit::ChunkStrategy::Auto,
    }
}

fn document(d: crate::Document) -> wit::Document {
    wit::Document {
        docid: d.docid,
        collection: d.collection,
        path: d.path,
        title: d.title,
        context: d.context,
        body: d.body,
        source_path: d.source_path,
        size: d.size,
    }
}

fn context_entry(c: crate::ContextEntry) -> wit::ContextEntry {
    wit::ContextEntry { collection: c.collection, prefix: c.prefix, text: c.text }
}

type R<T> = Result<T, wit::Error>;

fn index_status(s: crate::IndexStatus) -> wit::IndexStatus {
    wit::IndexStatus {
        total_documents: s.total_documents,
        needs_embedding: s.needs_embedding,
        has_vector_index: s.has_vector_index,
        vectors: s.vectors,
        embed_model: s.embed_model,
        chunk_strategy: chunk_strategy_out(s.chunk_strategy),
        index_bytes: s.index_bytes,
        segments: s.segments,
        generation: s.generation,
        global_context: s.global_context,
        newest_document: s.newest_document,
        with_metadata: s.with_metadata,
        invalid_metadata: s.invalid_metadata,
        collections: s
            .collections
            .into_iter()
            .map(|c| wit::CollectionStatus {
                name: c.name,
                path: c.path,
                pattern: c.pattern,
                documents: c.documents,
                last_updated: c.last_updated,
                include_by_default: c.include_by_default,
                chunk_strategy: c.chunk_strategy.map(chunk_strategy_out),
            })
            .collect(),
        contexts: s.contexts.into_iter().map(context_entry).collect(),
    }
}

fn get_error(e: crate::GetError) -> wit::GetError {
    match e {
        crate::GetError::NotFound { query, similar } => wit::GetError::NotFound(wit::NotFoundInfo { query, similar }),
        crate::GetError::Excluded { query, collection, matched_path, rule } => {
            wit::GetError::Excluded(wit::ExcludedInfo { query, collection, matched_path, rule })
        }
        crate::GetError::Failed(e) => wit::GetError::Failed(e.into()),
    }
}

fn multi_get_result(result: crate::MultiGetResult) -> wit::MultiGetResult {
    wit::MultiGetResult {
        entries: result
            .entries
            .into_iter()
            .map(|e| wit::MultiGetEntry { doc: document(e.doc), skipped: e.skipped })
            .collect(),
        errors: result.errors,
        by_list: result.by_list,
    }
}

struct Component;

export!(Component);
