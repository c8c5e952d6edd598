//! The WASI component: exports the engine through `wit/world.wit`. This is
//! the only module that names WIT types; it maps them field by field.

// Generated bindings mirror WIT signatures, some with many parameters.
#![allow(clippy::too_many_arguments)]

#[cfg(not(feature = "plugin"))]
mod models;

use crate::wasi::engine;

#[cfg(not(feature = "plugin"))]
wit_bindgen::generate!({
    path: "../wit",
    world: "engine",
});

// For plugin hosts: the same exports, no import beyond WASI.
#[cfg(feature = "plugin")]
wit_bindgen::generate!({
    path: "../wit",
    world: "tools",
});

use qmd::engine::types as wit;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

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

fn options(o: wit::SearchOptions) -> crate::SearchOptions {
    crate::SearchOptions {
        collections: o.collections,
        limit: o.limit as usize,
        min_score: o.min_score,
        snippet_max_len: o.snippet_max_len as usize,
        full: o.full,
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
    }
}

fn search_type(kind: crate::SearchType) -> wit::SearchType {
    match kind {
        crate::SearchType::Lex => wit::SearchType::Lex,
        crate::SearchType::Vec => wit::SearchType::Vec,
        crate::SearchType::Hyde => wit::SearchType::Hyde,
    }
}

fn typed_search_in(s: wit::TypedSearch) -> crate::TypedSearch {
    let kind = match s.kind {
        wit::SearchType::Lex => crate::SearchType::Lex,
        wit::SearchType::Vec => crate::SearchType::Vec,
        wit::SearchType::Hyde => crate::SearchType::Hyde,
    };
    crate::TypedSearch { kind, query: s.query }
}

