//! WebAssembly SIMD (simd128) kernels, for the browser: every browser
//! since 2021 runs simd128, and the web build turns it on
//! (`.cargo/config.toml`). There are no 8-bit dot products in simd128, so
//! each 16-byte half of a block is widened to 16 bits and multiplied
//! pairwise into 32-bit lanes (`i32x4.dot_i16x8_s`).
//!
//! Four weight rows, widened and their scales converted once, share each
//! activation load. Each block's integer sums are reduced exactly and
//! scaled in the scalar kernel's order, so the results equal
//! [`super::scalar::q8_0_matmul`]'s bit for bit.

use core::arch::wasm32::*;

use super::{Q8_0_BLOCK_BYTES, QMatrix, QuantizedRows};
use crate::gguf::GgmlType;

/// A block's 32 values as four 8-lane 16-bit vectors.
#[inline(always)]
pub(super) fn widen(values: *const u8) -> [v128; 4] {
    // SAFETY (callers): `values` points at 32 readable bytes.
    let (low, high) = unsafe { (v128_load(values as *const v128), v128_load(values.add(16) as *const v128)) };
    [
        i16x8_extend_low_i8x16(low),
        i16x8_extend_high_i8x16(low),
        i16x8_extend_low_i8x16(high),
        i16x8_extend_high_i8x16(high),
    ]
}

#[inline(always)]
fn block_dot(x: &[v128; 4], w: &[v128; 4]) -> v128 {
    let a = i32x4_add(i32x4_dot_i16x8(x[0], w[0]), i32x4_dot_i16x8(x[1], w[1]));
    let b = i32x4_add(i32x4_dot_i16x8(x[2], w[2]), i32x4_dot_i16x8(x[3], w[3]));
    i32x4_add(a, b)
}

/// Four f16 values (the low 16 bits of each 32-bit lane; the rest is
/// ignored) as f32. simd128 has no conversion instruction and `half`'s
/// is a branchy software routine a value: with four weight rows' scales
/// converted per block, that was most of a decoded token. Exact for
/// normals, subnormals and infinities; a NaN stays a NaN.
#[inline(always)]
pub(super) fn f16x4_to_f32(h: v128) -> v128 {
    let magnitude = v128_and(h, u32x4_splat(0x7fff));
    let bits = i32x4_shl(magnitude, 13);
    // Normals and subnormals: the f32 with the exponent and mantissa bits
    // in place, times 2^(127 − 15), is the value (a subnormal half's bits
    // read as a subnormal f32, so exact too).
    let finite = f32x4_mul(bits, f32x4_splat(f32::from_bits(0x7780_0000)));
    // Infinity and NaN: an exponent of all ones.
    let special = i32x4_ge(magnitude, i32x4_splat(0x7c00));
    let value = v128_bitselect(v128_or(bits, u32x4_splat(0x7f80_0000)), finite, special);
    v128_or(value, i32x4_shl(v128_and(h, u32x4_splat(0x8000)), 16))
}

/// `src` as f32, eight values at a time ([`f16x4_to_f32`]): the f16 KV
/// cache's rows, which the attention reads a key at a time.
pub fn widen_f16(src: &[half::f16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "widen_f16: lengths");
    let whole = src.len() / 8 * 8;
    let (src, src_tail) = src.split_at(whole);
    let (dst, dst_tail) = dst.split_at_mut(whole);
    for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
        // SAFETY: eight f16 (16 bytes) in, eight f32 (32 bytes) out.
        unsafe {
            let h = v128_load(s.as_ptr() as *const v128);
            v128_store(d.as_mut_ptr() as *mut v128, f16x4_to_f32(u32x4_extend_low_u16x8(h)));
            v128_store(d.as_mut_ptr().add(4) as *mut v128, f16x4_to_f32(u32x4_extend_high_u16x8(h)));
        }
    }
    for (s, d) in src_tail.iter().zip(dst_tail) {
        *d = s.to_f32();
    }
}

