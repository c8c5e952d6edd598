//! An attention head's two f32 products on relaxed SIMD's fused
//! multiply-add (`f32x4.relaxed_madd`: one `vfmadd` where the CPU has FMA,
//! where simd128 takes a multiply and an add), for the page's
//! relaxed-SIMD modules in embedding passes ([`super::for_embedding`]).
//! gemm's simd128 kernels, which they replace there, packed each block of
//! queries and multiplied and added separately: a fifth of a MiniLM pass
//! in the page.
//!
//! Whether the multiply-add is fused is the engine's choice, so these
//! products may differ from gemm's in the last bits (as the 7-bit
//! products of the same passes do); everything else runs them as before.

use core::arch::wasm32::*;
use std::ops::Range;

/// Query rows a score tile takes: with two vectors of keys, eight sums,
/// the keys and a query value fit V8's sixteen SIMD registers.
const ROWS: usize = 4;

/// One head's keys (`len` rows of `head_dim` values in `k`, `stride`
/// apart) transposed, `head_dim` rows of `len`: a score tile then
/// multiplies a query value by consecutive keys. Four keys by four values
/// at a time, in registers (a value at a time, the strided stores were
/// 1.7% of a MiniLM pass in the page); `head_dim` is a multiple of 4.
pub fn transpose_keys(k: &[f32], stride: usize, len: usize, head_dim: usize) -> Vec<f32> {
    assert!(head_dim.is_multiple_of(4), "transpose_keys: head width {head_dim}");
    assert!(len == 0 || k.len() >= (len - 1) * stride + head_dim, "transpose_keys: {len} keys");
    let mut t = vec![0f32; head_dim * len];
    let whole = len - len % 4;
    for j in (0..whole).step_by(4) {
        for d in (0..head_dim).step_by(4) {
            // SAFETY: keys j..j + 4 (< len) at columns d..d + 4 (≤ head_dim),
            // in bounds (checked above).
            let rows: [v128; 4] =
                std::array::from_fn(|r| unsafe { v128_load(k.as_ptr().add((j + r) * stride + d).cast()) });
            let low = [i32x4_shuffle::<0, 4, 1, 5>(rows[0], rows[1]), i32x4_shuffle::<0, 4, 1, 5>(rows[2], rows[3])];
            let high = [i32x4_shuffle::<2, 6, 3, 7>(rows[0], rows[1]), i32x4_shuffle::<2, 6, 3, 7>(rows[2], rows[3])];
            let columns = [
                i32x4_shuffle::<0, 1, 4, 5>(low[0], low[1]),
                i32x4_shuffle::<2, 3, 6, 7>(low[0], low[1]),
                i32x4_shuffle::<0, 1, 4, 5>(high[0], high[1]),
                i32x4_shuffle::<2, 3, 6, 7>(high[0], high[1]),
            ];
            for (c, column) in columns.into_iter().enumerate() {
                // SAFETY: row d + c < head_dim of `len`, columns j..j + 4 ≤ len.
                unsafe { v128_store(t.as_mut_ptr().add((d + c) * len + j).cast(), column) };
            }
        }
    }
    for j in whole..len {
        for (d, &x) in k[j * stride..][..head_dim].iter().enumerate() {
            t[d * len + j] = x;
        }
    }
    t
}

/// `out[rows × span.len()] = scale · Q · K[span]ᵀ`: `q` holds the rows
/// (`head_dim` values each, `q_stride` apart), `kt` the head's
/// [`transpose_keys`] over `len` keys.
pub fn scores(
    q: &[f32],
    (q_stride, rows): (usize, usize),
    kt: &[f32],
    (len, span): (usize, Range<usize>),
    head_dim: usize,
    scale: f32,
    out: &mut [f32],
) {
    let width = span.len();
    if rows == 0 || width == 0 {
        return;
    }
    assert!(q.len() >= (rows - 1) * q_stride + head_dim, "scores: query rows");
    assert!(kt.len() == head_dim * len && span.end <= len, "scores: keys");
    assert!(out.len() >= rows * width, "scores: output");
    let mut r = 0;
    while r < rows {
        let take = if rows - r >= ROWS { ROWS } else { 1 };
        let (q, out) = (&q[r * q_stride..], &mut out[r * width..]);
        let mut c = 0;
        while c < width {
            // SAFETY: span.start + c < len ≤ kt.len().
            let keys = unsafe { kt.as_ptr().add(span.start + c) };
            // SAFETY: `take` query rows of `head_dim` from `q` (checked
            // above); key columns `c..c + 4·V` of each of `head_dim` rows
            // of `len` (c + 4·V ≤ width, span.end ≤ len); `take` output rows
            // of `width` from column c.
            unsafe {
                let tile = (q.as_ptr(), q_stride, keys, len, head_dim, scale, out.as_mut_ptr().add(c), width);
                c += match (take, width - c) {
                    (ROWS, 8..) => scores_tile::<ROWS, 2>(tile),
                    (_, 8..) => scores_tile::<1, 2>(tile),
                    (ROWS, 4..) => scores_tile::<ROWS, 1>(tile),
                    (_, 4..) => scores_tile::<1, 1>(tile),
                    _ => scores_column(tile, take),
                };
            }
        }
        r += take;
    }
}

