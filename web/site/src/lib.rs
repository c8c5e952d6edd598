/*!
The keyword engine of a static site's search box, built for
`wasm32-unknown-unknown` with no bindings generator: a handful of C-ABI
exports that `www/site/qmd-search.js` calls ([`abi`] is the calling
convention). The page does all I/O (it fetches what [`qmd_needs`] names);
this module decides and scores.

Metadata filters are not here: their JSON parsing and matching live in the
filter module (`web/site/filter`), which the page loads only for a search
with a filter; it hands this module the passing pages. That keeps every
keyword search's download small.
*/

use std::cell::RefCell;

use qmd_core::site::{SemanticIndex, SiteIndex, excerpts, fuse};

pub mod abi;
mod wire;

use abi::{finish, take, take_text};

thread_local! {
    static INDEX: RefCell<Option<SiteIndex>> = const { RefCell::new(None) };
    static SEMANTIC: RefCell<Option<SemanticIndex>> = const { RefCell::new(None) };
}

/// Keyword hits a hybrid search fuses (at least; more when the limit is
/// higher), the first of which also choose semantic clusters to read.
const FUSED_POOL: usize = 50;

fn with_index<T>(f: impl FnOnce(&mut SiteIndex) -> Result<T, String>) -> Result<T, String> {
    INDEX.with(|cell| match cell.borrow_mut().as_mut() {
        Some(index) => f(index),
        None => Err("the search index is not open".to_string()),
    })
}

/// Opens the meta file (decompressed). Output: the document count.
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_open(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let meta = unsafe { take(ptr, len) };
    finish(SiteIndex::open(&meta).map_err(|e| e.message).map(|index| {
        let docs = index.docs();
        INDEX.with(|cell| *cell.borrow_mut() = Some(index));
        docs.to_string()
    }))
}

/// Files the query needs that are not loaded. Output: one name per line.
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_needs(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    finish(with_index(|index| Ok(index.needs(&query).map_err(|e| e.message)?.join("\n"))))
}

/// Adds a fetched file (decompressed) under the name a `needs` call gave.
///
/// # Safety
/// Both pairs from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_add_file(name_ptr: *mut u8, name_len: usize, ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let (name, bytes) = unsafe { (take_text(name_ptr, name_len), take(ptr, len)) };
    let semantic = SEMANTIC.with(|cell| cell.borrow().as_ref().is_some_and(|sem| sem.owns(&name)));
    if semantic {
        return finish(SEMANTIC.with(|cell| match cell.borrow_mut().as_mut() {
            Some(sem) => sem.add_file(&name, bytes).map(|_| String::new()).map_err(|e| e.to_string()),
            None => Err("the semantic tier is not open".to_string()),
        }));
    }
    finish(with_index(|index| index.add_file(&name, bytes).map(|()| String::new()).map_err(|e| e.message)))
}

/// Opens the semantic tier's meta file (decompressed).
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_open(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let meta = unsafe { take(ptr, len) };
    finish(SemanticIndex::open(&meta).map_err(|e| e.to_string()).map(|sem| {
        SEMANTIC.with(|cell| *cell.borrow_mut() = Some(sem));
        String::new()
    }))
}

/// Semantic-tier files the query needs next (its keyword shards loaded
/// first: the clusters of its best keyword hits are among them, unfiltered
/// ones, so a filter may leave one unread). Output: one name per line; call
/// again after adding them until it names none.
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_needs(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    let keyword_hits: Vec<u32> = with_index(|index| index.search(&query, FUSED_POOL, &[], None).map_err(|e| e.message))
        .map(|hits| hits.iter().map(|h| h.doc).collect())
        .unwrap_or_default();
    finish(SEMANTIC.with(|cell| match cell.borrow().as_ref() {
        Some(sem) => Ok(sem.needs(&query, &keyword_hits).join("\n")),
        None => Err("the semantic tier is not open".to_string()),
    }))
}