/// Each f32 lane rounded to the nearest f16 value (ties to even; past the
/// largest f16, infinity), kept as f32: what converting to f16 and back
/// gives, without leaving f32. A NaN stays a NaN.
#[inline(always)]
fn round_f32x4_to_f16(x: v128) -> v128 {
    let magnitude = v128_and(x, u32x4_splat(0x7fff_ffff));
    // f16's normal range: keep 10 of the 23 mantissa bits, ties to even
    // (a carry moves into the exponent, as it should).
    let odd = v128_and(u32x4_shr(magnitude, 13), u32x4_splat(1));
    let normal = v128_and(i32x4_add(i32x4_add(magnitude, u32x4_splat(0xfff)), odd), u32x4_splat(!0x1fff));
    let normal = v128_bitselect(u32x4_splat(0x7f80_0000), normal, u32x4_ge(normal, u32x4_splat(0x4780_0000)));
    // Below 2^-14, f16's subnormals are multiples of 2^-24: the f32 sum
    // with 0.5 (whose ulp is 2^-24) rounds to one, ties to even.
    let subnormal = f32x4_sub(f32x4_add(magnitude, f32x4_splat(0.5)), f32x4_splat(0.5));
    let rounded = v128_bitselect(subnormal, normal, u32x4_lt(magnitude, u32x4_splat(0x3880_0000)));
    let rounded = v128_bitselect(magnitude, rounded, u32x4_gt(magnitude, u32x4_splat(0x7f80_0000)));
    v128_or(rounded, v128_and(x, u32x4_splat(0x8000_0000)))
}

/// Each value rounded to the nearest f16 and kept as f32, four at a time:
/// the f16 running sums of the attention.
pub fn round_to_f16(x: &mut [f32]) {
    let mut chunks = x.chunks_exact_mut(4);
    for c in &mut chunks {
        // SAFETY: four f32.
        unsafe { v128_store(c.as_mut_ptr() as *mut v128, round_f32x4_to_f16(v128_load(c.as_ptr() as *const v128))) };
    }
    for v in chunks.into_remainder() {
        *v = half::f16::from_f32(*v).to_f32();
    }
}

/// The f16 at byte `at` of each of four rows, as f32 lanes.
#[inline(always)]
pub(super) fn halves_at(rows: &[&[u8]; 4], at: usize) -> v128 {
    let half = |row: &[u8]| u32::from(u16::from_le_bytes([row[at], row[at + 1]]));
    f16x4_to_f32(u32x4(half(rows[0]), half(rows[1]), half(rows[2]), half(rows[3])))
}

/// The sum of the four 32-bit lanes.
#[inline(always)]
pub(super) fn lane_sum(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v) + i32x4_extract_lane::<1>(v) + i32x4_extract_lane::<2>(v) + i32x4_extract_lane::<3>(v)
}

/// The four lanes' sums of each of `a`, `b`, `c`, `d`, as `[Σa, Σb, Σc, Σd]`.
#[inline(always)]
pub(super) fn sum4(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b));
    let cd = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(c, d), i32x4_shuffle::<2, 6, 3, 7>(c, d));
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(ab, cd), i32x4_shuffle::<2, 3, 6, 7>(ab, cd))
}

pub fn q8_0_matmul(x: &QuantizedRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    let blocks = w.cols / 32;
    let full = w.rows / 4 * 4;
    // Four weight rows at a time, prepared once for every activation row:
    // values widened to 16 bits, scales converted from f16 four at a time.
    let mut wide = vec![i16x8_splat(0); 4 * 4 * blocks];
    let mut weight_scales = vec![f32x4_splat(0.0); blocks];
    for c in (0..full).step_by(4) {
        let weights = [w.row(c), w.row(c + 1), w.row(c + 2), w.row(c + 3)];
        for b in 0..blocks {
            for (j, row) in weights.iter().enumerate() {
                let lanes = widen(row[b * Q8_0_BLOCK_BYTES + 2..][..32].as_ptr());
                wide[(b * 4 + j) * 4..][..4].copy_from_slice(&lanes);
            }
            weight_scales[b] = halves_at(&weights, b * Q8_0_BLOCK_BYTES);
        }
        for (r, out) in rows.clone().zip(out.chunks_exact_mut(w.rows)) {
            let (values, scales) = x.row(r);
            let mut sums = f32x4_splat(0.0);
            for b in 0..blocks {
                let xv = widen(values[b * 32..][..32].as_ptr() as *const u8);
                let dot = |j: usize| block_dot(&xv, wide[(b * 4 + j) * 4..][..4].try_into().expect("four vectors"));
                let ints = sum4(dot(0), dot(1), dot(2), dot(3));
                sums = add_scaled(sums, ints, scales[b], weight_scales[b]);
            }
            // SAFETY: `c + 3 < full <= out.len()`.
            unsafe { v128_store(out[c..c + 4].as_mut_ptr() as *mut v128, sums) };
        }
    }
    q8_0_rows_past(full, x, rows, w, out);
}

