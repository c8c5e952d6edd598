//! Work spread over the machine's cores where the build has threads
//! (native, `models-threads`), one after another where it has not (wasm).

use crate::error::Result;

/// How many calls of [`map`] can run at once: the rayon pool's threads
/// (`RAYON_NUM_THREADS`, else one per core), or 1 without threads.
pub fn workers() -> usize {
    #[cfg(all(feature = "models-threads", not(target_family = "wasm")))]
    return rayon::current_num_threads();
    #[cfg(not(all(feature = "models-threads", not(target_family = "wasm"))))]
    1
}

/// `f` over `items`, results in input order; the first error wins.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync + Send) -> Result<Vec<R>> {
    #[cfg(all(feature = "models-threads", not(target_family = "wasm")))]
    {
        use rayon::prelude::*;
        items.par_iter().map(f).collect()
    }
    #[cfg(not(all(feature = "models-threads", not(target_family = "wasm"))))]
    items.iter().map(f).collect()
}

/// `f(i, chunk)` for each `chunk_len` piece of `out` (the last may be
/// shorter), spread over the cores like [`map`].
pub fn chunks_mut<T: Send>(out: &mut [T], chunk_len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let chunk_len = chunk_len.max(1);
    #[cfg(all(feature = "models-threads", not(target_family = "wasm")))]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c));
    }
    #[cfg(not(all(feature = "models-threads", not(target_family = "wasm"))))]
    out.chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c));
}
