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
use crate::kernels::softmax;

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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

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
