//! Operations between the matrix products, on rows of f32 activations.

pub use super::attention_shape::{AttentionShape, CacheElement, Window};
use super::attention_shape::{dot, round_slice_to_f16};
use super::flash_f16;
use crate::error::{Error, Result};
use crate::kernels::QMatrix;
use crate::kernels::float::HeadProducts;
use crate::kernels::math::{exp, gelu_tanh};
use crate::kernels::multiversion::multiversion;
use crate::kernels::parallel::{self, MAP_CHUNK};
use crate::kernels::softmax;

/// `x = (x - mean) / sqrt(var + eps) · weight + bias`, per row.
pub fn layer_norm(x: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
    parallel::chunks_mut(x, MAP_CHUNK / width * width, |_, rows| layer_norm_rows(rows, width, weight, bias, eps));
}

fn layer_norm_rows(x: &mut [f32], width: usize, weight: &[f32], bias: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let mean = (sum_f64(row, |v| v) / width as f64) as f32;
        let variance = (sum_f64(row, |v| (v - mean) * (v - mean)) / width as f64) as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *v = (*v - mean) * scale * w + b;
        }
    }
}

/// `Σ f(v)` over `row`, each term in f32 and the sum in f64, as ggml's
/// norms sum; in eight partial sums, so the loop vectorises (one running
/// sum is a chain of dependent adds).
fn sum_f64(row: &[f32], f: impl Fn(f32) -> f32) -> f64 {
    let mut lanes = [0f64; 8];
    let mut chunks = row.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += f64::from(f(v));
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(f(v))).sum();
    lanes.iter().sum::<f64>() + tail
}

/// `x = x / sqrt(mean(x²) + eps) · weight`, per row of `weight.len()`
/// values (a whole state, or one head).
pub fn rms_norm(x: &mut [f32], weight: &[f32], eps: f32) {
    let width = weight.len();
    parallel::chunks_mut(x, (MAP_CHUNK / width).max(1) * width, |_, rows| {
        for row in rows.chunks_exact_mut(width) {
            let mean = sum_f64(row, |v| v * v) / width as f64;
            let scale = 1.0 / (mean as f32 + eps).sqrt();
            row.iter_mut().zip(weight).for_each(|(v, w)| *v = *v * scale * w);
        }
    });
}

/// Each token's position in its sequence, for sequences of `lengths`
/// packed one after another.
pub fn positions(lengths: impl IntoIterator<Item = usize>) -> Vec<u32> {
    lengths.into_iter().flat_map(|len| 0..len as u32).collect()
}

/// Rows `ids` of `table` (an embedding table), `[ids × width]` (an id
/// outside the table is an error, not a panic).
pub fn lookup(table: &QMatrix, ids: &[u32]) -> Result<Vec<f32>> {
    check_ids(ids, table.rows)?;
    let mut x = vec![0f32; ids.len() * table.cols];
    for (row, &id) in x.chunks_exact_mut(table.cols).zip(ids) {
        table.dequantize_row(id as usize, row);
    }
    Ok(x)
}

/// An error naming the first of `ids` outside a table of `rows` rows.
pub fn check_ids(ids: &[u32], rows: usize) -> Result<()> {
    match ids.iter().find(|&&id| id as usize >= rows) {
        Some(id) => Err(Error::invalid(format!("token id {id} is outside the vocabulary of {rows}"))),
        None => Ok(()),
    }
}

/// The rows of each sequence's last token, from `[Σ lengths × width]`.
pub fn last_rows(x: &[f32], lengths: &[usize]) -> Vec<f32> {
    let width = x.len() / lengths.iter().sum::<usize>().max(1);
    let mut out = Vec::with_capacity(lengths.len() * width);
    let mut end = 0;
    for &len in lengths {
        end += len;
        out.extend_from_slice(&x[(end - 1) * width..end * width]);
    }
    out
}

/// `(cos, sin)` of each of `positions` and each pair of a head, shared by
/// every head and sequence (a decoding step needs its position's row
/// only, not the whole sequence's).
pub fn rope_table(positions: std::ops::Range<usize>, head_dim: usize, base: f32) -> Vec<(f32, f32)> {
    let half = head_dim / 2;
    let theta_scale = base.powf(-2.0 / head_dim as f32);
    let mut table = vec![(0f32, 0f32); positions.len() * half];
    for (p, row) in positions.zip(table.chunks_exact_mut(half.max(1))) {
        let mut theta = p as f32;
        for entry in row {
            *entry = (theta.cos(), theta.sin());
            theta *= theta_scale;
        }
    }
    table
}

