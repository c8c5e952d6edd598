//! Operations between the matrix products, on rows of f32 activations.

use crate::kernels::float::{View, multiply};
use crate::model::attention::exp;
use crate::model::parallel;

/// Elements per task of the element-wise maps: big enough to amortise a
/// task, small enough to spread a pass over the cores.
const MAP_CHUNK: usize = 64 * 1024;

/// `x = (x - mean) / sqrt(var + eps) · weight + bias`, per row.
pub fn layer_norm(x: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
    parallel::chunks_mut(x, MAP_CHUNK / width * width, |_, rows| layer_norm_rows(rows, width, weight, bias, eps));
}

fn layer_norm_rows(x: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let mean = row.iter().sum::<f32>() / width as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = (*v - mean) * scale * w + b;
        }
    }
}

/// GELU as ggml computes it (the tanh form), with tanh from the
/// branch-free `exp` so the loop vectorises (libm's scalar `tanhf` was
/// most of a pass), spread over the cores.
pub fn gelu(x: &mut [f32]) {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    parallel::chunks_mut(x, MAP_CHUNK, |_, chunk| {
        for v in chunk {
            let y = SQRT_2_OVER_PI * *v * (1.0 + 0.044_715 * *v * *v);
            // tanh(y) = 1 − 2 / (e^{2y} + 1)
            let tanh = 1.0 - 2.0 / (exp(2.0 * y) + 1.0);
            *v = 0.5 * *v * (1.0 + tanh);
        }
    });
}

pub fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// Self-attention of each sequence over its own tokens (no padding: the
/// sequences are packed one after another, `lengths` tokens each).
/// `q`, `k`, `v` and the result are `[tokens × heads·head_dim]`.
pub fn attention(q: &[f32], k: &[f32], v: &[f32], lengths: &[usize], heads: usize, head_dim: usize) -> Vec<f32> {
    let width = heads * head_dim;
    let starts: Vec<usize> = lengths.iter().scan(0, |at, &l| Some(std::mem::replace(at, *at + l))).collect();
    let spans: Vec<(usize, usize)> = starts.into_iter().zip(lengths.iter().copied()).collect();
    let per_sequence = parallel::map(&spans, |&(start, len)| {
        let range = start * width..(start + len) * width;
        Ok(sequence_attention(&q[range.clone()], &k[range.clone()], &v[range], len, heads, head_dim))
    })
    .expect("attention does not fail");
    per_sequence.concat()
}

fn sequence_attention(q: &[f32], k: &[f32], v: &[f32], len: usize, heads: usize, head_dim: usize) -> Vec<f32> {
    let width = heads * head_dim;
    let mut out = vec![0f32; len * width];
    let mut scores = vec![0f32; len * len];
    let scale = 1.0 / (head_dim as f32).sqrt();
    for h in 0..heads {
        let column = h * head_dim;
        let w = width as isize;
        // scores = scale · Q_h · K_hᵀ
        // SAFETY: Q_h and K_h are the len × head_dim blocks at `column` of
        // the len × width matrices (K_h read as its transpose); scores is
        // len × len.
        unsafe {
            multiply(
                (len, len, head_dim),
                scores.as_mut_ptr(),
                len,
                View { data: q.as_ptr().add(column), row_stride: w, col_stride: 1 },
                View { data: k.as_ptr().add(column), row_stride: 1, col_stride: w },
                scale,
            );
        }
        scores.chunks_exact_mut(len).for_each(softmax);
        // out_h = scores · V_h
        // SAFETY: as above; out_h is the block at `column` of out.
        unsafe {
            multiply(
                (len, head_dim, len),
                out.as_mut_ptr().add(column),
                width,
                View { data: scores.as_ptr(), row_stride: len as isize, col_stride: 1 },
                View { data: v.as_ptr().add(column), row_stride: w, col_stride: 1 },
                1.0,
            );
        }
    }
    out
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    row.iter_mut().for_each(|v| *v = exp(*v - max));
    let scale = 1.0 / row.iter().sum::<f32>();
    row.iter_mut().for_each(|v| *v *= scale);
}

/// The mean of each sequence's token states.
pub fn mean_pool(x: &[f32], lengths: &[usize], width: usize) -> Vec<Vec<f32>> {
    let mut at = 0;
    lengths
        .iter()
        .map(|&len| {
            let mut sum = vec![0f32; width];
            for row in x[at * width..(at + len) * width].chunks_exact(width) {
                add(&mut sum, row);
            }
            at += len;
            sum.iter_mut().for_each(|v| *v /= len.max(1) as f32);
            sum
        })
        .collect()
}

/// The first token's state of each sequence (CLS pooling).
pub fn first_token(x: &[f32], lengths: &[usize], width: usize) -> Vec<Vec<f32>> {
    let mut at = 0;
    lengths
        .iter()
        .map(|&len| {
            let row = x[at * width..(at + 1) * width].to_vec();
            at += len;
            row
        })
        .collect()
}

pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}
