//! AArch64 kernels (Apple silicon, Graviton, Ampere, phones): NEON is part
//! of every AArch64 CPU; the 8-bit dot product (`sdot`, FEAT_DotProd:
//! Apple M1 on, Neoverse, Cortex-A76 on) is picked at run time where the
//! CPU has it, as llama.cpp's `ggml_vec_dot_q8_0_q8_0` uses it.
//!
//! Four weight rows share each activation load. Each block's integer sums
//! are reduced exactly (`addp`) and scaled in the scalar kernel's order,
//! so the results equal [`super::scalar::q8_0_matmul`]'s bit for bit.

mod q4;

use core::arch::aarch64::*;
use std::ops::Range;

pub use q4::q4_kernel;
#[cfg(test)]
pub use q4::{q4_dotprod_matmul, q4_neon_matmul};

use super::{Q8_0_BLOCK_BYTES, Q8Kernel, QMatrix, QuantizedRows};
use crate::gguf::GgmlType;

/// The widest kernel this CPU runs.
pub fn q8_0_kernel() -> (Q8Kernel, &'static str) {
    if std::arch::is_aarch64_feature_detected!("dotprod") {
        (dotprod_matmul, "NEON dot product")
    } else {
        (neon_matmul, "NEON")
    }
}

pub fn dotprod_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen by `q8_0_kernel` only where the CPU has dotprod.
    unsafe { dotprod_tiles(x, rows, w, out) }
}

/// The tiles compiled with `dotprod`, so `sdot` inlines into the loop.
#[target_feature(enable = "dotprod")]
unsafe fn dotprod_tiles(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: as the caller's.
    unsafe { tiles(x, rows, w, out, |x, w| block_dot_sdot(x, w)) }
}

pub fn neon_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: NEON is part of every AArch64 CPU.
    unsafe { tiles(x, rows, w, out, |x, w| block_dot_neon(x, w)) }
}

/// One block's 32 products of `x` and `w` (32 bytes each), summed into
/// four 32-bit lanes with `sdot`.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn block_dot_sdot(x: *const i8, w: *const i8) -> int32x4_t {
    // SAFETY (callers): 32 readable bytes behind each pointer.
    let (x0, x1, w0, w1) = unsafe { (vld1q_s8(x), vld1q_s8(x.add(16)), vld1q_s8(w), vld1q_s8(w.add(16))) };
    let mut acc = vdupq_n_s32(0);
    // The `vdotq_s32` intrinsic is not stable in this toolchain; the
    // instruction is, under the function's `dotprod` feature.
    // SAFETY: register-only arithmetic.
    unsafe {
        std::arch::asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            "sdot {acc:v}.4s, {c:v}.16b, {d:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) x0,
            b = in(vreg) w0,
            c = in(vreg) x1,
            d = in(vreg) w1,
            options(pure, nomem, nostack),
        );
    }
    acc
}

/// [`block_dot_sdot`] on baseline NEON: widening products, pairwise
/// accumulated into 32 bits.
#[inline]
unsafe fn block_dot_neon(x: *const i8, w: *const i8) -> int32x4_t {
    // SAFETY (callers): 32 readable bytes behind each pointer.
    let (x0, x1, w0, w1) = unsafe { (vld1q_s8(x), vld1q_s8(x.add(16)), vld1q_s8(w), vld1q_s8(w.add(16))) };
    // SAFETY: NEON is part of every AArch64 CPU; register-only arithmetic.
    unsafe {
        let mut acc = vpaddlq_s16(vmull_s8(vget_low_s8(x0), vget_low_s8(w0)));
        acc = vpadalq_s16(acc, vmull_high_s8(x0, w0));
        acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(x1), vget_low_s8(w1)));
        vpadalq_s16(acc, vmull_high_s8(x1, w1))
    }
}

/// Rows × weight rows in tiles of one activation row and four weight
/// rows; `dot` is one block's lane sums.
#[inline(always)]
unsafe fn tiles(
    x: &QuantizedRows,
    rows: Range<usize>,
    w: &QMatrix,
    out: &mut [f32],
    dot: impl Fn(*const i8, *const i8) -> int32x4_t,
) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    let blocks = w.cols / 32;
    let full = w.rows / 4 * 4;
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let (values, scales) = x.row(r);
        for c in (0..full).step_by(4) {
            let weights = [w.row(c), w.row(c + 1), w.row(c + 2), w.row(c + 3)];
            // SAFETY (here and below): NEON is part of every AArch64 CPU.
            let mut sums = unsafe { vdupq_n_f32(0.0) };
            for b in 0..blocks {
                let xb = values[b * 32..][..32].as_ptr();
                let lanes = |row: &[u8]| dot(xb, row[b * Q8_0_BLOCK_BYTES + 2..][..32].as_ptr() as *const i8);
                let (l0, l1, l2, l3) = (lanes(weights[0]), lanes(weights[1]), lanes(weights[2]), lanes(weights[3]));
                // [Σl0, Σl1, Σl2, Σl3], exact (below 2^24, so exact as f32 too).
                let ints = unsafe { vpaddq_s32(vpaddq_s32(l0, l1), vpaddq_s32(l2, l3)) };
                let dx = scales[b];
                let scale = |row: &[u8]| dx * crate::gguf::half_at(row, b * Q8_0_BLOCK_BYTES);
                let scale = [scale(weights[0]), scale(weights[1]), scale(weights[2]), scale(weights[3])];
                // SAFETY: four floats.
                let scale = unsafe { vld1q_f32(scale.as_ptr()) };
                // The scalar kernel's multiply, then add, lane by lane (no fused multiply-add).
                sums = unsafe { vaddq_f32(sums, vmulq_f32(vcvtq_f32_s32(ints), scale)) };
            }
            // SAFETY: `c + 3 < full <= out.len()`.
            unsafe { vst1q_f32(out[c..c + 4].as_mut_ptr(), sums) };
        }
        for (c, y) in out.iter_mut().enumerate().skip(full) {
            *y = super::scalar::dot_q8_0(values, scales, w.row(c));
        }
    }
}
