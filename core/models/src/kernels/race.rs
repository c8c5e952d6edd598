//! Picking the faster of kernels that give the same results, by timing
//! them on the products the engine actually runs. The page's relaxed-SIMD
//! module needs it: V8 lowers relaxed SIMD's 8-bit dot product to one
//! `vpdpbusd` where the CPU has AVX-VNNI but to a five-instruction
//! `pmaddubsw` sequence elsewhere, where the product split in its two
//! steps is faster, so which form of the Q8_0 kernel wins is a property
//! of the CPU the page runs on. The products themselves are the trial,
//! not a synthetic product raced at start-up, which until 2026-11-30
//! measured something other than the real products' speed (README, *the
//! relaxed module*: V8's code for the relaxed kernel was fragile then,
//! spilling an unrolled loop's sums). Core has no clock of its own on
//! wasm: the page installs one.

use std::sync::{Mutex, OnceLock};

/// Milliseconds since some fixed start, fine enough to time a run of a
/// few milliseconds (the page's `performance.now()`).
pub type Clock = fn() -> f64;

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// Lets the kernels time themselves; the first clock installed stays.
pub fn install_clock(clock: Clock) {
    let _ = CLOCK.set(clock);
}

/// Whether trials run here (a clock is installed): until one decides,
/// the kernel in use is not yet the one that will stay.
pub(super) fn trials_run() -> bool {
    CLOCK.get().is_some()
}

/// Timed runs of each candidate on a shape before that shape counts. The
/// best run counts, so runs on V8's baseline compiler (a wasm function
/// starts there) do not decide.
const RUNS: usize = 3;
/// Shapes every candidate has run [`RUNS`] times before the trial
/// decides (MiniLM's products have three: 384 × 384, 1536 × 384, 384 ×
/// 1536), so one matrix's quirks do not decide for all.
const SHAPES: usize = 2;
/// A model with a single shape decides after this many runs of it.
const RUNS_ONE_SHAPE: usize = 3 * RUNS;

/// A trial between two kernels that give the same results: products take
/// turns on them, shape by shape, until [`SHAPES`] shapes have been timed
/// on both; the one faster on those shapes (the geometric mean of the
/// ratios of best times per unit of work) runs every product after.
pub(super) struct Trial {
    state: Mutex<TrialState>,
}

struct TrialState {
    shapes: Vec<ShapeRuns>,
    winner: Option<usize>,
}

/// One shape's runs: count and best time per unit of work, per candidate.
struct ShapeRuns {
    shape: (usize, usize),
    runs: [usize; 2],
    best: [f64; 2],
}

impl Trial {
    pub const fn new() -> Trial {
        Trial { state: Mutex::new(TrialState { shapes: Vec::new(), winner: None }) }
    }

    /// The candidate that won, once the trial has decided.
    pub fn winner(&self) -> Option<usize> {
        self.lock().winner
    }

    /// Runs a product of `shape` with `units` of work (its activation
    /// rows) on a candidate (`run` takes its index): the winner once
    /// decided, candidate 0 where no clock is installed (natively, under
    /// wasmtime), else the one whose turn it is on this shape, timed.
    pub fn run(&self, shape: (usize, usize), units: usize, run: impl FnOnce(usize)) {
        match CLOCK.get() {
            Some(clock) => self.run_on(&mut || clock(), shape, units, run),
            None => run(self.winner().unwrap_or(0)),
        }
    }

