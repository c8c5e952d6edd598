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

/// `x = x / sqrt(mean(x²) + eps) · weight`, per row of `weight.len()`
/// values (a whole state, or one head).
pub fn rms_norm(x: &mut [f32], weight: &[f32], eps: f32) {
    let width = weight.len();
    parallel::chunks_mut(x, (MAP_CHUNK / width).max(1) * width, |_, rows| {
        for row in rows.chunks_exact_mut(width) {
            // ggml sums in double
            let mean = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / width as f64;
            let scale = 1.0 / (mean as f32 + eps).sqrt();
            row.iter_mut().zip(weight).for_each(|(v, w)| *v = *v * scale * w);
        }
    });
}

/// Rotary position embeddings, NEOX layout (each head's first half
/// rotated against its second half), on `[tokens × heads·head_dim]` of
/// packed sequences, positions counted from 0 in each. The angles are
/// built as ggml builds them (`θ_i = p · base^(−2i/d)` by repeated f32
/// multiplication), so they match it to the last bit.
pub fn rope_neox(x: &mut [f32], lengths: &[usize], head_dim: usize, base: f32) {
    let half = head_dim / 2;
    let theta_scale = base.powf(-2.0 / head_dim as f32);
    let longest = lengths.iter().copied().max().unwrap_or(0);
    // (cos, sin) per position and pair, shared by every head and sequence.
    let mut table = vec![(0f32, 0f32); longest * half];
    for (p, row) in table.chunks_exact_mut(half.max(1)).enumerate() {
        let mut theta = p as f32;
        for entry in row {
            *entry = (theta.cos(), theta.sin());
            theta *= theta_scale;
        }
    }
    let width = x.len() / lengths.iter().sum::<usize>().max(1);
    let mut at = 0;
    for &len in lengths {
        for p in 0..len {
            let angles = &table[p * half..(p + 1) * half];
            for head in x[(at + p) * width..(at + p + 1) * width].chunks_exact_mut(head_dim) {
                let (first, second) = head.split_at_mut(half);
                for ((a, b), &(cos, sin)) in first.iter_mut().zip(second.iter_mut()).zip(angles) {
                    let (x0, x1) = (*a, *b);
                    *a = x0 * cos - x1 * sin;
                    *b = x0 * sin + x1 * cos;
                }
            }
        }
        at += len;
    }
}

/// `gate = gelu(gate) · up`: the gated feed-forward's activation (GEGLU).
pub fn gelu_gate(gate: &mut [f32], up: &[f32]) {
    gelu(gate);
    parallel::chunks_mut(gate, MAP_CHUNK, |i, chunk| {
        let up = &up[i * MAP_CHUNK..];
        chunk.iter_mut().zip(up).for_each(|(g, u)| *g *= u);
    });
}

pub fn scale(x: &mut [f32], factor: f32) {
    x.iter_mut().for_each(|v| *v *= factor);
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

/// How the heads are laid out and which keys each query sees.
#[derive(Clone, Copy, Debug)]
pub struct AttentionShape {
    pub heads: usize,
    /// Key/value heads; each serves `heads / kv_heads` query heads
    /// (grouped-query attention).
    pub kv_heads: usize,
    pub head_dim: usize,
    /// What the scores are multiplied by before the softmax.
    pub scale: f32,
    pub window: Window,
}

/// The keys a query at position `i` attends to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Every token of its sequence (BERT, global layers).
    Full,
    /// Tokens at most this far away on either side (llama.cpp's
    /// `LLAMA_SWA_TYPE_SYMMETRIC`, half its `n_swa`).
    Symmetric(usize),
}

impl Window {
    fn keys(self, i: usize, len: usize) -> std::ops::Range<usize> {
        match self {
            Window::Full => 0..len,
            Window::Symmetric(half) => i.saturating_sub(half)..(i + half + 1).min(len),
        }
    }
}

/// Self-attention of each sequence over its own tokens (no padding: the
/// sequences are packed one after another, `lengths` tokens each).
/// `q` and the result are `[tokens × heads·head_dim]`, `k` and `v`
/// `[tokens × kv_heads·head_dim]`.
pub fn attention(q: &[f32], k: &[f32], v: &[f32], lengths: &[usize], shape: AttentionShape) -> Vec<f32> {
    let (q_width, kv_width) = (shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim);
    let starts: Vec<usize> = lengths.iter().scan(0, |at, &l| Some(std::mem::replace(at, *at + l))).collect();
    let spans: Vec<(usize, usize)> = starts.into_iter().zip(lengths.iter().copied()).collect();
    let per_sequence = parallel::map(&spans, |&(start, len)| {
        let (qs, kvs) = (start * q_width..(start + len) * q_width, start * kv_width..(start + len) * kv_width);
        Ok(sequence_attention(&q[qs], &k[kvs.clone()], &v[kvs], len, shape))
    })
    .expect("attention does not fail");
    per_sequence.concat()
}

fn sequence_attention(q: &[f32], k: &[f32], v: &[f32], len: usize, shape: AttentionShape) -> Vec<f32> {
    let AttentionShape { heads, kv_heads, head_dim, scale, window } = shape;
    let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
    let group = heads / kv_heads.max(1);
    let mut out = vec![0f32; len * q_width];
    let mut scores = vec![0f32; len * len];
    for h in 0..heads {
        let (q_column, kv_column) = (h * head_dim, (h / group) * head_dim);
        // scores = scale · Q_h · K_hᵀ
        // SAFETY: Q_h is the len × head_dim block at q_column of the
        // len × q_width matrix, K_h the one at kv_column of the len ×
        // kv_width matrix (read as its transpose); scores is len × len.
        unsafe {
            multiply(
                (len, len, head_dim),
                scores.as_mut_ptr(),
                len,
                View { data: q.as_ptr().add(q_column), row_stride: q_width as isize, col_stride: 1 },
                View { data: k.as_ptr().add(kv_column), row_stride: 1, col_stride: kv_width as isize },
                scale,
            );
        }
        for (i, row) in scores.chunks_exact_mut(len).enumerate() {
            let keys = window.keys(i, len);
            row[..keys.start].fill(0.0);
            row[keys.end..].fill(0.0);
            softmax(&mut row[keys]);
        }
        // out_h = scores · V_h
        // SAFETY: as above; out_h is the block at q_column of out.
        unsafe {
            multiply(
                (len, head_dim, len),
                out.as_mut_ptr().add(q_column),
                q_width,
                View { data: scores.as_ptr(), row_stride: len as isize, col_stride: 1 },
                View { data: v.as_ptr().add(kv_column), row_stride: kv_width as isize, col_stride: 1 },
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