/// Which dimensions of a head rotate together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rope {
    /// Dimension i with i + head_dim/2 (NEOX: Gemma, Qwen3).
    Halves,
    /// Dimension 2i with 2i + 1 (llama.cpp's `NORM`: Llama, whose q/k
    /// rows the converter permuted to match).
    Pairs,
}

/// Rotary position embeddings on `[tokens × heads·head_dim]` of packed
/// sequences `(first position, length)` (a sequence after a cache of its
/// earlier tokens starts past 0). The angles are built as ggml builds them
/// (`θ_i = p · base^(−2i/d)` by repeated f32 multiplication), so they match
/// it to the last bit.
pub fn rope_from(x: &mut [f32], sequences: &[(usize, usize)], head_dim: usize, base: f32, layout: Rope) {
    let half = head_dim / 2;
    let start = sequences.iter().map(|&(first, _)| first).min().unwrap_or(0);
    let end = sequences.iter().map(|&(first, len)| first + len).max().unwrap_or(0);
    let table = rope_table(start..end, head_dim, base);
    let rotate = |a: &mut f32, b: &mut f32, (cos, sin): (f32, f32)| {
        let (x0, x1) = (*a, *b);
        *a = x0 * cos - x1 * sin;
        *b = x0 * sin + x1 * cos;
    };
    let width = x.len() / sequences.iter().map(|s| s.1).sum::<usize>().max(1);
    let mut at = 0;
    for &(first, len) in sequences {
        for p in 0..len {
            let angles = &table[(first + p - start) * half..(first + p - start + 1) * half];
            for head in x[(at + p) * width..(at + p + 1) * width].chunks_exact_mut(head_dim) {
                match layout {
                    Rope::Halves => {
                        let (first, second) = head.split_at_mut(half);
                        for ((a, b), &angle) in first.iter_mut().zip(second.iter_mut()).zip(angles) {
                            rotate(a, b, angle);
                        }
                    }
                    Rope::Pairs => {
                        for (pair, &angle) in head.chunks_exact_mut(2).zip(angles) {
                            let (a, b) = pair.split_at_mut(1);
                            rotate(&mut a[0], &mut b[0], angle);
                        }
                    }
                }
            }
        }
        at += len;
    }
}

/// `gate = gelu(gate) · up`: the gated feed-forward's activation (GEGLU).
pub fn gelu_gate(gate: &mut [f32], up: &[f32]) {
    parallel::chunks_mut(gate, MAP_CHUNK, |i, chunk| gelu_times(chunk, &up[i * MAP_CHUNK..]));
}

/// `gate = silu(gate) · up`: the gated feed-forward's activation (SwiGLU),
/// with the branch-free `exp` so the loop vectorises.
pub fn silu_gate(gate: &mut [f32], up: &[f32]) {
    parallel::chunks_mut(gate, MAP_CHUNK, |i, chunk| silu_times(chunk, &up[i * MAP_CHUNK..]));
}

multiversion! {
    fn silu_times(gate: &mut [f32], up: &[f32]) {
        gate.iter_mut().zip(up).for_each(|(g, u)| *g = *g / (1.0 + exp(-*g)) * u);
    }
}

pub fn scale(x: &mut [f32], factor: f32) {
    x.iter_mut().for_each(|v| *v *= factor);
}

/// GELU as ggml computes it (the tanh form), with tanh from the
/// branch-free `exp` so the loop vectorises (libm's scalar `tanhf` was
/// most of a pass), spread over the cores.
pub fn gelu(x: &mut [f32]) {
    parallel::chunks_mut(x, MAP_CHUNK, |_, chunk| gelu_times(chunk, &[]));
}

