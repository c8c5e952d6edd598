//! tree-sitter's memory, counted per thread, so a parse can be stopped
//! when it holds more than its source can justify (error recovery on an
//! ambiguous input such as 800 KB of TypeScript `a<` grows its stack
//! versions to ~1.3 KB a byte of source, where real files peak at ~230).
//!
//! tree-sitter takes its allocator as four C functions
//! ([`tree_sitter::set_allocator`]); these put each block's size in a
//! header before it (so `free` knows what it gives back) and keep a count
//! of the live bytes the current thread allocated. A parse and everything
//! it makes stay on the thread that started it (the chunker's `code` module), so the
//! count is that parse's, whatever other threads parse at the same time.

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, handle_alloc_error, realloc};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Once;

/// Bytes before each block: its payload size, keeping the 16-byte
/// alignment C's `malloc` gives.
const HEADER: usize = 16;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most [`LIVE`] has been since [`reset_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Installs the counting allocator, once, before any tree-sitter object
/// exists: every tree-sitter call of this crate goes through
/// the chunker's `code` module, which calls this first.
pub fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: the four functions are one family (below); `Once` runs
        // this before any parser, tree or query of this process exists, as
        // `set_allocator` requires.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: counted_malloc,
                calloc: counted_calloc,
                realloc: counted_realloc,
                free: counted_free,
            }))
        };
    });
}

/// Bytes tree-sitter holds that this thread allocated.
pub fn live_bytes() -> usize {
    LIVE.get().max(0) as usize
}

/// The most this thread's tree-sitter memory has been since the last
/// call (the tests' bound on a parse's memory).
#[cfg(test)]
pub fn reset_peak() -> usize {
    let peak = PEAK.get().max(0) as usize;
    PEAK.set(LIVE.get());
    peak
}

fn charge(bytes: isize) {
    let live = LIVE.get().wrapping_add(bytes);
    LIVE.set(live);
    PEAK.set(PEAK.get().max(live));
}

fn layout(size: usize) -> Layout {
    // A size no allocation can have is refused as an allocation failure.
    match size.checked_add(HEADER).and_then(|total| Layout::from_size_align(total, HEADER).ok()) {
        Some(layout) => layout,
        None => handle_alloc_error(Layout::new::<[u8; HEADER]>()),
    }
}

/// The block's payload after its header (`size` written there).
unsafe fn payload(block: *mut u8, size: usize) -> *mut c_void {
    if block.is_null() {
        handle_alloc_error(layout(size)); // tree-sitter needs memory or nothing
    }
    charge(size as isize);
    // SAFETY: `block` holds HEADER + size bytes, aligned to HEADER.
    unsafe {
        block.cast::<usize>().write(size);
        block.add(HEADER).cast()
    }
}

/// A payload's block start and size.
unsafe fn block_of(ptr: *mut c_void) -> (*mut u8, usize) {
    // SAFETY: `ptr` came from `payload`, HEADER bytes into its block.
    unsafe {
        let block = ptr.cast::<u8>().sub(HEADER);
        (block, block.cast::<usize>().read())
    }
}

unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    // SAFETY: a fresh block of the layout `payload` expects.
    unsafe { payload(alloc(layout(size)), size) }
}

unsafe extern "C" fn counted_calloc(count: usize, size: usize) -> *mut c_void {
    let Some(size) = count.checked_mul(size) else { handle_alloc_error(Layout::new::<[u8; HEADER]>()) };
    // SAFETY: as `counted_malloc`, zeroed.
    unsafe { payload(alloc_zeroed(layout(size)), size) }
}

unsafe extern "C" fn counted_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        // SAFETY: realloc of nothing is malloc.
        return unsafe { counted_malloc(size) };
    }
    // SAFETY: `ptr` is a live payload of this allocator; its block is
    // resized to the new payload's layout (same alignment).
    unsafe {
        let (block, old) = block_of(ptr);
        charge(-(old as isize));
        payload(realloc(block, layout(old), layout(size).size()), size)
    }
}

unsafe extern "C" fn counted_free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` is a live payload of this allocator.
    unsafe {
        let (block, size) = block_of(ptr);
        charge(-(size as isize));
        dealloc(block, layout(size));
    }
}
