//! NEON kernel for Q4_0 and Q4_1 weights × Q8_0/Q8_1 activations: each
//! block's nibbles spread to 32 bytes (0–15), multiplied with the
//! activation bytes by widening multiplies (`sdot` where the CPU has it)
//! into exact integer sums. Q4_0's −8 is taken off in integers (`−8 · Σx`,
//! the activations' block sum) and every block is scaled in the scalar
//! kernel's order, so the results equal [`super::super::scalar::q4_matmul`]'s
//! bit for bit.

use core::arch::aarch64::*;
use std::ops::Range;

use crate::gguf::{GgmlType, half_at};
use crate::kernels::{Q8Kernel, QMatrix, QuantizedRows};

/// The widest kernel this CPU runs.
pub fn q4_kernel() -> Q8Kernel {
    if std::arch::is_aarch64_feature_detected!("dotprod") { q4_dotprod_matmul } else { q4_neon_matmul }
}

pub fn q4_neon_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: NEON is part of every AArch64 CPU.
    unsafe { matmul(x, rows, w, out, |v, x| super::block_dot_neon(v, x)) }
}

pub fn q4_dotprod_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen by `q4_kernel` only where the CPU has dotprod.
    unsafe { q4_matmul_sdot(x, rows, w, out) }
}

#[target_feature(enable = "dotprod")]
unsafe fn q4_matmul_sdot(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: as the caller's.
    unsafe { matmul(x, rows, w, out, |v, x| super::block_dot_sdot(v, x)) }
}

/// Every activation row of `rows` against every weight row; `dot` sums a
/// block's 32 products into four lanes.
#[inline(always)]
unsafe fn matmul(
    x: &QuantizedRows,
    rows: Range<usize>,
    w: &QMatrix,
    out: &mut [f32],
    dot: impl Fn(*const i8, *const i8) -> int32x4_t,
) {
    let q4_1 = w.kind == GgmlType::Q4_1;
    let (block_bytes, nibbles) = if q4_1 { (20, 4) } else { (18, 2) };
    let blocks = w.cols / 32;
    let mut spread = vec![0u8; w.cols];
    for c in 0..w.rows {
        let row = w.row(c);
        for (block, values) in row.chunks_exact(block_bytes).zip(spread.chunks_exact_mut(32)) {
            // SAFETY: 16 bytes of nibbles in, 32 values out.
            unsafe {
                let q = vld1q_u8(block[nibbles..nibbles + 16].as_ptr());
                vst1q_u8(values.as_mut_ptr(), vandq_u8(q, vdupq_n_u8(0x0f)));
                vst1q_u8(values.as_mut_ptr().add(16), vshrq_n_u8::<4>(q));
            }
        }
        for r in rows.clone() {
            let (values, scales) = x.row(r);
            let (sums, scaled_sums) = (&x.sums[r * blocks..][..blocks], x.scaled_sums(r));
            let (mut products, mut minimums) = (0f32, 0f32);
            for (b, block) in row.chunks_exact(block_bytes).enumerate() {
                let lanes = dot(values[32 * b..].as_ptr(), spread[32 * b..].as_ptr() as *const i8);
                // SAFETY: register-only arithmetic.
                let mut sum = unsafe { vaddvq_s32(lanes) };
                if q4_1 {
                    minimums += half_at(block, 2) * scaled_sums[b];
                } else {
                    sum -= 8 * sums[b];
                }
                products += sum as f32 * (scales[b] * half_at(block, 0));
            }
            out[(r - rows.start) * w.rows + c] = products + minimums;
        }
    }
}
