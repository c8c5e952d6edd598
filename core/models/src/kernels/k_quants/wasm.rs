//! WebAssembly SIMD (simd128) kernel for K-quant weights × Q8_K
//! activations, for the browser. simd128 has no 8-bit dot product, so the
//! activation rows are widened to 16 bits once per call and each weight
//! row's super-blocks unpacked and widened once; each 16-value group is
//! then summed by `i32x4.dot_i16x8_s` into exact lane sums, times the
//! group's scale. The integer sums and the float scaling are the scalar
//! kernel's, so the results equal [`super::scalar::matmul`]'s bit for bit.

use core::arch::wasm32::*;
use std::ops::Range;

use super::blocks::{Scales, scales, values};
use super::q8k_rows::{GROUP, Q8KRows, SUPER};
use crate::kernels::QMatrix;
use crate::kernels::wasm::{lane_sum, widen};

/// 16-bit lanes per vector.
const LANES: usize = 8;

pub fn matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    let (k, blocks) = (w.cols, w.cols / SUPER);
    let widened_x: Vec<v128> = rows
        .clone()
        .flat_map(|r| x.row(r).values.chunks_exact(32).flat_map(|v| widen(v.as_ptr() as *const u8)))
        .collect();
    let mut widened_w = vec![i16x8_splat(0); k / LANES];
    let mut factors: Vec<Scales> = Vec::with_capacity(blocks);
    for c in 0..w.rows {
        factors.clear();
        for (block, wide) in w.row(c).chunks_exact(w.kind.block_bytes()).zip(widened_w.chunks_exact_mut(SUPER / LANES))
        {
            let v = values(w.kind, block);
            for (sixteen, wide) in v.chunks_exact(16).zip(wide.chunks_exact_mut(2)) {
                // SAFETY: 16 values.
                let v = unsafe { v128_load(sixteen.as_ptr() as *const v128) };
                wide.copy_from_slice(&[u16x8_extend_low_u8x16(v), u16x8_extend_high_u8x16(v)]);
            }
            factors.push(scales(w.kind, block));
        }
        for (i, r) in rows.clone().enumerate() {
            let (row, xw) = (x.row(r), &widened_x[i * k / LANES..][..k / LANES]);
            let mut sum = 0f32;
            for (b, s) in factors.iter().enumerate() {
                let (_, dx, group_sums) = row.block(b);
                sum += block_product(s, dx, group_sums, |g| {
                    let at = (b * SUPER + g * GROUP) / LANES;
                    i32x4_add(i32x4_dot_i16x8(widened_w[at], xw[at]), i32x4_dot_i16x8(widened_w[at + 1], xw[at + 1]))
                });
            }
            out[i * w.rows + c] = sum;
        }
    }
}

/// A super-block's share of a product, `d·dx·Σ_g s[g]·Σ v·x − dmin·dx·Σ_g
/// o[g]·sum[g]`, from `dot(g)`: group `g`'s exact lane sums of `v·x`. The
/// scalar kernel's integers and float order (both browser kernels use it).
#[inline(always)]
pub(super) fn block_product(s: &Scales, dx: f32, group_sums: &[i16], dot: impl Fn(usize) -> v128) -> f32 {
    let mut lanes = i32x4_splat(0);
    for (g, &scale) in s.scales.iter().enumerate() {
        lanes = i32x4_add(lanes, i32x4_mul(dot(g), i32x4_splat(i32::from(scale))));
    }
    let products = lane_sum(lanes);
    let offsets: i32 = s.offsets.iter().zip(group_sums).map(|(&o, &x)| i32::from(o) * i32::from(x)).sum();
    (s.d * dx) * products as f32 - (s.dmin * dx) * offsets as f32
}
