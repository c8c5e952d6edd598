//! Self-attention, `softmax(Q·Kᵀ/√d + bias)·V`, for the browser's CPU
//! backend. burn's CPU attention calls the C library's scalar `expf` for
//! every score (13% of the browser's embedding time in Chromium's
//! profiler); here the products run on [`dense`]'s kernel and the
//! exponentials in one branch-free loop that compiles to simd128. Other
//! devices keep burn's fused attention.

use burn::tensor::module;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Tensor, TensorData};

use super::dense;

/// `q`, `k`, `v`: `[batch, heads, tokens, head dim]`; `bias`:
/// `[batch, 1, 1, tokens]`, added to every query's scores over the keys
/// (it masks the padding). On the browser's CPU, sequence i is attended
/// over its first `lengths[i]` tokens alone, which is what the mask
/// leaves; the context rows of padding are zeros.
pub fn attention(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, bias: Tensor<4>, lengths: &[usize]) -> Tensor<4> {
    let device = q.device();
    if !dense::on_browser_cpu(&device) {
        return module::attention(q, k, v, None, Some(bias), AttentionModuleOptions::default());
    }
    let dims = q.dims();
    let (qd, kd, vd) = (q.into_data(), k.into_data(), v.into_data());
    match (qd.as_slice::<f32>(), kd.as_slice::<f32>(), vd.as_slice::<f32>()) {
        (Ok(q), Ok(k), Ok(v)) => {
            Tensor::from_data(TensorData::new(attention_f32(q, k, v, lengths, dims), dims), &device)
        }
        // Another float type (f16 weights): burn's own attention.
        _ => {
            let [q, k, v] = [qd, kd, vd].map(|data| Tensor::from_data(data, &device));
            module::attention(q, k, v, None, Some(bias), AttentionModuleOptions::default())
        }
    }
}

/// [`attention`] over row-major slices of those shapes, each sequence
/// over its real tokens.
fn attention_f32(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    lengths: &[usize],
    [batch, heads, tokens, dim]: [usize; 4],
) -> Vec<f32> {
    assert_eq!(lengths.len(), batch, "{} lengths for {batch} sequences", lengths.len());
    let head = tokens * dim;
    let scale = 1.0 / (dim as f32).sqrt();
    let mut out = vec![0.0; batch * heads * head];
    let mut k_t = vec![0.0; head];
    for (b, &length) in lengths.iter().enumerate() {
        assert!(length <= tokens, "a length of {length} is over {tokens} tokens");
        if length == 0 {
            continue;
        }
        let real = length * dim;
        for h in 0..heads {
            let at = (b * heads + h) * head;
            transpose(&k[at..at + real], length, dim, &mut k_t[..real]);
            let mut scores = dense::matmul(&q[at..at + real], &k_t[..real], None, length, dim, length);
            for row in scores.chunks_exact_mut(length) {
                row.iter_mut().for_each(|s| *s *= scale);
                softmax(row);
            }
            let context = dense::matmul(&scores, &v[at..at + real], None, length, length, dim);
            out[at..at + real].copy_from_slice(&context);
        }
    }
    out
}

/// `to[c×r] = from[r×c]ᵀ`.
fn transpose(from: &[f32], rows: usize, cols: usize, to: &mut [f32]) {
    for (r, row) in from.chunks_exact(cols).enumerate() {
        for (c, x) in row.iter().enumerate() {
            to[c * rows + r] = *x;
        }
    }
}

/// Lanes of the reductions below: eight partial maxima and sums, which
/// the compiler keeps in two simd128 registers.
const LANES: usize = 8;

/// `row` replaced by its softmax, every reduction in lanes (also the
/// GGUF models' attention, `arch::ops`). In the relaxed-SIMD module's
/// embedding passes, on its fused multiply-add
/// (`kernels::wasm_relaxed_elementwise`).
pub(crate) fn softmax(row: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    if crate::kernels::fused_element_wise() {
        return crate::kernels::wasm_relaxed_elementwise::softmax(row);
    }
    softmax_in_lanes(row);
}

super::vectorize::multiversion! {
    fn softmax_in_lanes(row: &mut [f32]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

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
            softmax(&mut ours);
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

    /// Against burn's fused attention with the padding masked, as the
    /// encoder masks it: equal on every real token, zeros on padding.
    #[test]
    fn attention_matches_burns_with_padding_masked() {
        let device = Device::flex();
        let [batch, heads, tokens, dim] = [4, 3, 7, 8];
        let lengths = [7, 4, 1, 0];
        let values = |seed: usize| -> Vec<f32> {
            (0..batch * heads * tokens * dim).map(|i| (((i * seed) % 97) as f32 - 48.0) / 24.0).collect()
        };
        let (q, k, v) = (values(31), values(37), values(41));
        let bias: Vec<f32> =
            (0..batch * tokens).map(|i| if i % tokens >= lengths[i / tokens] { -1e9 } else { 0.0 }).collect();
        let ours = attention_f32(&q, &k, &v, &lengths, [batch, heads, tokens, dim]);
        let tensor = |data: Vec<f32>, shape: [usize; 4]| Tensor::<4>::from_data(TensorData::new(data, shape), &device);
        let shape = [batch, heads, tokens, dim];
        let burns: Vec<f32> = module::attention(
            tensor(q, shape),
            tensor(k, shape),
            tensor(v, shape),
            None,
            Some(tensor(bias, [batch, 1, 1, tokens])),
            AttentionModuleOptions::default(),
        )
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
        for (i, (x, y)) in ours.iter().zip(&burns).enumerate() {
            let (sequence, token) = (i / (heads * tokens * dim), i / dim % tokens);
            let expected = if token < lengths[sequence] { *y } else { 0.0 };
            assert!((x - expected).abs() <= 1e-5 * (1.0 + y.abs()), "at {i}: {x} vs {expected}");
        }
    }
}