/// `x = gelu(x) · factor`, or `gelu(x)` where `factors` is empty. In the
/// relaxed-SIMD module's embedding passes, on its fused multiply-add
/// (`kernels::wasm_relaxed_elementwise`).
fn gelu_times(x: &mut [f32], factors: &[f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    if crate::kernels::fused_element_wise() {
        return crate::kernels::wasm_relaxed_elementwise::gelu_times(x, factors);
    }
    gelu_times_in_lanes(x, factors);
}

multiversion! {
    fn gelu_times_in_lanes(x: &mut [f32], factors: &[f32]) {
        if factors.is_empty() {
            x.iter_mut().for_each(|v| *v = gelu_tanh(*v));
        } else {
            x.iter_mut().zip(factors).for_each(|(v, f)| *v = gelu_tanh(*v) * f);
        }
    }
}

/// Each value rounded to the nearest f16 (as llama.cpp's f16 KV cache
/// stores keys and values), kept as f32.
pub fn round_to_f16(mut x: Vec<f32>) -> Vec<f32> {
    parallel::chunks_mut(&mut x, MAP_CHUNK, |_, chunk| round_slice_to_f16(chunk));
    x
}

pub fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// Self-attention of each sequence over its own tokens (no padding: the
/// sequences are packed one after another, `lengths` tokens each).
/// `q` and the result are `[tokens × heads·head_dim]`, `k` and `v`
/// `[tokens × kv_heads·head_dim]`.
pub fn attention(q: &[f32], k: &[f32], v: &[f32], lengths: &[usize], shape: AttentionShape) -> Vec<f32> {
    let (q_width, kv_width) = (shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim);
    // Each sequence writes its own slice of the output (no per-sequence
    // vectors joined afterwards: that copy was a tenth of a BERT pass).
    let mut out = vec![0f32; q.len()];
    let mut rest = out.as_mut_slice();
    let mut pieces = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for &len in lengths {
        let (piece, tail) = rest.split_at_mut(len * q_width);
        pieces.push((start, len, piece));
        rest = tail;
        start += len;
    }
    parallel::chunks_mut(&mut pieces, 1, |_, piece| {
        let (start, len, out) = &mut piece[0];
        let (qs, kvs) = (*start * q_width..(*start + *len) * q_width, *start * kv_width..(*start + *len) * kv_width);
        sequence_attention(&q[qs], &k[kvs.clone()], &v[kvs], (0, *len), shape, out);
    });
    out
}

/// One sequence's attention for queries that follow `cached` earlier
/// tokens: `q` holds the new tokens' rows, `k` and `v` every token's
/// (the cache's, then the new ones'), as f32 or as an f16 cache holds
/// them.
pub fn attention_after<E: CacheElement>(q: &[f32], k: &[E], v: &[E], cached: usize, shape: AttentionShape) -> Vec<f32> {
    let queries = q.len() / (shape.heads * shape.head_dim);
    let mut out = vec![0f32; q.len()];
    if shape.f16_sums {
        flash_f16::attention(q, k, v, (cached, cached + queries), shape, &mut out);
    } else {
        sequence_attention(q, &E::widen_all(k), &E::widen_all(v), (cached, queries), shape, &mut out);
    }
    out
}

/// Query rows per block of [`sequence_attention`]: each block multiplies
/// only the keys some row of it sees, so a causal layer computes about
/// half the square and a windowed one a band.
const QUERY_BLOCK: usize = 64;

/// One sequence's attention into `out` (`queries × heads·head_dim`) for
/// `(cached, queries)`: queries at positions `cached..cached + queries`,
/// keys and values at every position up to the last query's.
fn sequence_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (cached, queries): (usize, usize),
    shape: AttentionShape,
    out: &mut [f32],
) {
    let AttentionShape { heads, kv_heads, head_dim, scale, window, .. } = shape;
    let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
    let group = heads / kv_heads.max(1);
    let len = cached + queries;
    assert_eq!(out.len(), queries * q_width, "attention output shape");
    if shape.f16_sums {
        return flash_f16::attention::<f32>(q, k, v, (cached, len), shape, out);
    }
    if queries == 1 {
        return one_query_attention(q, k, v, (cached, len), shape, out);
    }
    let mut scores = vec![0f32; QUERY_BLOCK.min(queries) * len];
    for h in 0..heads {
        let (q_column, kv_column) = (h * head_dim, (h / group) * head_dim);
        let products = HeadProducts::new(&k[kv_column..], kv_width, len, head_dim);
        for first in (0..queries).step_by(QUERY_BLOCK) {
            let rows = QUERY_BLOCK.min(queries - first);
            // The windows only move forward with the query, so the block's
            // keys run from its first row's first key to its last row's last.
            let span = window.keys(cached + first, len).start..window.keys(cached + first + rows - 1, len).end;
            let width = span.len();
            let scores = &mut scores[..rows * width];
            // scores = scale · Q_h[block] · K_h[span]ᵀ
            products.scores(&q[first * q_width + q_column..], (q_width, rows), span.clone(), scale, scores);
            for (i, row) in scores.chunks_exact_mut(width).enumerate() {
                let keys = window.keys(cached + first + i, len);
                let keys = keys.start - span.start..keys.end - span.start;
                row[..keys.start].fill(0.0);
                row[keys.end..].fill(0.0);
                softmax(&mut row[keys]);
            }
            // out_h[block] = scores · V_h[span]
            products.weighted_values(
                scores,
                (rows, width),
                (&v[span.start * kv_width + kv_column..], kv_width),
                (&mut out[first * q_width + q_column..], q_width),
            );
        }
    }
}

