//! Picking the faster of kernels that give the same results, by timing
//! them once on this CPU. The page's relaxed-SIMD module needs it: V8
//! lowers relaxed SIMD's 8-bit dot product to one `vpdpbusd` where the CPU
//! has AVX-VNNI but to a `pmaddubsw` sequence elsewhere, and on an AMD
//! EPYC (AVX2) its Q8_0 kernel embedded MiniLM at 6.2 texts/s against the
//! simd128 kernel's 9.2, where on an Intel Xeon it was 1.2× faster. Which
//! wins is a property of the CPU the page runs on, so it is measured
//! there. Core has no clock of its own on wasm: the page installs one.

use std::sync::OnceLock;

/// Milliseconds since some fixed start, fine enough to time a run of a
/// few milliseconds (the page's `performance.now()`).
pub type Clock = fn() -> f64;

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// Rounds of the race: the best time of each candidate counts, so the
/// rounds run while the engine still compiles a kernel's optimised code
/// (V8 starts a wasm function on its baseline compiler) do not.
const ROUNDS: usize = 8;

/// Lets the kernels time themselves; the first clock installed stays.
pub fn install_clock(clock: Clock) {
    let _ = CLOCK.set(clock);
}

/// The index of the fastest of `candidates` runs of `run` (given the
/// candidate's index) on the installed clock; `None` where none is
/// installed (natively, and under wasmtime), which keeps the default.
pub(super) fn fastest(candidates: usize, run: impl FnMut(usize)) -> Option<usize> {
    let clock = *CLOCK.get()?;
    Some(fastest_on(&mut || clock(), candidates, run))
}

/// [`fastest`] on `clock`: the candidates run in turn, [`ROUNDS`] times
/// each, and the one with the least best time wins (the first on a tie).
fn fastest_on(clock: &mut dyn FnMut() -> f64, candidates: usize, mut run: impl FnMut(usize)) -> usize {
    let mut best = vec![f64::INFINITY; candidates];
    for _ in 0..ROUNDS {
        for (candidate, best) in best.iter_mut().enumerate() {
            let started = clock();
            run(candidate);
            *best = best.min(clock() - started);
        }
    }
    (0..candidates).fold(0, |winner, c| if best[c] < best[winner] { c } else { winner })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A clock that the candidates move: candidate `c`'s run takes
    /// `costs[c][round]` ms.
    fn race(costs: &[[f64; ROUNDS]]) -> usize {
        let now = Cell::new(0.0);
        let round = Cell::new(vec![0; costs.len()]);
        fastest_on(&mut || now.get(), costs.len(), |c| {
            let mut rounds = round.take();
            now.set(now.get() + costs[c][rounds[c]]);
            rounds[c] += 1;
            round.set(rounds);
        })
    }

    #[test]
    fn the_least_best_time_wins_whatever_the_first_rounds_took() {
        // The second candidate runs on baseline code for its first rounds
        // (slow), then faster than the first ever does.
        let first = [3.0; ROUNDS];
        let mut second = [9.0; ROUNDS];
        second[ROUNDS - 2..].fill(2.0);
        assert_eq!(race(&[first, second]), 1);
        assert_eq!(race(&[second, first]), 0);
        // A tie keeps the first: the default.
        assert_eq!(race(&[[2.0; ROUNDS], [2.0; ROUNDS]]), 0);
        assert_eq!(race(&[[2.0; ROUNDS], [2.0; ROUNDS], [1.0; ROUNDS]]), 2);
    }

    #[test]
    fn a_clock_that_reads_nan_keeps_the_default() {
        // `f64::min` passes a NaN over: every best time stays infinite.
        assert_eq!(fastest_on(&mut || f64::NAN, 2, |_| {}), 0);
    }

    #[test]
    fn without_a_clock_nothing_is_run_and_the_default_stays() {
        if CLOCK.get().is_some() {
            return; // another test of this binary installed one
        }
        let mut ran = false;
        assert_eq!(fastest(2, |_| ran = true), None);
        assert!(!ran);
    }
}