/// `sums + ints · (dx · dw)`, lane by lane, as the scalar kernel scales a
/// block (integer sums below 2^24 convert exactly).
#[inline(always)]
pub(super) fn add_scaled(sums: v128, ints: v128, dx: f32, dw: v128) -> v128 {
    f32x4_add(sums, f32x4_mul(f32x4_convert_i32x4(ints), f32x4_mul(f32x4_splat(dx), dw)))
}

/// The weight rows from `full` on (fewer than a panel of four), by the
/// scalar kernel.
pub(super) fn q8_0_rows_past(
    full: usize,
    x: &QuantizedRows,
    rows: std::ops::Range<usize>,
    w: &QMatrix,
    out: &mut [f32],
) {
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let (values, scales) = x.row(r);
        for (c, y) in out.iter_mut().enumerate().skip(full) {
            *y = super::scalar::dot_q8_0(values, scales, w.row(c));
        }
    }
}

/// Q4_0 or Q4_1 weights × Q8_0/Q8_1 activations: the activation rows
/// widened once per call, each weight row's nibbles spread and widened
/// once, Q4_0's −8 taken off in integers (`−8 · Σx`), each block scaled in
/// the scalar kernel's order, so the results equal
/// [`super::scalar::q4_matmul`]'s bit for bit.
pub fn q4_matmul(x: &QuantizedRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    let q4_1 = w.kind == GgmlType::Q4_1;
    let (block_bytes, nibbles) = if q4_1 { (20, 4) } else { (18, 2) };
    let blocks = w.cols / 32;
    let widened_x: Vec<[v128; 4]> =
        rows.clone().flat_map(|r| x.row(r).0.chunks_exact(32).map(|b| widen(b.as_ptr() as *const u8))).collect();
    let mut widened_w = vec![[i16x8_splat(0); 4]; blocks];
    let mut factors = vec![(0f32, 0f32); blocks];
    for c in 0..w.rows {
        let row = w.row(c);
        for ((block, wide), factors) in row.chunks_exact(block_bytes).zip(&mut widened_w).zip(&mut factors) {
            // SAFETY: 16 bytes of nibbles.
            let q = unsafe { v128_load(block[nibbles..nibbles + 16].as_ptr() as *const v128) };
            let (low, high) = (v128_and(q, u8x16_splat(0x0f)), u8x16_shr(q, 4));
            *wide = [
                u16x8_extend_low_u8x16(low),
                u16x8_extend_high_u8x16(low),
                u16x8_extend_low_u8x16(high),
                u16x8_extend_high_u8x16(high),
            ];
            let minimum = if q4_1 { crate::gguf::half_at(block, 2) } else { 0.0 };
            *factors = (crate::gguf::half_at(block, 0), minimum);
        }
        for (i, r) in rows.clone().enumerate() {
            let (_, scales) = x.row(r);
            let (sums, scaled_sums) = (&x.sums[r * blocks..][..blocks], x.scaled_sums(r));
            let (mut products, mut minimums) = (0f32, 0f32);
            for (b, (wide, &(dw, mw))) in widened_w.iter().zip(&factors).enumerate() {
                let lanes = block_dot(&widened_x[i * blocks + b], wide);
                let mut sum = lane_sum(lanes);
                if q4_1 {
                    minimums += mw * scaled_sums[b];
                } else {
                    sum -= 8 * sums[b];
                }
                products += sum as f32 * (scales[b] * dw);
            }
            out[i * w.rows + c] = products + minimums;
        }
    }
}
