//! The calling convention of the site's wasm modules (the keyword engine
//! and the filter module share it, so the page has one way to call both).
//!
//! The page copies each input into a buffer from [`qmd_alloc`] and passes
//! `(pointer, length)`; the export takes the buffer back and frees it.
//! Every call returns 0 on success or 1 on error, and leaves its result
//! (or the error message) in the output buffer, read with
//! [`qmd_out_ptr`] / [`qmd_out_len`].

use std::cell::RefCell;

thread_local! {
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Takes back a buffer from [`qmd_alloc`].
///
/// # Safety
/// `ptr`/`len` must come from one `qmd_alloc(len)` call, not yet passed back.
pub unsafe fn take(ptr: *mut u8, len: usize) -> Vec<u8> {
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
pub unsafe fn take_text(ptr: *mut u8, len: usize) -> String {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { take(ptr, len) };
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Stores a call's outcome in the output buffer; returns the status code.
pub fn finish(result: Result<impl Into<Vec<u8>>, String>) -> u32 {
    let (code, bytes) = match result {
        Ok(out) => (0, out.into()),
        Err(message) => (1, message.into_bytes()),
    };
    OUT.with(|out| *out.borrow_mut() = bytes);
    code
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