    fn run_on(&self, clock: &mut dyn FnMut() -> f64, shape: (usize, usize), units: usize, run: impl FnOnce(usize)) {
        let candidate = {
            let mut state = self.lock();
            if let Some(winner) = state.winner {
                drop(state);
                return run(winner);
            }
            state.turn(shape)
        };
        let started = clock();
        run(candidate);
        let per_unit = (clock() - started) / units.max(1) as f64;
        self.lock().record(shape, candidate, per_unit);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TrialState> {
        // A panic while holding it leaves counts, never a broken invariant.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TrialState {
    /// The candidate with fewer runs on `shape` (the first on a tie).
    fn turn(&mut self, shape: (usize, usize)) -> usize {
        let runs = self.shape(shape).runs;
        usize::from(runs[1] < runs[0])
    }

    fn shape(&mut self, shape: (usize, usize)) -> &mut ShapeRuns {
        let at = match self.shapes.iter().position(|s| s.shape == shape) {
            Some(at) => at,
            None => {
                self.shapes.push(ShapeRuns { shape, runs: [0; 2], best: [f64::INFINITY; 2] });
                self.shapes.len() - 1
            }
        };
        &mut self.shapes[at]
    }

    fn record(&mut self, shape: (usize, usize), candidate: usize, per_unit: f64) {
        let runs = self.shape(shape);
        runs.runs[candidate] += 1;
        // `f64::min` passes a NaN over: a clock that reads NaN leaves the
        // best time infinite, and the default wins.
        runs.best[candidate] = runs.best[candidate].min(per_unit);
        let timed: Vec<&ShapeRuns> = self.shapes.iter().filter(|s| s.runs.iter().all(|&r| r >= RUNS)).collect();
        let one_shape_done = self.shapes.iter().any(|s| s.runs.iter().all(|&r| r >= RUNS_ONE_SHAPE));
        if timed.len() >= SHAPES || one_shape_done {
            // Σ ln(best₀ / best₁) > 0: candidate 1 is faster on the whole.
            let log_ratio: f64 = timed.iter().map(|s| (s.best[0] / s.best[1]).ln()).sum();
            self.winner = Some(usize::from(log_ratio > 0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Products of `shapes` in turn (as a model's layers run them) until
    /// the trial decides, candidate `c` taking `cost(c, shape, run)` ms a
    /// row; the winner and how many products ran before it was known.
    fn trial(shapes: &[(usize, usize)], cost: impl Fn(usize, (usize, usize), usize) -> f64) -> (usize, usize) {
        let trial = Trial::new();
        let now = Cell::new(0.0);
        let runs = Cell::new([0usize; 2]);
        let mut products = 0;
        while trial.winner().is_none() {
            let shape = shapes[products % shapes.len()];
            trial.run_on(&mut || now.get(), shape, 10, |c| {
                let mut counts = runs.get();
                now.set(now.get() + 10.0 * cost(c, shape, counts[c]));
                counts[c] += 1;
                runs.set(counts);
            });
            products += 1;
            assert!(products < 1000, "the trial never decided");
        }
        (trial.winner().unwrap(), products)
    }

    #[test]
    fn the_faster_candidate_wins_whatever_its_first_runs_took() {
        let shapes = [(384, 384), (1536, 384), (384, 1536)];
        // Candidate 1 runs on baseline code for its first runs (slow), then
        // faster than candidate 0 ever does.
        let (winner, products) = trial(&shapes, |c, _, run| {
            if c == 0 {
                3.0
            } else if run < 2 {
                9.0
            } else {
                2.0
            }
        });
        assert_eq!(winner, 1);
        // Each shape takes turns on both: two shapes timed three times each.
        assert!(products <= 2 * RUNS * shapes.len() + shapes.len(), "{products} products");
        assert_eq!(trial(&shapes, |c, _, _| if c == 0 { 2.0 } else { 3.0 }).0, 0);
        // A tie keeps the default.
        assert_eq!(trial(&shapes, |_, _, _| 2.0).0, 0);
    }

    #[test]
    fn shapes_are_compared_with_themselves() {
        // The large shape costs more a row on both; candidate 1 is faster on
        // each. Were rows of different shapes compared, the turns could
        // give candidate 1 the large shape more often and lose it the trial.
        let shapes = [(384, 384), (1536, 384)];
        let cost = |c: usize, (n, _): (usize, usize), _| n as f64 * if c == 0 { 1.0 } else { 0.9 };
        assert_eq!(trial(&shapes, cost).0, 1);
        // Faster on one shape by a little, slower on the other by a lot.
        let cost = |c: usize, (n, _): (usize, usize), _| match (c, n) {
            (1, 384) => 0.95,
            (1, _) => 2.0,
            _ => 1.0,
        };
        assert_eq!(trial(&shapes, cost).0, 0);
    }

    #[test]
    fn a_model_of_one_shape_decides_too() {
        assert_eq!(trial(&[(64, 64)], |c, _, _| if c == 0 { 2.0 } else { 1.0 }).0, 1);
    }

    #[test]
    fn a_clock_that_reads_nan_keeps_the_default() {
        let trial = Trial::new();
        for _ in 0..4 * RUNS_ONE_SHAPE {
            trial.run_on(&mut || f64::NAN, (8, 8), 1, |_| {});
        }
        assert_eq!(trial.winner(), Some(0));
    }

    #[test]
    fn without_a_clock_the_default_runs_untimed() {
        if CLOCK.get().is_some() {
            return; // another test of this binary installed one
        }
        let trial = Trial::new();
        let mut ran = None;
        trial.run((8, 8), 1, |c| ran = Some(c));
        assert_eq!(ran, Some(0));
        assert_eq!(trial.winner(), None);
    }
}
