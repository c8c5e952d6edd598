//! Read operations: search, get, multi-get, ls, status.

use std::collections::HashSet;

use super::{Engine, passing, source_path};
use crate::api::*;
use crate::collection::{Config, context_for};
use crate::document::{MULTI_GET_TOTAL_BYTES, docid, over_total, slice_lines, too_large, truncate_lines};
use crate::error::{Error, Result};
use crate::index::{CatalogEntry, Index};
use crate::lookup::{
    ListIndex, find_document, glob_documents, ignored_by, is_list_pattern, similar_paths, split_line_suffix,
};
use crate::query::lex::parse_lex;
use crate::search::lex::search_lex;
use crate::search::snippet::extract_snippet;
use crate::vpath;

fn document(config: &Config, entry: &CatalogEntry, body: String) -> Document {
    let r = &entry.record;
    Document {
        docid: docid(&r.hash).to_string(),
        collection: r.collection.clone(),
        path: r.path.clone(),
        title: r.title.clone(),
        context: context_for(config, &r.collection, &r.path),
        body,
        source_path: source_path(config, &r.collection, &r.path),
        size: r.size,
    }
}

/// A document a search found, with its body when already loaded.
pub(super) struct Found {
    pub address: crate::index::DocAddress,
    pub score: f64,
    pub body: Option<String>,
}

/// What a snippet is centred on.
pub(super) struct SnippetFocus<'a> {
    pub query: &'a str,
    /// `(char position, char length)` of the chunk that matched.
    pub chunk: Option<(usize, usize)>,
    pub intent: Option<&'a str>,
}