/// A score tile's operands: query rows and their stride, the transposed
/// keys from its first column and their row length, the head's width, the
/// scale, the output from its first column and its row length.
type ScoreTile = (*const f32, usize, *const f32, usize, usize, f32, *mut f32, usize);

/// `R` rows × `4·V` columns of scores; returns the columns done.
#[target_feature(enable = "relaxed-simd")]
unsafe fn scores_tile<const R: usize, const V: usize>(
    (q, q_stride, kt, len, head_dim, scale, out, out_stride): ScoreTile,
) -> usize {
    let mut acc = [[f32x4_splat(0.0); V]; R];
    for d in 0..head_dim {
        // SAFETY (all three blocks): within the tile `scores` checked.
        let keys: [v128; V] = std::array::from_fn(|v| unsafe { v128_load(kt.add(d * len + 4 * v) as *const v128) });
        for (r, acc) in acc.iter_mut().enumerate() {
            let x = unsafe { v128_load32_splat(q.add(r * q_stride + d) as *const u32) };
            for (acc, &keys) in acc.iter_mut().zip(&keys) {
                *acc = f32x4_relaxed_madd(x, keys, *acc);
            }
        }
    }
    let scale = f32x4_splat(scale);
    for (r, acc) in acc.iter().enumerate() {
        for (v, &acc) in acc.iter().enumerate() {
            unsafe { v128_store(out.add(r * out_stride + 4 * v) as *mut v128, f32x4_mul(acc, scale)) };
        }
    }
    4 * V
}

/// One column of scores for `rows` rows (the last columns of a span that
/// is not a multiple of four); returns 1.
unsafe fn scores_column((q, q_stride, kt, len, head_dim, scale, out, out_stride): ScoreTile, rows: usize) -> usize {
    for r in 0..rows {
        // SAFETY: within the tile `scores` checked.
        let dot: f32 = (0..head_dim).map(|d| unsafe { *q.add(r * q_stride + d) * *kt.add(d * len) }).sum();
        unsafe { *out.add(r * out_stride) = scale * dot };
    }
    1
}

/// `out[rows × head_dim] = P · V`: `p` holds `rows` rows of `width`
/// weights, `v` the span's `width` value rows (`head_dim` values each,
/// `v_stride` apart), `out` the rows `out_stride` apart. `head_dim` is a
/// multiple of 8.
pub fn weighted_values(
    p: &[f32],
    (rows, width): (usize, usize),
    (v, v_stride): (&[f32], usize),
    head_dim: usize,
    (out, out_stride): (&mut [f32], usize),
) {
    if rows == 0 {
        return;
    }
    assert!(head_dim.is_multiple_of(8), "weighted_values: head width {head_dim}");
    assert!(p.len() >= rows * width, "weighted_values: weights");
    assert!(width == 0 || v.len() >= (width - 1) * v_stride + head_dim, "weighted_values: values");
    assert!(out.len() >= (rows - 1) * out_stride + head_dim, "weighted_values: output");
    let mut r = 0;
    while r < rows {
        let take = if rows - r >= ROWS { ROWS } else { 1 };
        for d in (0..head_dim).step_by(8) {
            // SAFETY: `take` weight rows of `width` from row r; columns
            // d..d + 8 of `width` value rows; `take` output rows from row r
            // (all checked above).
            unsafe {
                let tile = (p[r * width..].as_ptr(), width, v[d..].as_ptr(), v_stride);
                let out = out[r * out_stride + d..].as_mut_ptr();
                match take {
                    ROWS => values_tile::<ROWS>(tile, out, out_stride),
                    _ => values_tile::<1>(tile, out, out_stride),
                }
            }
        }
        r += take;
    }
}

/// `R` rows × 8 values of `P · V`.
#[target_feature(enable = "relaxed-simd")]
unsafe fn values_tile<const R: usize>(
    (p, width, v, v_stride): (*const f32, usize, *const f32, usize),
    out: *mut f32,
    out_stride: usize,
) {
    let mut acc = [[f32x4_splat(0.0); 2]; R];
    for j in 0..width {
        // SAFETY (all three blocks): within the tile `weighted_values` checked.
        let values = unsafe {
            [v128_load(v.add(j * v_stride) as *const v128), v128_load(v.add(j * v_stride + 4) as *const v128)]
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            let x = unsafe { v128_load32_splat(p.add(r * width + j) as *const u32) };
            acc[0] = f32x4_relaxed_madd(x, values[0], acc[0]);
            acc[1] = f32x4_relaxed_madd(x, values[1], acc[1]);
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        unsafe {
            v128_store(out.add(r * out_stride) as *mut v128, acc[0]);
            v128_store(out.add(r * out_stride + 4) as *mut v128, acc[1]);
        }
    }
}