/// One query's attention (a decoding step) at `position` of `len` tokens:
/// each head's scores as dot products over its keys' contiguous rows, the
/// heads over the cores. (gemm read the keys as a strided transpose and
/// packed them first: at one query that packing cost more than the
/// products.)
fn one_query_attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (position, len): (usize, usize),
    shape: AttentionShape,
    out: &mut [f32],
) {
    let AttentionShape { heads, kv_heads, head_dim, scale, window, .. } = shape;
    let (kv_width, group) = (kv_heads * head_dim, heads / kv_heads.max(1));
    let keys = window.keys(position, len);
    parallel::chunks_mut(out, head_dim, |h, out| {
        let kv_column = (h / group) * head_dim;
        let query = &q[h * head_dim..][..head_dim];
        let at = |j: usize| j * kv_width + kv_column..j * kv_width + kv_column + head_dim;
        let mut scores: Vec<f32> = keys.clone().map(|j| scale * dot(query, &k[at(j)])).collect();
        softmax(&mut scores);
        out.fill(0.0);
        for (j, &p) in keys.clone().zip(&scores) {
            out.iter_mut().zip(&v[at(j)]).for_each(|(o, &x)| *o += p * x);
        }
    });
}

/// The mean of each sequence's token states, `[sequences × width]`.
pub fn mean_pool(x: &[f32], lengths: &[usize], width: usize) -> Vec<f32> {
    let mut out = vec![0f32; lengths.len() * width];
    let mut at = 0;
    for (&len, sum) in lengths.iter().zip(out.chunks_exact_mut(width)) {
        for row in x[at * width..(at + len) * width].chunks_exact(width) {
            add(sum, row);
        }
        at += len;
        sum.iter_mut().for_each(|v| *v /= len.max(1) as f32);
    }
    out
}

/// The first token's state of each sequence (CLS pooling).
pub fn first_token(x: &[f32], lengths: &[usize], width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(lengths.len() * width);
    let mut at = 0;
    for &len in lengths {
        out.extend_from_slice(&x[at * width..(at + 1) * width]);
        at += len;
    }
    out
}

pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attention one query at a time, in f64, over the window's keys.
    fn naive(q: &[f32], k: &[f32], v: &[f32], len: usize, s: AttentionShape) -> Vec<f32> {
        let (qw, kw, d) = (s.heads * s.head_dim, s.kv_heads * s.head_dim, s.head_dim);
        let mut out = vec![0f32; len * qw];
        for h in 0..s.heads {
            let kv = h / (s.heads / s.kv_heads) * d;
            for i in 0..len {
                let keys = s.window.keys(i, len);
                let dots: Vec<f64> = keys
                    .clone()
                    .map(|j| {
                        (0..d).map(|c| f64::from(q[i * qw + h * d + c]) * f64::from(k[j * kw + kv + c])).sum::<f64>()
                    })
                    .map(|x| x * f64::from(s.scale))
                    .collect();
                let max = dots.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
                let weights: Vec<f64> = dots.iter().map(|x| (x - max).exp()).collect();
                let total: f64 = weights.iter().sum();
                for c in 0..d {
                    let value: f64 = keys.clone().zip(&weights).map(|(j, w)| w * f64::from(v[j * kw + kv + c])).sum();
                    out[i * qw + h * d + c] = (value / total) as f32;
                }
            }
        }
        out
    }

    /// Numbers in [-0.5, 0.5), the same for a seed.
    fn uniform(mut seed: u32) -> impl FnMut() -> f32 {
        move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        }
    }

    /// llama.cpp's f16-sum attention: the definition to f16's precision,
    /// and a value below f16's resolution is lost as llama.cpp loses it.
    #[test]
    fn f16_sums_follow_the_definition_to_f16_precision() {
        let mut random = uniform(11);
        for len in [1, 5, 63] {
            let shape = AttentionShape {
                heads: 4,
                kv_heads: 2,
                head_dim: 8,
                scale: 0.7,
                window: Window::Causal,
                f16_sums: true,
            };
            let q: Vec<f32> = (0..len * 32).map(|_| 4.0 * random()).collect();
            let k: Vec<f32> = (0..len * 16).map(|_| 4.0 * random()).collect();
            let v: Vec<f32> = (0..len * 16).map(|_| random()).collect();
            let mut ours = vec![0f32; len * 32];
            sequence_attention(&q, &k, &v, (0, len), shape, &mut ours);
            let whole = naive(&q, &k, &v, len, shape);
            for (a, b) in ours.iter().zip(&whole) {
                assert!((a - b).abs() <= 2e-3, "{len} tokens: {a} vs {b}");
            }
        }
        let shape =
            AttentionShape { heads: 1, kv_heads: 1, head_dim: 8, scale: 1.0, window: Window::Causal, f16_sums: true };
        let v = vec![1.0 + 1.0 / 4096.0; 8];
        let mut out = vec![0f32; 8];
        sequence_attention(&[0.5; 8], &[0.25; 8], &v, (0, 1), shape, &mut out);
        assert_eq!(out, vec![1.0; 8], "the f16 sum rounds 1 + 2⁻¹² to 1");
        sequence_attention(&[0.5; 8], &[0.25; 8], &v, (0, 1), AttentionShape { f16_sums: false, ..shape }, &mut out);
        assert_eq!(out, v, "the f32 sum keeps it");
    }

    #[test]
    fn blocked_attention_matches_the_definition_for_every_window() {
        let mut random = uniform(7);
        for window in [Window::Full, Window::Causal, Window::Symmetric(5), Window::Symmetric(100)] {
            for len in [1, 2, 63, 64, 65, 150] {
                let shape = AttentionShape { heads: 4, kv_heads: 2, head_dim: 8, scale: 0.7, window, f16_sums: false };
                let q: Vec<f32> = (0..len * 32).map(|_| random()).collect();
                let k: Vec<f32> = (0..len * 16).map(|_| random()).collect();
                let v: Vec<f32> = (0..len * 16).map(|_| random()).collect();
                let mut ours = vec![0f32; len * 32];
                sequence_attention(&q, &k, &v, (0, len), shape, &mut ours);
                let whole = naive(&q, &k, &v, len, shape);
                for (a, b) in ours.iter().zip(&whole) {
                    assert!((a - b).abs() < 1e-5, "{window:?} len {len}: {a} vs {b}");
                }
                // The last tokens' queries after the others are cached: the
                // whole pass's last rows (a decoding step, and a prompt
                // that follows a cache).
                if window == Window::Causal {
                    for new in [1, len.min(3), len] {
                        let cached = len - new;
                        let after = attention_after(&q[cached * 32..], &k[..], &v[..], cached, shape);
                        for (a, b) in after.iter().zip(&whole[cached * 32..]) {
                            assert!((a - b).abs() < 1e-5, "len {len}, {new} after {cached}: {a} vs {b}");
                        }
                    }
                }
            }
        }
    }

    /// Positions from a cache's length rotate as the same positions of
    /// the whole sequence.
    #[test]
    fn rope_from_a_position_equals_the_whole_sequences() {
        for layout in [Rope::Halves, Rope::Pairs] {
            let (len, head_dim) = (9, 8);
            let mut whole: Vec<f32> = (0..len * 2 * head_dim).map(|i| (i as f32 * 0.37).sin()).collect();
            let mut tail = whole[5 * 2 * head_dim..].to_vec();
            rope_from(&mut whole, &[(0, len)], head_dim, 10_000.0, layout);
            rope_from(&mut tail, &[(5, len - 5)], head_dim, 10_000.0, layout);
            assert_eq!(tail, whole[5 * 2 * head_dim..], "{layout:?}");
        }
    }
}
