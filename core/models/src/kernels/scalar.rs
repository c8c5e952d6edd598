//! The portable kernel: plain loops, the reference the SIMD kernels are
//! tested against.

use super::{Q8_0_BLOCK_BYTES, QMatrix, QuantizedRows};
use crate::gguf::GgmlType;

/// `Σ_b d_x[b]·d_w[b]·Σ_i x[b][i]·w[b][i]` over the blocks of one row
/// pair, summed as ggml's `ggml_vec_dot_q8_0_q8_0` does.
pub fn dot_q8_0(x: &[i8], x_scales: &[f32], w: &[u8]) -> f32 {
    let mut sum = 0f32;
    for ((x, &dx), w) in x.chunks_exact(32).zip(x_scales).zip(w.chunks_exact(Q8_0_BLOCK_BYTES)) {
        let dw = crate::gguf::half_at(w, 0);
        let dot: i32 = x.iter().zip(&w[2..]).map(|(&a, &b)| i32::from(a) * i32::from(b as i8)).sum();
        sum += dot as f32 * (dx * dw);
    }
    sum
}

// The SIMD kernels of AArch64 and the browser replace it there (tests
// still compare).
#[cfg_attr(
    all(any(target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128")), not(test)),
    allow(dead_code)
)]
pub fn q8_0_matmul(x: &QuantizedRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let (values, scales) = x.row(r);
        for (c, y) in out.iter_mut().enumerate() {
            *y = dot_q8_0(values, scales, w.row(c));
        }
    }
}

/// A Q4_0 block (`d`, then 16 bytes: values 0–15 in the low nibbles,
/// 16–31 in the high ones, each 8 above the weight) against Q8_0
/// activations: `ggml_vec_dot_q4_0_q8_0`.
pub fn dot_q4_0(x: &[i8], x_scales: &[f32], w: &[u8]) -> f32 {
    let mut sum = 0f32;
    for ((x, &dx), w) in x.chunks_exact(32).zip(x_scales).zip(w.chunks_exact(18)) {
        let dw = crate::gguf::half_at(w, 0);
        let (low, high) = x.split_at(16);
        let dot: i32 = w[2..]
            .iter()
            .zip(low.iter().zip(high))
            .map(|(&q, (&a, &b))| (i32::from(q & 15) - 8) * i32::from(a) + (i32::from(q >> 4) - 8) * i32::from(b))
            .sum();
        sum += dot as f32 * (dx * dw);
    }
    sum
}

/// A Q4_1 block (`d`, `m`, 16 bytes of nibbles: weight = `d·q + m`)
/// against Q8_1 activations: `ggml_vec_dot_q4_1_q8_1`, the minimum times
/// the activations' scaled sum.
pub fn dot_q4_1(x: &[i8], x_scales: &[f32], x_sums: &[f32], w: &[u8]) -> f32 {
    let (mut products, mut minimums) = (0f32, 0f32);
    for (((x, &dx), &sx), w) in x.chunks_exact(32).zip(x_scales).zip(x_sums).zip(w.chunks_exact(20)) {
        let (dw, mw) = (crate::gguf::half_at(w, 0), crate::gguf::half_at(w, 2));
        let (low, high) = x.split_at(16);
        let dot: i32 = w[4..]
            .iter()
            .zip(low.iter().zip(high))
            .map(|(&q, (&a, &b))| i32::from(q & 15) * i32::from(a) + i32::from(q >> 4) * i32::from(b))
            .sum();
        products += dot as f32 * (dx * dw);
        minimums += mw * sx;
    }
    products + minimums
}

/// Q4_0 or Q4_1 weights × the quantized activation rows `rows`.
// The SIMD kernels of AArch64 and the browser replace it there (tests
// still compare).
#[cfg_attr(
    all(any(target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128")), not(test)),
    allow(dead_code)
)]
pub fn q4_matmul(x: &QuantizedRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let (values, scales) = x.row(r);
        let sums = x.scaled_sums(r);
        for (c, y) in out.iter_mut().enumerate() {
            *y = match w.kind {
                GgmlType::Q4_0 => dot_q4_0(values, scales, w.row(c)),
                GgmlType::Q4_1 => dot_q4_1(values, scales, sums, w.row(c)),
                other => unreachable!("q4_matmul on {other}"),
            };
        }
    }
}
