//! Work spread over the machine's cores where the build has threads
//! (native with `threads`; the page's threaded module, `web-threads`
//! built with wasm atomics, its pool Web Workers sharing one memory), one
//! after another where it has not (the other wasm builds).
//!
//! A task on the pool runs under its caller's kernel settings
//! ([`crate::kernels::Settings`]): they live in thread-locals, and a pass
//! started in [`crate::kernels::for_embedding`] keeps its products'
//! 7-bit activations on whichever thread takes each piece.

pub use pool::{chunks_mut, map, on_workers, workers};

/// Elements per task of the element-wise maps over a pass's activations:
/// big enough to amortise a task, small enough to spread a pass over the
/// cores.
pub const MAP_CHUNK: usize = 64 * 1024;

#[cfg(any(
    all(feature = "threads", not(target_family = "wasm")),
    all(feature = "web-threads", target_feature = "atomics")
))]
mod pool {
    use rayon::prelude::*;

    use crate::error::Result;
    use crate::kernels::settings::Settings;

    /// How many calls of [`map`] can run at once: the rayon pool's threads
    /// (`RAYON_NUM_THREADS`, else one per core; the page's pool as it was
    /// started).
    pub fn workers() -> usize {
        rayon::current_num_threads()
    }

    /// Runs `f` on one of the pool's threads, so that the parallel steps
    /// inside it start from a worker: the caller then takes its share of each
    /// step and the other workers steal the rest, where a call from outside
    /// the pool hands every step over and sleeps until it is done (two thread
    /// switches a step; a decoded token takes hundreds of steps).
    pub fn on_workers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        let settings = Settings::current();
        #[cfg(target_family = "wasm")]
        return kept_awake(move || settings.apply(f));
        #[cfg(not(target_family = "wasm"))]
        rayon::scope(|_| settings.apply(f))
    }

    /// `f` on the pool's first thread while every other thread of the pool
    /// waits for its steps awake. A Web Worker's rayon thread that finds
    /// no work falls asleep at once (wasm has no `yield_now` to spin on, so
    /// rayon's spinning before it sleeps takes no time), and each of a
    /// decoded token's hundreds of parallel steps then paid for waking it:
    /// two Workers decoded no faster than one. Here the others run rayon's
    /// pending jobs as they appear, spinning in between, until `f` is done
    /// or they have found nothing for a while ([`super::MAX_IDLE_SPINS`]).
    #[cfg(target_family = "wasm")]
    fn kept_awake<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, Ordering};

        let f = Mutex::new(Some(f));
        let done = AtomicBool::new(false);
        let mut results = rayon::broadcast(|context| {
            if context.index() != 0 {
                super::wait_awake(&done, super::MAX_IDLE_SPINS, || rayon::yield_now() == Some(rayon::Yield::Executed));
                return None;
            }
            let f = f.lock().unwrap_or_else(|e| e.into_inner()).take();
            // Set on unwind too, so the others stop.
            struct Done<'a>(&'a AtomicBool);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let _done = Done(&done);
            f.map(|f| f())
        });
        results.swap_remove(0).expect("the pool's first thread runs f")
    }

    /// `f` over `items`, results in input order; the first error wins.
    pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync + Send) -> Result<Vec<R>> {
        let settings = Settings::current();
        items.par_iter().map(|item| settings.apply(|| f(item))).collect()
    }

    /// `f(i, chunk)` for each `chunk_len` piece of `out` (the last may be
    /// shorter), spread over the cores like [`map`].
    pub fn chunks_mut<T: Send>(out: &mut [T], chunk_len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
        let settings = Settings::current();
        out.par_chunks_mut(chunk_len.max(1)).enumerate().for_each(|(i, c)| settings.apply(|| f(i, c)));
    }
}

/// How many times in a row a thread kept awake may find no work before it
/// goes back to rayon's own waiting (about 10 ms in the page): a decoded
/// token's steps follow each other within microseconds, so this bound
/// costs decoding nothing, and a thread never spins on without end (while
/// a long serial step runs, or should the step it waits for be held up
/// behind its own spin).
#[cfg_attr(not(all(feature = "web-threads", target_feature = "atomics")), allow(dead_code))]
const MAX_IDLE_SPINS: u32 = 1 << 17;

/// Whether a thread kept awake left because the work was done or because
/// it found none for too long.
#[cfg_attr(not(all(feature = "web-threads", target_feature = "atomics")), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    Done,
    GaveUp,
}

/// Runs `run_pending` (true when it ran a job) until `done` is set, or
/// until it has found nothing `max_idle` times in a row.
#[cfg_attr(not(all(feature = "web-threads", target_feature = "atomics")), allow(dead_code))]
fn wait_awake(done: &std::sync::atomic::AtomicBool, max_idle: u32, mut run_pending: impl FnMut() -> bool) -> Waited {
    let mut idle = 0;
    while !done.load(std::sync::atomic::Ordering::Acquire) {
        if run_pending() {
            idle = 0;
        } else if idle >= max_idle {
            return Waited::GaveUp;
        } else {
            idle += 1;
            std::hint::spin_loop();
        }
    }
    Waited::Done
}

#[cfg(not(any(
    all(feature = "threads", not(target_family = "wasm")),
    all(feature = "web-threads", target_feature = "atomics")
)))]
mod pool {
    use crate::error::Result;

    /// One: this build has no threads.
    pub fn workers() -> usize {
        1
    }

    /// `f`, here.
    pub fn on_workers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        f()
    }

    /// `f` over `items` in order; the first error wins.
    pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync + Send) -> Result<Vec<R>> {
        items.iter().map(f).collect()
    }

    /// `f(i, chunk)` for each `chunk_len` piece of `out` (the last may be
    /// shorter), in order.
    pub fn chunks_mut<T: Send>(out: &mut [T], chunk_len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
        out.chunks_mut(chunk_len.max(1)).enumerate().for_each(|(i, c)| f(i, c));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{Waited, wait_awake};

    #[test]
    fn a_thread_kept_awake_leaves_when_the_work_is_done() {
        let done = AtomicBool::new(false);
        let mut calls = 0;
        let waited = wait_awake(&done, 100, || {
            calls += 1;
            if calls == 50 {
                done.store(true, Ordering::Release);
            }
            false
        });
        assert_eq!(waited, Waited::Done);
        assert_eq!(calls, 50);
    }

    #[test]
    fn a_thread_kept_awake_gives_up_after_finding_no_work_too_long() {
        let done = AtomicBool::new(false);
        let mut calls = 0;
        assert_eq!(
            wait_awake(&done, 100, || {
                calls += 1;
                false
            }),
            Waited::GaveUp
        );
        assert_eq!(calls, 101, "the bound counts idle rounds in a row");
        // Work found resets the count: 3 × 80 idle rounds with a job between.
        let mut calls = 0;
        let waited = wait_awake(&done, 100, || {
            calls += 1;
            calls % 80 == 0 && calls <= 240
        });
        assert_eq!(waited, Waited::GaveUp);
        assert_eq!(calls, 240 + 101);
    }
}
