//! The K-quant kernel on WebAssembly relaxed SIMD (the page's second
//! module; see `kernels::wasm_relaxed`): each weight row's super-blocks
//! unpacked once into unsigned values (0–63, the 7-bit operand as they
//! are), each 16-value group multiplied with the Q8_K activations by
//! `i32x4.relaxed_dot_i8x16_i7x16_add_s` into exact lane sums, times the
//! group's scale. The integer sums and the float scaling are the scalar
//! kernel's, so the results equal [`super::scalar::matmul`]'s bit for bit.

use core::arch::wasm32::*;
use std::ops::Range;

use super::blocks::{Scales, scales, values};
use super::q8k_rows::{GROUP, Q8KRows, SUPER};
use super::wasm::block_product;
use crate::kernels::QMatrix;

pub fn matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // Safe on wasm: a module with relaxed SIMD in it does not validate
    // where the engine lacks it (the page picks the module by that test).
    relaxed(x, rows, w, out)
}

#[target_feature(enable = "relaxed-simd")]
fn relaxed(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    let blocks = w.cols / SUPER;
    let mut unpacked = vec![0u8; w.cols];
    let mut factors: Vec<Scales> = Vec::with_capacity(blocks);
    for c in 0..w.rows {
        factors.clear();
        for (block, v) in w.row(c).chunks_exact(w.kind.block_bytes()).zip(unpacked.chunks_exact_mut(SUPER)) {
            v.copy_from_slice(&values(w.kind, block));
            factors.push(scales(w.kind, block));
        }
        for (i, r) in rows.clone().enumerate() {
            let row = x.row(r);
            let mut sum = 0f32;
            for (b, s) in factors.iter().enumerate() {
                let (xs, dx, group_sums) = row.block(b);
                let v = &unpacked[b * SUPER..][..SUPER];
                sum += block_product(s, dx, group_sums, |g| {
                    let (xg, vg) = (&xs[g * GROUP..][..GROUP], &v[g * GROUP..][..GROUP]);
                    // SAFETY: 16 values of each (sliced above).
                    let (xg, vg) =
                        unsafe { (v128_load(xg.as_ptr() as *const v128), v128_load(vg.as_ptr() as *const v128)) };
                    i32x4_relaxed_dot_i8x16_i7x16_add(xg, vg, i32x4_splat(0))
                });
            }
            out[i * w.rows + c] = sum;
        }
    }
}
