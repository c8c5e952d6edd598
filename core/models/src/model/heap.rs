//! The C heap's policy for model passes. A pass allocates and frees
//! tensors of tens of megabytes; glibc serves blocks that large with fresh
//! `mmap`s and unmaps them on free, so every pass page-faulted its
//! activations in again (a tenth of CPU embedding time in `perf`). Keeping
//! them in the heap reuses the pages across passes.

/// Sets the policy once per process; a no-op off glibc.
pub fn keep_freed_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu", feature = "threads"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // Blocks up to 256 MiB come from the heap, and up to 1 GiB of
            // freed heap is kept for the next pass rather than returned.
            // SAFETY: mallopt only changes allocator parameters.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
            }
        });
    }
}
