/*!
The static-site widget's metadata filters, a module of their own: JSON
parsing and the filter tree cost the keyword engine a fifth of its bytes,
and most searches have no filter. The page loads this module the first
time a search has one, opens the bundle's metadata file in it, and hands
the passing pages ([`qmd_metadata_passing`]) to the keyword engine's
`qmd_search`. Same calling convention as the keyword engine
(`web/site/src/abi.rs`).
*/

use std::cell::RefCell;

use qmd_core::metadata::Filter;
use qmd_core::site::SiteMetadata;

#[path = "../../src/abi.rs"]
mod abi;

use abi::{finish, take, take_text};

thread_local! {
    static METADATA: RefCell<Option<SiteMetadata>> = const { RefCell::new(None) };
}

/// Opens the bundle's metadata file `name` (decompressed) for a bundle of
/// `docs` pages; an empty name for a bundle without one (no page has keys).
///
/// # Safety
/// Both pairs from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_metadata_open(
    name_ptr: *mut u8,
    name_len: usize,
    ptr: *mut u8,
    len: usize,
    docs: u32,
) -> u32 {
    // SAFETY: forwarded from the caller.
    let (name, bytes) = unsafe { (take_text(name_ptr, name_len), take(ptr, len)) };
    let opened =
        if name.is_empty() { Ok(SiteMetadata::without_file(docs)) } else { SiteMetadata::open(&name, &bytes, docs) };
    finish(opened.map_err(|e| e.message).map(|metadata| {
        METADATA.with(|cell| *cell.borrow_mut() = Some(metadata));
        Vec::new()
    }))
}

/// The pages the filter tree `json` (qmd's `--filter` JSON) passes.
/// Output: their ordinals as little-endian u32s; errors are qmd's messages
/// (`Invalid metadata filter at $.value: …`).
///
/// # Safety
/// `(ptr, len)` from [`abi::qmd_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qmd_metadata_passing(ptr: *mut u8, len: usize) -> u32 {
    // SAFETY: forwarded from the caller.
    let json = unsafe { take_text(ptr, len) };
    finish(parse(&json).and_then(|filter| {
        METADATA.with(|cell| match cell.borrow().as_ref() {
            Some(metadata) => Ok(doc_bytes(&metadata.passing(&filter))),
            None => Err("the metadata file is not open".to_string()),
        })
    }))
}

/// Page ordinals as the keyword engine takes them: little-endian u32s.
fn doc_bytes(docs: &[u32]) -> Vec<u8> {
    docs.iter().flat_map(|d| d.to_le_bytes()).collect()
}

/// A filter tree from its JSON text.
fn parse(text: &str) -> Result<Filter, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("Invalid filter JSON: {e}"))?;
    Filter::parse(&json).map_err(|e| e.to_string())
}
