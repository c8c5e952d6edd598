/*!
The keyword engine of a static site's search box, built for
`wasm32-unknown-unknown` with no bindings generator: a handful of C-ABI
exports that `www/site/qmd-search.js` calls. The page does all I/O (it
fetches what [`needs`] names); this module decides and scores.

Calling convention: the page copies each input into a buffer from
[`qmd_alloc`] and passes `(pointer, length)`; the export takes the buffer
back and frees it. Every call returns 0 on success or 1 on error, and leaves
its text result (or the error message) in the output buffer, read with
[`qmd_out_ptr`] / [`qmd_out_len`].
*/

use std::cell::RefCell;

use qmd_core::site::{SemanticIndex, SiteIndex, excerpts, fuse};

mod wire;

thread_local! {
    static INDEX: RefCell<Option<SiteIndex>> = const { RefCell::new(None) };
    static SEMANTIC: RefCell<Option<SemanticIndex>> = const { RefCell::new(None) };
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Takes back a buffer from [`qmd_alloc`].
///
/// # Safety
/// `ptr`/`len` must come from one `qmd_alloc(len)` call, not yet passed back.
unsafe fn take(ptr: *mut u8, len: usize) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: the caller passes a box of exactly `len` bytes that qmd_alloc leaked.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }.into_vec()
}

/// Takes back a buffer holding text; invalid UTF-8 is replaced, not trusted.
///
/// # Safety
/// As [`take`].
unsafe fn take_text(ptr: *mut u8, len: usize) -> String {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { take(ptr, len) };
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Stores a call's outcome in the output buffer; returns the status code.
fn finish(result: Result<String, String>) -> u32 {
    let (code, text) = match result {
        Ok(text) => (0, text),
        Err(message) => (1, message),
    };
    OUT.with(|out| *out.borrow_mut() = text.into_bytes());
    code
}

fn with_index<T>(f: impl FnOnce(&mut SiteIndex) -> Result<T, String>) -> Result<T, String> {
    INDEX.with(|cell| match cell.borrow_mut().as_mut() {
        Some(index) => f(index),
        None => Err("the search index is not open".to_string()),
    })
}

/// A zeroed buffer of `len` bytes for the page to fill.
#[unsafe(no_mangle)]
pub extern "C" fn qmd_alloc(len: usize) -> *mut u8 {
    if len == 0 {
        return std::ptr::NonNull::dangling().as_ptr();
    }
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast()
}

#[unsafe(no_mangle)]
pub extern "C" fn qmd_out_ptr() -> *const u8 {
    OUT.with(|out| out.borrow().as_ptr())
}

#[unsafe(no_mangle)]
pub extern "C" fn qmd_out_len() -> usize {
    OUT.with(|out| out.borrow().len())
}

/// Opens the meta file (decompressed). Output: the document count.
///
/// # Safety
/// `(ptr, len)` from [`qmd_alloc`].
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
/// `(ptr, len)` from [`qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_needs(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    finish(with_index(|index| Ok(index.needs(&query).join("\n"))))
}

/// Adds a fetched file (decompressed) under the name a `needs` call gave.
///
/// # Safety
/// Both pairs from [`qmd_alloc`].
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
/// `(ptr, len)` from [`qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_open(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let meta = unsafe { take(ptr, len) };
    finish(SemanticIndex::open(&meta).map_err(|e| e.to_string()).map(|sem| {
        SEMANTIC.with(|cell| *cell.borrow_mut() = Some(sem));
        String::new()
    }))
}

/// Semantic-tier files the query needs next. Output: one name per line;
/// call again after adding them until it names none.
///
/// # Safety
/// `(ptr, len)` from [`qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_needs(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    finish(SEMANTIC.with(|cell| match cell.borrow().as_ref() {
        Some(sem) => Ok(sem.needs(&query).join("\n")),
        None => Err("the semantic tier is not open".to_string()),
    }))
}

/// Semantic results alone. Output: `doc<TAB>cosine` lines, best first.
///
/// # Safety
/// `(ptr, len)` from [`qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_semantic_search(ptr: *mut u8, len: usize, limit: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    let query = unsafe { take_text(ptr, len) };
    finish(SEMANTIC.with(|cell| match cell.borrow().as_ref() {
        Some(sem) => Ok(
            sem.search(&query, limit as usize).iter().map(|(d, s)| format!("{d}\t{s}")).collect::<Vec<_>>().join("\n"),
        ),
        None => Err("the semantic tier is not open".to_string()),
    }))
}

/// Searches. `filters` is `key=value` lines; `tree` a metadata filter as
/// JSON (empty for none); `semantic` 1 fuses the semantic tier's results
/// with the keyword ones (RRF). Output: one hit per line,
/// `fragment<TAB>score<TAB>doc`.
///
/// # Safety
/// Every pair from [`qmd_alloc`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // the C ABI passes each buffer as two numbers
pub unsafe extern "C" fn qmd_search(
    ptr: *mut u8,
    len: usize,
    limit: u32,
    fptr: *mut u8,
    flen: usize,
    mptr: *mut u8,
    mlen: usize,
    semantic: u32,
) -> u32 {
    // SAFETY: forwarded from the caller.
    let (query, filters, tree) = unsafe { (take_text(ptr, len), take_text(fptr, flen), take_text(mptr, mlen)) };
    let filters = wire::parse_filters(&filters);
    let limit = limit as usize;
    finish(wire::parse_metadata_filter(&tree).and_then(|filter| {
        with_index(|index| {
            if semantic == 0 {
                let hits = index.search(&query, limit, &filters, filter.as_ref()).map_err(|e| e.message)?;
                return Ok(wire::hits(&hits));
            }
            let pool = limit.max(50);
            let lex = index.search(&query, pool, &filters, filter.as_ref()).map_err(|e| e.message)?;
            let allowed = index.allowed(&filters, filter.as_ref()).map_err(|e| e.message)?;
            let semantic: Vec<(u32, f32)> = SEMANTIC
                .with(|cell| cell.borrow().as_ref().map(|sem| sem.search(&query, pool)))
                .unwrap_or_default()
                .into_iter()
                .filter(|(doc, _)| allowed.as_ref().is_none_or(|a| a.contains(doc)))
                .collect();
            Ok(wire::hits(&fuse(&lex, &semantic, index.fragments(), limit)))
        })
    }))
}

/// The metadata file a metadata filter needs, when not loaded yet. Output:
/// its name, or nothing.
#[unsafe(no_mangle)]
pub extern "C" fn qmd_metadata_needs() -> u32 {
    finish(with_index(|index| Ok(index.metadata_needed().unwrap_or_default())))
}

/// Filter keys and values. Output: `key<TAB>value<TAB>count` lines.
#[unsafe(no_mangle)]
pub extern "C" fn qmd_filters() -> u32 {
    finish(with_index(|index| Ok(wire::filters(&index.filters()))))
}

/// Excerpts of a page's text: the page's, then its sections'. `at` holds
/// the sections' start offsets as little-endian u32s. Output: see
/// [`wire::excerpts`].
///
/// # Safety
/// All three pairs from [`qmd_alloc`].
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