impl Engine {
    /// BM25 keyword search (qmd `search`).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<SearchHit>> {
        crate::query::check_length("Query", query)?;
        let config = self.config()?;
        let scope = self.scope(&config, &options.collections)?;
        let index = self.index()?;
        let lex = parse_lex(query);
        // With a filter every match is ranked, so the limit counts only
        // documents that pass it.
        let fetch = if options.filter.is_some() { usize::MAX } else { options.limit.saturating_mul(2).max(50) };
        let mut hits = search_lex(&index, &lex, Some(&scope), fetch, &self.bm25)?;
        hits.retain(|h| h.score >= options.min_score);
        if let Some(filter) = &options.filter {
            hits = passing(&index, filter, hits, |h| h.address, options.limit)?;
        }
        let mut out = Vec::new();
        for hit in hits.into_iter().take(options.limit) {
            let focus = SnippetFocus { query, chunk: None, intent: None };
            let found = Found { address: hit.address, score: hit.score, body: None };
            out.push(self.hit(&config, &index, found, &focus, options)?);
        }
        Ok(out)
    }

    /// A result row; `body` when the caller already loaded it.
    pub(super) fn hit(
        &self,
        config: &Config,
        index: &Index,
        found: Found,
        focus: &SnippetFocus<'_>,
        options: &SearchOptions,
    ) -> Result<SearchHit> {
        let Found { address, score, body } = found;
        let segment = &index.segments[address.segment];
        let record = segment.doc(address.doc)?;
        let body = match body {
            Some(body) => body,
            None => segment.body(&record)?,
        };
        let snippet = extract_snippet(&body, focus.query, options.snippet_max_len, focus.chunk, focus.intent);
        let metadata = &index.metadata_of(address, &body)?.metadata;
        Ok(SearchHit {
            metadata: (!metadata.is_empty()).then(|| crate::metadata::to_json(metadata)),
            docid: docid(&record.hash).to_string(),
            context: context_for(config, &record.collection, &record.path),
            source_path: source_path(config, &record.collection, &record.path),
            score,
            line: snippet.line,
            line_matched: snippet.matched,
            snippet: snippet.text,
            body: options.full.then_some(body),
            collection: record.collection,
            path: record.path,
            title: record.title,
        })
    }

    /// One document by path, `qmd://` path or docid (qmd `get`).
    pub fn get(&self, request: &GetRequest) -> std::result::Result<Document, GetError> {
        let config = self.config().map_err(GetError::Failed)?;
        let index = self.index().map_err(GetError::Failed)?;
        let catalog = index.catalog().map_err(GetError::Failed)?;
        let (name, from, count) = split_line_suffix(request.file.trim());
        let (from, count) = (request.from_line.or(from), request.max_lines.or(count));
        let Some(entry) = find_document(catalog, &config, name) else {
            if let Some((collection, matched_path, rule)) = ignored_by(&config, name) {
                return Err(GetError::Excluded { query: request.file.clone(), collection, matched_path, rule });
            }
            return Err(GetError::NotFound { query: request.file.clone(), similar: similar_paths(catalog, name, 5) });
        };
        let body = index.body(entry).map_err(GetError::Failed)?;
        let lines = slice_lines(&body, from, count, request.line_numbers).unwrap_or_default();
        Ok(document(&config, entry, lines))
    }

    /// Several documents by glob, comma list or docids (qmd `multi-get`).
    /// At most [`MULTI_GET_TOTAL_BYTES`] of bodies in one answer (qmd has
    /// no such bound): `**` over a large collection lists the rest as
    /// skipped, with the reason, instead of filling memory.
    pub fn multi_get(&self, request: &MultiGetRequest) -> Result<MultiGetResult> {
        self.multi_get_within(request, MULTI_GET_TOTAL_BYTES)
    }

    fn multi_get_within(&self, request: &MultiGetRequest, total_bytes: u64) -> Result<MultiGetResult> {
        let config = self.config()?;
        let index = self.index()?;
        let catalog = index.catalog()?;
        let pattern = request.pattern.trim();
        let mut result = MultiGetResult { by_list: is_list_pattern(pattern), ..Default::default() };
        let mut found: Vec<&CatalogEntry> = Vec::new();
        if result.by_list {
            let names = ListIndex::new(catalog);
            let mut seen = HashSet::new();
            for name in pattern.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                match names.resolve(name) {
                    Ok(entry) if seen.insert(std::ptr::from_ref(entry)) => found.push(entry),
                    Ok(_) => {}
                    Err(message) => result.errors.push(message),
                }
            }
        } else {
            found = glob_documents(catalog, pattern)?;
            if found.is_empty() {
                result.errors.push(format!("No files matched pattern: {pattern}"));
            }
        }
        let mut held: u64 = 0;
        for entry in found {
            let size = entry.record.size;
            let skipped = if size > request.max_bytes {
                Some(too_large(size, request.max_bytes))
            } else if held + size > total_bytes {
                Some(over_total(held, total_bytes))
            } else {
                None
            };
            if skipped.is_some() {
                result.entries.push(MultiGetEntry { doc: document(&config, entry, String::new()), skipped });
                continue;
            }
            held += size;
            let body = truncate_lines(&index.body(entry)?, request.max_lines, request.line_numbers);
            result.entries.push(MultiGetEntry { doc: document(&config, entry, body), skipped: None });
        }
        Ok(result)
    }

    /// `ls`: collections with file counts, or the files under
    /// `collection[/prefix]` (also `qmd://…` or an absolute path).
    pub fn ls(&self, target: Option<&str>) -> Result<Listing> {
        let config = self.config()?;
        let index = self.index()?;
        let Some(target) = target.map(str::trim).filter(|t| !t.is_empty()) else {
            let counts = index.collection_counts()?;
            let listed = config
                .collections
                .iter()
                .map(|c| (c.name.clone(), counts.get(&c.name).copied().unwrap_or(0)))
                .collect();
            return Ok(Listing::Collections(listed));
        };
        let (collection, prefix) = if let Some(vp) = vpath::parse(target) {
            (vp.collection, vp.path)
        } else if target.starts_with('/') {
            let c = config
                .collections
                .iter()
                .filter(|c| {
                    let root = c.path.trim_end_matches('/');
                    target == root || target.starts_with(&format!("{root}/"))
                })
                .max_by_key(|c| c.path.len())
                .ok_or_else(|| Error::not_found(format!("Path is not in any indexed collection: {target}")))?;
            let rest = target[c.path.trim_end_matches('/').len()..].trim_start_matches('/');
            (c.name.clone(), rest.to_string())
        } else {
            let (name, rest) = target.split_once('/').unwrap_or((target, ""));
            (name.to_string(), rest.to_string())
        };
        config.require(&collection)?;
        let catalog = index.catalog()?;
        let mut files: Vec<FileEntry> = catalog
            .iter()
            .filter(|e| e.record.collection == collection && e.record.path.starts_with(&prefix))
            .map(|e| FileEntry {
                collection: collection.clone(),
                path: e.record.path.clone(),
                size: e.record.size,
                modified: e.record.modified_ms,
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Listing::Files { collection, prefix, files })
    }

    pub fn status(&self) -> Result<IndexStatus> {
        let config = self.config()?;
        let index = self.index()?;
        let counts = index.collection_counts()?;
        let total: u32 = counts.values().sum();
        let collections = config
            .collections
            .iter()
            .map(|c| CollectionStatus {
                name: c.name.clone(),
                path: c.path.clone(),
                pattern: c.pattern.clone(),
                documents: counts.get(&c.name).copied().unwrap_or(0),
                last_updated: index.manifest.last_update.get(&c.name).copied(),
                include_by_default: c.include_by_default,
                chunk_strategy: c.chunk_strategy,
            })
            .collect();
        // Distinct contents without vectors (qmd counts hashes, not
        // documents: two copies of a note embed once).
        let vectors = index.vectors()?;
        let have = vectors.as_ref().map(|set| set.hashes());
        let live = index.live_hashes()?;
        let needs_embedding =
            live.iter().filter(|hash| have.as_ref().is_none_or(|have| !have.contains(*hash))).count() as u32;
        let (vectors, embed_model, chunk_strategy) = match &vectors {
            None => (0, None, Default::default()),
            Some(set) => (set.manifest.rows(), Some(set.manifest.model.clone()), set.manifest.chunk_strategy),
        };
        let newest_document = index.catalog()?.iter().map(|e| e.record.modified_ms).max();
        let (mut with_metadata, mut invalid_metadata) = (0, 0);
        for entry in index.catalog()? {
            let extraction = index.metadata(entry.address)?;
            with_metadata += u32::from(!extraction.metadata.is_empty());
            invalid_metadata += u32::from(extraction.error.is_some());
        }
        Ok(IndexStatus {
            with_metadata,
            invalid_metadata,
            newest_document,
            total_documents: total,
            needs_embedding,
            has_vector_index: vectors > 0,
            vectors,
            embed_model,
            chunk_strategy,
            index_bytes: index.size_bytes(),
            segments: index.segments.len() as u32,
            generation: index.manifest.generation,
            global_context: config.global_context.clone(),
            collections,
            contexts: super::manage::list_contexts(&config),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::MemorySource;

    #[test]
    fn slicing_and_numbering() {
        let body = "a\nb\nc\n";
        let some = |s: &str| Some(s.to_string());
        assert_eq!(slice_lines(body, None, None, true), some("1: a\n2: b\n3: c\n4: "));
        assert_eq!(slice_lines(body, Some(2), Some(1), true), some("2: b"));
        assert_eq!(slice_lines(body, Some(0), Some(1), false), some("a"));
        assert_eq!(slice_lines(body, Some(4), None, true), some("4: "), "the text after a final newline is a line");
        assert_eq!(slice_lines(body, Some(5), None, true), None, "past the end: no invented line");
        assert_eq!(slice_lines(body, Some(99), None, true), None);
        assert_eq!(slice_lines(body, Some(2), Some(0), true), None, "zero lines");
        assert_eq!(slice_lines(body, Some(u32::MAX), Some(u32::MAX), false), None, "no overflow");
        assert_eq!(slice_lines(body, Some(2), Some(u32::MAX), false), some("b\nc\n"));
        assert_eq!(truncate_lines(body, Some(0), true), "[... truncated 3 more lines]");
        assert_eq!(truncate_lines("", Some(0), true), "");
        assert_eq!(truncate_lines("a\nb", Some(0), true), "[... truncated 2 more lines]");
        assert_eq!(truncate_lines("\n", Some(0), true), "[... truncated 1 more lines]", "one empty line");
        assert_eq!(truncate_lines(body, Some(2), true), "1: a\n2: b\n3: \n4: [... truncated 2 more lines]");
        assert_eq!(truncate_lines(body, Some(9), false), body);
        assert_eq!(too_large(12345, 5000), "File too large (12KB > 5KB)");
        assert_eq!(too_large(312, 1), "File too large (312 B > 1 B)");
        assert_eq!(too_large(3000, 1023), "File too large (3KB > 1023 B)");
    }

    /// Past the total, entries are listed with the reason and no body; the
    /// bodies held stay within it, whatever the per-file limit allows.
    #[test]
    fn multi_get_holds_at_most_its_total() {
        let mut notes = MemorySource::new();
        for i in 0..10 {
            notes.insert("/notes", &format!("n{i}.md"), format!("# Note {i}\n\n{}\n", "walrus ".repeat(150)), 0);
        }
        let engine = crate::engine::indexed_in_memory(notes, &[("/notes", "notes")]);
        let request =
            MultiGetRequest { pattern: "notes/*.md".into(), max_lines: None, max_bytes: 1 << 20, line_numbers: false };
        let result = engine.multi_get_within(&request, 3_000).unwrap();
        assert_eq!(result.entries.len(), 10, "every match is listed");
        let with_body: Vec<_> = result.entries.iter().filter(|e| e.skipped.is_none()).collect();
        assert_eq!(with_body.len(), 2, "two bodies of about 1 KB fit in 3,000 bytes");
        let held: usize = with_body.iter().map(|e| e.doc.body.len()).sum();
        assert!(held <= 3_000, "{held}");
        let skipped = result.entries[9].skipped.as_deref().unwrap();
        assert!(skipped.starts_with("Result too large") && skipped.contains("ask for fewer files"), "{skipped}");
        assert!(result.entries[9].doc.body.is_empty());
        assert!(engine.multi_get(&request).unwrap().entries.iter().all(|e| e.skipped.is_none()));
    }

    /// A comma list resolves each name by lookup: 30,000 names over 3,000
    /// notes (paths, suffixes, `qmd://` paths, docids, misses) in one
    /// pass, where each name scanned the catalog three times.
    #[test]
    fn long_name_lists_resolve_by_lookup() {
        let mut notes = MemorySource::new();
        for i in 0..3000 {
            notes.insert("/notes", &format!("d{}/n{i}.md", i % 10), format!("# {i}\n"), 0);
        }
        notes.insert("/notes", "a/same.md", "# a\n", 0);
        notes.insert("/notes", "b/same.md", "# b\n", 0);
        let engine = crate::engine::indexed_in_memory(notes, &[("/notes", "notes")]);
        let get = |pattern: String| {
            engine
                .multi_get(&MultiGetRequest { pattern, max_lines: None, max_bytes: 1 << 20, line_numbers: false })
                .unwrap()
        };
        let docid = get("d3/n3.md,d4/n4.md".into()).entries[0].doc.docid.clone();
        let names: Vec<String> = (0..30_000)
            .map(|k| {
                let i = k % 3000;
                match (k / 3000) % 5 {
                    0 => format!("n{i}.md"),
                    1 => format!("d{}/n{i}.md", i % 10),
                    2 => format!("qmd://notes/d{}/n{i}.md", i % 10),
                    3 => format!("#{docid}"),
                    _ => format!("missing{k}.md"),
                }
            })
            .collect();
        let started = std::time::Instant::now();
        let result = get(format!("{},same.md", names.join(",")));
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
        assert_eq!(result.entries.len(), 3000, "each note once");
        assert_eq!(result.entries[3].doc.path, "d3/n3.md", "in the list's order");
        assert_eq!(result.errors.len(), 6001, "{:?}", &result.errors[..3]);
        assert!(result.errors[0].starts_with("File not found: missing12000.md"), "{}", result.errors[0]);
        let ambiguous = result.errors.last().unwrap();
        assert!(
            ambiguous.starts_with("Ambiguous path same.md: qmd://notes/a/same.md, qmd://notes/b/same.md"),
            "{ambiguous}"
        );
    }
}
