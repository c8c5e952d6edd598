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
/// `[batch, 1, 1, tokens]`, added to every query's scores over the keys.
pub fn attention(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, bias: Tensor<4>) -> Tensor<4> {
    let device = q.device();
    if !dense::on_browser_cpu(&device) {
        return module::attention(q, k, v, None, Some(bias), AttentionModuleOptions::default());
    }
    let dims = q.dims();
    let (qd, kd, vd, bd) = (q.into_data(), k.into_data(), v.into_data(), bias.into_data());
    match (qd.as_slice::<f32>(), kd.as_slice::<f32>(), vd.as_slice::<f32>(), bd.as_slice::<f32>()) {
        (Ok(q), Ok(k), Ok(v), Ok(bias)) => {
            Tensor::from_data(TensorData::new(attention_f32(q, k, v, bias, dims), dims), &device)
        }
        // Another float type (f16 weights): burn's own attention.
        _ => {
            let [q, k, v, bias] = [qd, kd, vd, bd].map(|data| Tensor::from_data(data, &device));
            module::attention(q, k, v, None, Some(bias), AttentionModuleOptions::default())
        }
    }
}

/// [`attention`] over row-major slices of those shapes.
fn attention_f32(q: &[f32], k: &[f32], v: &[f32], bias: &[f32], [batch, heads, tokens, dim]: [usize; 4]) -> Vec<f32> {
    let head = tokens * dim;
    let scale = 1.0 / (dim as f32).sqrt();
    let mut out = vec![0.0; batch * heads * head];
    let mut k_t = vec![0.0; head];
    for b in 0..batch {
        let bias = &bias[b * tokens..(b + 1) * tokens];
        for h in 0..heads {
            let at = (b * heads + h) * head;
            transpose(&k[at..at + head], tokens, dim, &mut k_t);
            let mut scores = dense::matmul(&q[at..at + head], &k_t, None, tokens, dim, tokens);
            for row in scores.chunks_exact_mut(tokens) {
                row.iter_mut().zip(bias).for_each(|(s, b)| *s = *s * scale + b);
                softmax(row);
            }
            let context = dense::matmul(&scores, &v[at..at + head], None, tokens, tokens, dim);
            out[at..at + head].copy_from_slice(&context);
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

fn softmax(row: &mut [f32]) {
    // A comparison, not `f32::max`: wasm has no instruction with its NaN
    // rules, so `max` became a call per score.
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    row.iter_mut().for_each(|x| *x = exp(*x - max));
    let sum: f32 = row.iter().sum();
    let inverse = 1.0 / sum;
    row.iter_mut().for_each(|x| *x *= inverse);
}

/// eˣ as Cephes' `expf` computes it (x = n·ln 2 + r, a degree-6
/// polynomial in r, 2ⁿ from the exponent bits), without its branches, so
/// a loop over it vectorises: within 2 ulp on [-87, 88], where f32's
/// normal range ends (beyond, the bounds' values).
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4 * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    e * f32::from_bits(((n as i32 + 127) << 23) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

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

    /// Against burn's fused attention, with padded keys masked out as the
    /// encoder masks them.
    #[test]
    fn attention_matches_burns_with_padding_masked() {
        let device = Device::flex();
        let [batch, heads, tokens, dim] = [2, 3, 7, 8];
        let values = |seed: usize| -> Vec<f32> {
            (0..batch * heads * tokens * dim).map(|i| (((i * seed) % 97) as f32 - 48.0) / 24.0).collect()
        };
        let (q, k, v) = (values(31), values(37), values(41));
        // The second text is 4 tokens long; the rest is padding.
        let bias: Vec<f32> =
            (0..batch * tokens).map(|i| if i >= tokens && i % tokens >= 4 { -1e9 } else { 0.0 }).collect();
        let ours = attention_f32(&q, &k, &v, &bias, [batch, heads, tokens, dim]);
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
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "at {i}: {x} vs burn's {y}");
        }
    }
}
