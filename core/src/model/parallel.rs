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

/// Runs `f` on one of the pool's threads, so that the parallel steps
/// inside it start from a worker: the caller then takes its share of each
/// step and the other workers steal the rest, where a call from outside
/// the pool hands every step over and sleeps until it is done (two thread
/// switches a step; a decoded token takes hundreds of steps).
pub fn on_workers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    #[cfg(all(feature = "models-threads", not(target_family = "wasm")))]
    return rayon::scope(|_| f());
    #[cfg(not(all(feature = "models-threads", not(target_family = "wasm"))))]
    f()
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
