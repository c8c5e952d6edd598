//! Blocks to floats: ggml's reference dequantization of each type
//! (`ggml-quants.c`, `dequantize_row_*`). Inference multiplies on the
//! blocks themselves ([`crate::kernels`]); this is for embedding-table
//! rows, for the types the kernels take as floats, and for tests.

use half::{bf16, f16};

use super::types::GgmlType;

/// Dequantizes whole blocks of `kind` from `bytes` into `out`.
///
/// # Panics
/// If `bytes` is not whole blocks or `out` is not their values' length:
/// callers slice both from a checked [`super::TensorInfo`].
pub fn dequantize(kind: GgmlType, bytes: &[u8], out: &mut [f32]) {
    let (block_bytes, block_values) = (kind.block_bytes(), kind.block_values());
    assert!(bytes.len().is_multiple_of(block_bytes), "{kind}: {} bytes are not whole blocks", bytes.len());
    assert_eq!(out.len(), bytes.len() / block_bytes * block_values, "{kind}: output length");
    let blocks = bytes.chunks_exact(block_bytes).zip(out.chunks_exact_mut(block_values));
    match kind {
        GgmlType::F32 => blocks.for_each(|(b, y)| y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        GgmlType::F16 => blocks.for_each(|(b, y)| y[0] = half_at(b, 0)),
        GgmlType::BF16 => blocks.for_each(|(b, y)| y[0] = bf16::from_le_bytes([b[0], b[1]]).to_f32()),
        GgmlType::Q8_0 => blocks.for_each(|(b, y)| q8_0(b, y)),
        GgmlType::Q4_0 => blocks.for_each(|(b, y)| q4_0(b, y)),
        GgmlType::Q4_1 => blocks.for_each(|(b, y)| q4_1(b, y)),
        GgmlType::Q4_K => blocks.for_each(|(b, y)| q4_k(b, y)),
        GgmlType::Q5_K => blocks.for_each(|(b, y)| q5_k(b, y)),
        GgmlType::Q6_K => blocks.for_each(|(b, y)| q6_k(b, y)),
    }
}

/// The little-endian f16 at `at`, as f32.
pub fn half_at(bytes: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
}

fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = half_at(b, 0);
    for (y, &q) in y.iter_mut().zip(&b[2..34]) {
        *y = f32::from(q as i8) * d;
    }
}

fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = half_at(b, 0);
    for (j, &q) in b[2..18].iter().enumerate() {
        y[j] = (f32::from(q & 0xF) - 8.0) * d;
        y[j + 16] = (f32::from(q >> 4) - 8.0) * d;
    }
}

fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half_at(b, 0), half_at(b, 2));
    for (j, &q) in b[4..20].iter().enumerate() {
        y[j] = f32::from(q & 0xF) * d + m;
        y[j + 16] = f32::from(q >> 4) * d + m;
    }
}

/// The 6-bit scale and minimum of group `j` of a Q4_K/Q5_K block
/// (`get_scale_min_k4`).
pub(crate) fn scale_min_k4(j: usize, scales: &[u8]) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        ((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))
    }
}

/// Q4_K: d, dmin (f16), scales[12], qs[128].
fn q4_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (half_at(b, 0), half_at(b, 2));
    let (scales, qs) = (&b[4..16], &b[16..144]);
    for (group, (q, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
        let (s1, m1) = scale_min_k4(2 * group, scales);
        let (s2, m2) = scale_min_k4(2 * group + 1, scales);
        let (d1, m1, d2, m2) = (d * f32::from(s1), min * f32::from(m1), d * f32::from(s2), min * f32::from(m2));
        for l in 0..32 {
            y[l] = d1 * f32::from(q[l] & 0xF) - m1;
            y[l + 32] = d2 * f32::from(q[l] >> 4) - m2;
        }
    }
}

/// Q5_K: d, dmin (f16), scales[12], qh[32], qs[128].
fn q5_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (half_at(b, 0), half_at(b, 2));
    let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
    for (group, (q, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
        let (s1, m1) = scale_min_k4(2 * group, scales);
        let (s2, m2) = scale_min_k4(2 * group + 1, scales);
        let (d1, m1, d2, m2) = (d * f32::from(s1), min * f32::from(m1), d * f32::from(s2), min * f32::from(m2));
        let (u1, u2) = (1u8 << (2 * group), 2u8 << (2 * group));
        for l in 0..32 {
            let high1 = if qh[l] & u1 != 0 { 16.0 } else { 0.0 };
            let high2 = if qh[l] & u2 != 0 { 16.0 } else { 0.0 };
            y[l] = d1 * (f32::from(q[l] & 0xF) + high1) - m1;
            y[l + 32] = d2 * (f32::from(q[l] >> 4) + high2) - m2;
        }
    }
}

/// Q6_K: ql[128], qh[64], scales[16] (i8), d (f16).
fn q6_k(b: &[u8], y: &mut [f32]) {
    let d = half_at(b, 208);
    for half in 0..2 {
        let ql = &b[64 * half..64 * half + 64];
        let qh = &b[128 + 32 * half..128 + 32 * half + 32];
        let scales = &b[192 + 8 * half..192 + 8 * half + 8];
        let y = &mut y[128 * half..128 * half + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = i32::from((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
            let q2 = i32::from((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            let q3 = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            let q4 = i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            let scale = |i: usize| d * f32::from(scales[i] as i8);
            y[l] = scale(is) * q1 as f32;
            y[l + 32] = scale(is + 2) * q2 as f32;
            y[l + 64] = scale(is + 4) * q3 as f32;
            y[l + 96] = scale(is + 6) * q4 as f32;
        }
    }
}
