//! The element-wise arithmetic every CPU path shares, as branch-free
//! loops that vectorise: the exponential, softmax's reductions, GELU's
//! tanh form, rounding to even. A leaf: the relaxed-SIMD kernels, the
//! activation quantizers, the GGUF models' ops and the browser's burn
//! attention all build on it.

use super::multiversion::multiversion;

/// Lanes of the reductions below: eight partial maxima and sums, which
/// the compiler keeps in two simd128 registers.
const LANES: usize = 8;

multiversion! {
    /// `row` replaced by its softmax, every reduction in lanes.
    pub(crate) fn softmax_in_lanes(row: &mut [f32]) {
        let inverse = 1.0 / exp_shifted(row, max(row));
        row.iter_mut().for_each(|x| *x *= inverse);
    }
}

/// The largest value of `row`. A comparison, not `f32::max`: wasm has no
/// instruction with its NaN rules, so `max` became a call per score.
/// Eight running maxima rather than one: a single one is a chain of
/// dependent scalar compares, which was most of the softmax's time.
#[inline(always)]
fn max(row: &[f32]) -> f32 {
    let pick = |m: f32, x: f32| if x > m { x } else { m };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder().iter().fold(f32::NEG_INFINITY, |m, &x| pick(m, x));
    for chunk in chunks {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            *m = pick(*m, x);
        }
    }
    lanes.into_iter().fold(tail, pick)
}

/// Replaces each x of `row` by e^(x − max) and returns their sum, summed
/// in eight lanes for the reason [`max`] gives.
#[inline(always)]
fn exp_shifted(row: &mut [f32], max: f32) -> f32 {
    row.iter_mut().for_each(|x| *x = exp(*x - max));
    let mut lanes = [0.0; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (sum, x) in lanes.iter_mut().zip(chunk) {
            *sum += x;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// eˣ as Cephes' `expf` computes it (x = n·ln 2 + r, a degree-6
/// polynomial in r, 2ⁿ from the exponent bits), without its branches, so
/// a loop over it vectorises: within 2 ulp on [-87, 88], where f32's
/// normal range ends (beyond, the bounds' values).
// Inlined: a call per element keeps the loops around it (softmax, GELU,
// SiLU) from vectorising; out of line it was a tenth of a GGUF pass.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let x = x.clamp(EXP_DOMAIN.0, EXP_DOMAIN.1);
    // Nearest, not Cephes' floor(x·log₂e + ½): the same reduction to
    // |r| ≤ ln2/2 but branch-free (floorf is a libm call on baseline
    // x86-64, 7% of a GGUF embedding pass in perf).
    let n = round_to_even(x * std::f32::consts::LOG2_E);
    let r = x - n * LN2_HI - n * LN2_LO;
    let [first, rest @ ..] = EXP_POLYNOMIAL;
    let p = rest.iter().fold(first, |p, &c| p * r + c);
    let e = p * r * r + r + 1.0;
    e * f32::from_bits(((n as i32 + 127) << 23) as u32)
}

/// Where [`exp`] is computed; beyond, the bounds' values.
pub(crate) const EXP_DOMAIN: (f32, f32) = (-87.0, 88.0);
/// ln 2 in two parts, the first with few bits, so that `x − n·ln 2` loses
/// nothing to rounding.
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes' coefficients of `(eʳ − 1 − r) / r²`, highest degree first.
pub(crate) const EXP_POLYNOMIAL: [f32; 6] =
    [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5];

/// Nearest integer, ties to even (as SIMD rounding does): adding and
/// taking away 1.5·2²³ leaves no fraction bits for |x| < 2²².
/// Branch-free, so loops over it vectorise (`f32::round` and `floor` are
/// libm calls on baseline x86-64).
#[inline(always)]
pub(crate) fn round_to_even(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (x + MAGIC) - MAGIC
}

/// `√(2/π)` and the cube's coefficient of GELU's tanh form,
/// `0.5·v·(1 + tanh(√(2/π)·(v + 0.044715·v³)))`.
pub(crate) const GELU_TANH: (f32, f32) = (0.797_884_6, 0.044_715);

/// GELU's tanh form written as `v · e / (e + 1)` with `e = e^{2y}`
/// (`1 + tanh y = 2e / (e + 1)`): no `1 − 2/(e + 1)` to cancel for
/// negative v, and no overflow (`e` stops at e⁸⁸, so `e / (e + 1)` is 1).
#[inline(always)]
pub(crate) fn gelu_tanh(v: f32) -> f32 {
    let y = GELU_TANH.0 * v * (1.0 + GELU_TANH.1 * v * v);
    let e = exp(2.0 * y);
    v * (e / (e + 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_to_even_rounds_ties_to_even_and_keeps_integers() {
        for (x, want) in [(2.5, 2.0), (-2.5, -2.0), (3.5, 4.0), (0.49, 0.0), (-126.6, -127.0), (127.0, 127.0)] {
            assert_eq!(round_to_even(x), want, "{x}");
        }
    }

    /// Rows of every length around the lane count, against f64.
    #[test]
    fn softmax_matches_a_plain_one_at_every_length() {
        for len in [1, 7, 8, 9, 16, 23, 200] {
            let row: Vec<f32> = (0..len).map(|i| ((i * 53 % 29) as f32 - 14.0) / 3.0).collect();
            let top = row.iter().copied().fold(f64::NEG_INFINITY, |m, x| m.max(f64::from(x)));
            let total: f64 = row.iter().map(|&x| (f64::from(x) - top).exp()).sum();
            let mut ours = row.clone();
            softmax_in_lanes(&mut ours);
            for (x, y) in row.iter().zip(&ours) {
                let expected = (f64::from(*x) - top).exp() / total;
                assert!((f64::from(*y) - expected).abs() <= 1e-6, "length {len}: {y} vs {expected}");
            }
        }
        assert_eq!(max(&[-1e9, -3.0, -1e9]), -3.0, "a row's only unmasked score is its maximum");
    }

    #[test]
    fn exp_is_within_two_ulp_of_the_true_value() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let (ours, exact) = (exp(x), f64::from(x).exp());
            let ulp = f64::from(f32::EPSILON) * exact;
            assert!((f64::from(ours) - exact).abs() <= 2.0 * ulp, "exp({x}) = {ours}, not {exact}");
        }
        assert_eq!(exp(-1e9), exp(-87.0), "masked scores clamp to the smallest normal");
    }
}
