//! NEON kernel for K-quant weights × Q8_K activations (AArch64). Each
//! weight row's super-blocks are unpacked once into 16-byte vectors of
//! unsigned values (0–63) and then multiplied with every activation row:
//! each 16-value group by widening multiplies (`sdot` where the CPU has
//! it) into exact lane sums, times the group's scale. The integer sums
//! and the float scaling are the scalar kernel's, so the results equal
//! [`super::scalar::matmul`]'s bit for bit.

use core::arch::aarch64::*;
use std::ops::Range;

use super::blocks::{Scales, scales};
use super::q8k_rows::{GROUP, Q8KRows, SUPER};
use crate::gguf::GgmlType;
use crate::kernels::QMatrix;

/// The widest kernel this CPU runs.
pub fn kernel() -> super::Kernel {
    if std::arch::is_aarch64_feature_detected!("dotprod") { dotprod_matmul } else { neon_matmul }
}

pub fn neon_matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: NEON is part of every AArch64 CPU.
    unsafe { matmul_with(x, rows, w, out, |v, x| group_dot_neon(v, x)) }
}

pub fn dotprod_matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen by `kernel` only where the CPU has dotprod.
    unsafe { matmul_sdot(x, rows, w, out) }
}

#[target_feature(enable = "dotprod")]
unsafe fn matmul_sdot(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: as the caller's.
    unsafe { matmul_with(x, rows, w, out, |v, x| group_dot_sdot(v, x)) }
}

/// Sixteen products of unsigned values (below 64) and activations, summed
/// into four lanes.
#[inline]
unsafe fn group_dot_neon(v: uint8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: register-only arithmetic; values below 64 are the same as i8.
    unsafe {
        let v = vreinterpretq_s8_u8(v);
        let products = vmlal_high_s8(vmull_s8(vget_low_s8(v), vget_low_s8(x)), v, x);
        vpaddlq_s16(products)
    }
}

#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn group_dot_sdot(v: uint8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: register-only arithmetic (as in `kernels::arm`, the
    // instruction under the function's `dotprod` feature).
    unsafe {
        let v = vreinterpretq_s8_u8(v);
        let mut acc = vdupq_n_s32(0);
        std::arch::asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) v,
            b = in(vreg) x,
            options(pure, nomem, nostack),
        );
        acc
    }
}

/// Weight rows outside, each unpacked once; activation rows inside.
#[inline(always)]
unsafe fn matmul_with(
    x: &Q8KRows,
    rows: Range<usize>,
    w: &QMatrix,
    out: &mut [f32],
    dot: impl Fn(uint8x16_t, int8x16_t) -> int32x4_t,
) {
    let blocks = w.cols / SUPER;
    // SAFETY (here and below): NEON is part of every AArch64 CPU.
    let mut values = vec![[unsafe { vdupq_n_u8(0) }; SUPER / GROUP]; blocks];
    let mut factors: Vec<Scales> = Vec::with_capacity(blocks);
    for c in 0..w.rows {
        factors.clear();
        for (block, values) in w.row(c).chunks_exact(w.kind.block_bytes()).zip(&mut values) {
            // SAFETY: a whole block.
            *values = unsafe { unpack(w.kind, block) };
            factors.push(scales(w.kind, block));
        }
        for r in rows.clone() {
            let row = x.row(r);
            let mut sum = 0f32;
            for (b, (values, s)) in values.iter().zip(&factors).enumerate() {
                let (xv, dx, xs) = row.block(b);
                let mut lanes = unsafe { vdupq_n_s32(0) };
                for (g, (&v, &scale)) in values.iter().zip(&s.scales).enumerate() {
                    // SAFETY: 16 of the super-block's 256 values.
                    let xg = unsafe { vld1q_s8(xv[GROUP * g..].as_ptr()) };
                    lanes = unsafe { vmlaq_n_s32(lanes, dot(v, xg), i32::from(scale)) };
                }
                let products = unsafe { vaddvq_s32(lanes) };
                let offsets: i32 = s.offsets.iter().zip(xs).map(|(&o, &x)| i32::from(o) * i32::from(x)).sum();
                sum += (s.d * dx) * products as f32 - (s.dmin * dx) * offsets as f32;
            }
            out[(r - rows.start) * w.rows + c] = sum;
        }
    }
}

/// A super-block's 256 values as 16 vectors of 16, in weight order.
unsafe fn unpack(kind: GgmlType, block: &[u8]) -> [uint8x16_t; SUPER / GROUP] {
    // SAFETY: loads within the block (checked by the slices); NEON
    // arithmetic.
    unsafe {
        let load = |bytes: &[u8]| vld1q_u8(bytes[..16].as_ptr());
        let nibble = vdupq_n_u8(0x0f);
        let mut v = [vdupq_n_u8(0); SUPER / GROUP];
        match kind {
            GgmlType::Q4_K | GgmlType::Q5_K => {
                let qs = if kind == GgmlType::Q5_K { &block[48..176] } else { &block[16..144] };
                for c in 0..4 {
                    let (q0, q1) = (load(&qs[32 * c..]), load(&qs[32 * c + 16..]));
                    v[4 * c] = vandq_u8(q0, nibble);
                    v[4 * c + 1] = vandq_u8(q1, nibble);
                    v[4 * c + 2] = vshrq_n_u8::<4>(q0);
                    v[4 * c + 3] = vshrq_n_u8::<4>(q1);
                }
                if kind == GgmlType::Q5_K {
                    // Bit t of high byte l belongs to value 32·t + l.
                    let high = [load(&block[16..]), load(&block[32..])];
                    let one = vdupq_n_u8(1);
                    for (i, v) in v.iter_mut().enumerate() {
                        let (t, half) = (i / 2, i % 2);
                        let bit = vandq_u8(vshlq_u8(high[half], vdupq_n_s8(-(t as i8))), one);
                        *v = vorrq_u8(*v, vshlq_n_u8::<4>(bit));
                    }
                }
            }
            GgmlType::Q6_K => {
                let two = vdupq_n_u8(3);
                for half in 0..2 {
                    let ql: [uint8x16_t; 4] = std::array::from_fn(|i| load(&block[64 * half + 16 * i..]));
                    let qh = [load(&block[128 + 32 * half..]), load(&block[128 + 32 * half + 16..])];
                    let high =
                        |i: usize, shift: i8| vshlq_n_u8::<4>(vandq_u8(vshlq_u8(qh[i % 2], vdupq_n_s8(-shift)), two));
                    let v = &mut v[8 * half..8 * half + 8];
                    for i in 0..4 {
                        v[i] = vorrq_u8(vandq_u8(ql[i], nibble), high(i, 2 * (i / 2) as i8));
                        v[i + 4] = vorrq_u8(vshrq_n_u8::<4>(ql[i]), high(i, 4 + 2 * (i / 2) as i8));
                    }
                }
            }
            other => unreachable!("{other} is not a K-quant"),
        }
        v
    }
}