fn query_result(r: crate::QueryResult) -> wit::QueryResult {
    wit::QueryResult {
        hits: r
            .hits
            .into_iter()
            .map(|h| wit::QueryHit {
                hit: hit(h.hit),
                rrf_rank: h.rrf_rank,
                rrf_score: h.rrf_score,
                top_rank_bonus: h.top_rank_bonus,
                contributions: h
                    .contributions
                    .into_iter()
                    .map(|c| wit::RrfContribution {
                        list_index: c.list as u32,
                        rank: c.rank as u32,
                        weight: c.weight,
                        backend_score: c.backend_score,
                        rrf: c.rrf,
                    })
                    .collect(),
                rerank_score: h.rerank_score,
                blend_weight: h.blend_weight,
            })
            .collect(),
        primary_query: r.primary_query,
        intent: r.intent,
        lists: r
            .lists
            .into_iter()
            .map(|l| wit::RankedListInfo {
                source: l.source,
                query_type: l.query_type,
                query: l.query,
                collection: l.collection,
                weight: l.weight,
                hits: l.hits,
            })
            .collect(),
        expansion: r
            .expansion
            .into_iter()
            .map(|s| wit::TypedSearch { kind: search_type(s.kind), query: s.query })
            .collect(),
        strong_signal: r.strong_signal,
        notes: r.notes,
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

fn collection_info(c: crate::CollectionInfo) -> wit::CollectionInfo {
    wit::CollectionInfo {
        name: c.name,
        path: c.path,
        pattern: c.pattern,
        ignore: c.ignore,
        include_by_default: c.include_by_default,
        documents: c.documents,
        last_updated: c.last_updated,
        contexts: c.contexts,
        update_command: c.update_command,
    }
}

fn context_entry(c: crate::ContextEntry) -> wit::ContextEntry {
    wit::ContextEntry { collection: c.collection, prefix: c.prefix, text: c.text }
}

type R<T> = Result<T, wit::Error>;

/// The host's progress import (none for plugin hosts).
fn progress_fn() -> impl FnMut(&str, u64, u64) {
    #[cfg(not(feature = "plugin"))]
    return |phase: &str, done: u64, total: u64| qmd::engine::host::progress(phase, done, total);
    #[cfg(feature = "plugin")]
    return |_: &str, _: u64, _: u64| {};
}

fn update_report(report: crate::UpdateReport) -> wit::UpdateReport {
    wit::UpdateReport {
        collections: report
            .collections
            .into_iter()
            .map(|c| wit::CollectionReport {
                name: c.name,
                added: c.added,
                updated: c.updated,
                unchanged: c.unchanged,
                removed: c.removed,
                skipped: c.skipped.into_iter().map(|s| wit::SkippedFile { path: s.path, reason: s.reason }).collect(),
                error: c.error,
            })
            .collect(),
        segments_merged: report.segments_merged,
        generation: report.generation,
        notes: report.notes,
    }
}

struct Component;

impl Guest for Component {
    fn verify() -> R<wit::IndexCheck> {
        let c = engine().verify()?;
        Ok(wit::IndexCheck {
            generation: c.generation,
            segments: c.segments,
            documents: c.documents,
            vector_rows: c.vector_rows,
        })
    }

    fn cleanup(dry_run: bool) -> R<wit::CleanupReport> {
        let r = engine().cleanup(dry_run)?;
        Ok(wit::CleanupReport {
            inactive_documents: r.inactive_documents,
            orphaned_vectors: r.orphaned_vectors,
            segments_before: r.segments_before,
            segments_after: r.segments_after,
            bytes_before: r.bytes_before,
            bytes_after: r.bytes_after,
        })
    }

    fn status() -> R<wit::IndexStatus> {
        let s = engine().status()?;
        Ok(wit::IndexStatus {
            total_documents: s.total_documents,
            needs_embedding: s.needs_embedding,
            has_vector_index: s.has_vector_index,
            vectors: s.vectors,
            embed_model: s.embed_model,
            index_bytes: s.index_bytes,
            segments: s.segments,
            generation: s.generation,
            global_context: s.global_context,
            newest_document: s.newest_document,
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
                })
                .collect(),
            contexts: s.contexts.into_iter().map(context_entry).collect(),
        })
    }

    fn search(query: String, o: wit::SearchOptions) -> R<Vec<wit::SearchHit>> {
        Ok(engine().search(&query, &options(o))?.into_iter().map(hit).collect())
    }

    fn query(r: wit::QueryRequest) -> R<wit::QueryResult> {
        let request = crate::QueryRequest {
            query: r.query,
            parse_document: r.parse_document,
            searches: r.searches.into_iter().map(typed_search_in).collect(),
            options: options(r.options),
            intent: r.intent,
            candidate_limit: r.candidate_limit as usize,
            rerank: r.rerank,
        };
        #[cfg(not(feature = "plugin"))]
        let models: Option<&dyn crate::inference::Inference> = Some(&models::HostModels);
        #[cfg(feature = "plugin")]
        let models = None;
        Ok(query_result(engine().query_with(&request, models)?))
    }

    fn get(r: wit::GetRequest) -> Result<wit::Document, wit::GetError> {
        let request = crate::GetRequest {
            file: r.file,
            from_line: r.from_line,
            max_lines: r.max_lines,
            line_numbers: r.line_numbers,
        };
        engine().get(&request).map(document).map_err(|e| match e {
            crate::GetError::NotFound { query, similar } => {
                wit::GetError::NotFound(wit::NotFoundInfo { query, similar })
            }
            crate::GetError::Excluded { query, collection, matched_path, rule } => {
                wit::GetError::Excluded(wit::ExcludedInfo { query, collection, matched_path, rule })
            }
            crate::GetError::Failed(e) => wit::GetError::Failed(e.into()),
        })
    }

    fn multi_get(r: wit::MultiGetRequest) -> R<wit::MultiGetResult> {
        let request = crate::MultiGetRequest {
            pattern: r.pattern,
            max_lines: r.max_lines,
            max_bytes: r.max_bytes,
            line_numbers: r.line_numbers,
        };
        let result = engine().multi_get(&request)?;
        Ok(wit::MultiGetResult {
            entries: result
                .entries
                .into_iter()
                .map(|e| wit::MultiGetEntry { doc: document(e.doc), skipped: e.skipped })
                .collect(),
            errors: result.errors,
            by_list: result.by_list,
        })
    }

    fn ls(target: Option<String>) -> R<wit::Listing> {
        Ok(match engine().ls(target.as_deref())? {
            crate::Listing::Collections(list) => wit::Listing::Collections(
                list.into_iter().map(|(name, files)| wit::CollectionFiles { name, files }).collect(),
            ),
            crate::Listing::Files { collection, prefix, files } => wit::Listing::Files(wit::FileListing {
                collection,
                prefix,
                files: files
                    .into_iter()
                    .map(|f| wit::FileEntry {
                        collection: f.collection,
                        path: f.path,
                        size: f.size,
                        modified: f.modified,
                    })
                    .collect(),
            }),
        })
    }

    fn update(collections: Vec<String>) -> R<wit::UpdateReport> {
        Ok(update_report(engine().update(&collections, now_ms(), &mut progress_fn())?))
    }

    fn rebuild() -> R<wit::UpdateReport> {
        Ok(update_report(engine().rebuild(now_ms(), &mut progress_fn())?))
    }

    fn collection_add(path: String, name: Option<String>, mask: Option<String>) -> R<wit::CollectionInfo> {
        Ok(collection_info(engine().collection_add(&path, name.as_deref(), mask.as_deref())?))
    }

    fn collection_list() -> R<Vec<wit::CollectionInfo>> {
        Ok(engine().collection_list()?.into_iter().map(collection_info).collect())
    }

    fn collection_roots() -> R<Vec<wit::CollectionRoot>> {
        let config = engine().config()?;
        Ok(config
            .collections
            .into_iter()
            .map(|c| wit::CollectionRoot {
                name: c.name,
                path: c.path,
                pattern: c.pattern,
                update_command: c.update_command,
            })
            .collect())
    }

    fn collection_remove(name: String) -> R<wit::CollectionInfo> {
        Ok(collection_info(engine().collection_remove(&name)?))
    }

    fn collection_rename(old: String, new: String) -> R<wit::CollectionInfo> {
        Ok(collection_info(engine().collection_rename(&old, &new)?))
    }

    fn collection_set_include(name: String, included: bool) -> R<wit::CollectionInfo> {
        Ok(collection_info(engine().collection_set_include(&name, included)?))
    }

    fn collection_set_update(name: String, command: Option<String>) -> R<wit::CollectionInfo> {
        Ok(collection_info(engine().collection_set_update(&name, command.as_deref())?))
    }

    fn context_add(target: String, text: String) -> R<wit::ContextEntry> {
        Ok(context_entry(engine().context_add(&target, &text)?))
    }

    fn context_list() -> R<Vec<wit::ContextEntry>> {
        Ok(engine().context_list()?.into_iter().map(context_entry).collect())
    }

    fn context_remove(target: String) -> R<wit::ContextEntry> {
        Ok(context_entry(engine().context_remove(&target)?))
    }
}

export!(Component);