/// Semantic results alone. Output: `doc<TAB>cosine` lines, best first.
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_search(ptr: *mut u8, len: usize, limit: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    finish(SEMANTIC.with(|cell| {
        match cell.borrow().as_ref() {
            Some(sem) => Ok(sem
                .search(&query, limit as usize, &[])
                .iter()
                .map(|&(d, s)| format!("{d}\t{}", wire::score(f64::from(s))))
                .collect::<Vec<_>>()
                .join("\n")),
            None => Err("the semantic tier is not open".to_string()),
        }
    }))
}

/// Searches. `filters` is `key=value` lines; when `restricted` is 1,
/// `allowed` holds the pages a metadata filter passes (little-endian u32s,
/// from the filter module); `semantic` 1 fuses the semantic tier's results
/// with the keyword ones (by score, see `fuse`). Output: one hit per line,
/// `fragment<TAB>score<TAB>doc`.
///
/// # Safety
/// Every pair from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C ABI passes each buffer as two numbers
pub unsafe extern "C" fn qmd_search(
    ptr: *mut u8,
    len: usize,
    limit: u32,
    fptr: *mut u8,
    flen: usize,
    aptr: *mut u8,
    alen: usize,
    restricted: u32,
    semantic: u32,
) -> u32 {
    // SAFETY: forwarded from the caller.
    let (query, filters, allowed) = unsafe { (take_text(ptr, len), take_text(fptr, flen), take(aptr, alen)) };
    let filters = wire::parse_filters(&filters);
    let passing = (restricted != 0).then(|| wire::docs_from_bytes(&allowed));
    let passing = passing.as_deref();
    let limit = limit as usize;
    finish(with_index(|index| {
        if semantic == 0 {
            let hits = index.search(&query, limit, &filters, passing).map_err(|e| e.message)?;
            return Ok(wire::hits(&hits));
        }
        let pool = limit.max(FUSED_POOL);
        let lex = index.search(&query, pool, &filters, passing).map_err(|e| e.message)?;
        let allowed = index.allowed(&filters, passing);
        let keyword_hits: Vec<u32> = lex.iter().map(|h| h.doc).collect();
        let (semantic, weight) = SEMANTIC
            .with(|cell| cell.borrow().as_ref().map(|sem| (sem.search(&query, pool, &keyword_hits), sem.weight())))
            .unwrap_or_default();
        let semantic: Vec<(u32, f32)> =
            semantic.into_iter().filter(|(doc, _)| allowed.as_ref().is_none_or(|a| a.contains(doc))).collect();
        Ok(wire::hits(&fuse(&lex, &semantic, weight, index.fragments(), limit)))
    }))
}

/// The bundle's metadata file, which the filter module needs. Output: its
/// name, or nothing when no page has frontmatter.
#[unsafe(no_mangle)]
pub extern "C" fn qmd_metadata_file() -> u32 {
    finish(with_index(|index| Ok(index.metadata_file().unwrap_or_default())))
}

/// Filter keys and values with their page counts: of the whole site, or,
/// when `among` is 1, of the pages in `docs` (little-endian u32s: a
/// query's results, for facet counts). Output: `key<TAB>value<TAB>count`
/// lines.
///
/// # Safety
/// The pair from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_filters(ptr: *mut u8, len: usize, among: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    let docs = unsafe { take(ptr, len) };
    let docs = (among != 0).then(|| wire::docs_from_bytes(&docs));
    finish(with_index(|index| Ok(wire::filters(&index.filters(docs.as_deref())))))
}

/// Excerpts of a page's text: the page's, then its sections'. `at` holds
/// the sections' start offsets as little-endian u32s. Output: see
/// [`wire::excerpts`].
///
/// # Safety
/// All three pairs from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_excerpts(
    qptr: *mut u8,
    qlen: usize,
    tptr: *mut u8,
    tlen: usize,
    aptr: *mut u8,
    alen: usize,
    words: u32,
    sections: u32,
) -> u32 {
    // SAFETY: forwarded from the caller.
    let (query, text, at) = unsafe { (take_text(qptr, qlen), take_text(tptr, tlen), take(aptr, alen)) };
    let mut at: Vec<usize> =
        at.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize).collect();
    // Offsets must be ascending char boundaries inside the text.
    at.retain(|&a| text.is_char_boundary(a));
    at.sort_unstable();
    finish(Ok(wire::excerpts(&excerpts(&query, &text, &at, words as usize, sections as usize))))
}
