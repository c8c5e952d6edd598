//! The `engine` and `tools` worlds' exports: every engine operation, as
//! the `qmd` host and plugin hosts that want all of them call it.

use super::{
    Component, Guest, R, context_entry, document, get_error, hit, index_status, multi_get_result, options,
    typed_search_in, wit,
};
use crate::wasi::engine;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn search_type(kind: crate::SearchType) -> wit::SearchType {
    match kind {
        crate::SearchType::Lex => wit::SearchType::Lex,
        crate::SearchType::Vec => wit::SearchType::Vec,
        crate::SearchType::Hyde => wit::SearchType::Hyde,
    }
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

/// The host's progress import (none for plugin hosts).
fn progress_fn() -> impl FnMut(&str, u64, u64) {
    #[cfg(not(feature = "plugin"))]
    return |phase: &str, done: u64, total: u64| super::qmd::engine::host::progress(phase, done, total);
    #[cfg(feature = "plugin")]
    return |_: &str, _: u64, _: u64| {};
}

fn skipped_file(s: crate::api::SkippedFile) -> wit::SkippedFile {
    wit::SkippedFile { path: s.path, reason: s.reason }
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
                skipped: c.skipped.into_iter().map(skipped_file).collect(),
                invalid_metadata: c.invalid_metadata.into_iter().map(skipped_file).collect(),
                lossy_text: c.lossy_text.into_iter().map(skipped_file).collect(),
                error: c.error,
            })
            .collect(),
        segments_merged: report.segments_merged,
        generation: report.generation,
        notes: report.notes,
    }
}

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
        Ok(index_status(engine().status()?))
    }

    fn search(query: String, o: wit::SearchOptions) -> R<Vec<wit::SearchHit>> {
        Ok(engine().search(&query, &options(o)?)?.into_iter().map(hit).collect())
    }

    fn query(r: wit::QueryRequest) -> R<wit::QueryResult> {
        let request = crate::QueryRequest {
            query: r.query,
            parse_document: r.parse_document,
            searches: r.searches.into_iter().map(typed_search_in).collect(),
            options: options(r.options)?,
            intent: r.intent,
            candidate_limit: r.candidate_limit as usize,
            rerank: r.rerank,
            chunk_strategy: r.chunk_strategy.map(super::chunk_strategy_in),
        };
        #[cfg(not(feature = "plugin"))]
        let models: Option<&dyn crate::inference::Inference> = Some(&super::models::HostModels);
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
        engine().get(&request).map(document).map_err(get_error)
    }

    fn multi_get(r: wit::MultiGetRequest) -> R<wit::MultiGetResult> {
        let request = crate::MultiGetRequest {
            pattern: r.pattern,
            max_lines: r.max_lines,
            max_bytes: r.max_bytes,
            line_numbers: r.line_numbers,
        };
        Ok(multi_get_result(engine().multi_get(&request)?))
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
