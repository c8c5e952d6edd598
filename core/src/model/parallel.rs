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
