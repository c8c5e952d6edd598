//! AVX2 kernel for K-quant weights × Q8_K activations on packed panels,
//! for products of several activation rows (a prompt): llama.cpp repacks
//! K-quant weights eight rows interleaved for the same reason.
//!
//! 8 weight rows at a time are unpacked (the row kernel's unpacking) into
//! a panel, each super-block's values interleaved four to a row
//! (`[step of 4 values][row][4 values]`: an 8×8 transpose of 32-bit lanes
//! per 32 values). One `vpmaddubsw` then multiplies four activation
//! values, broadcast, with four values of each of the 8 rows, and every
//! pair of 16-bit lanes belongs to one output. The 16-bit sums of several
//! steps are added before one `vpmaddwd` applies the rows' scales (the row
//! kernel pays a `vpmaddwd` per 32 values and row): as many steps as
//! cannot overflow, 8 for Q4_K (at most 8 · 2 · 15 · 127), 4 for Q5_K, 2
//! for Q6_K. The sums are exact in i32 and scaled once per super-block, as
//! the row kernel's, so the two differ only in the order of float
//! additions.

use std::arch::x86_64::*;
use std::ops::Range;

use super::blocks::GROUPS;
use super::q8k_rows::{GROUP, Q8KRow, Q8KRows, SUPER};
use super::x86::{avx2_matmul, q4_k_values, q6_k_values};
use crate::gguf::GgmlType;
use crate::kernels::QMatrix;
use crate::kernels::x86::half_at;

/// Weight rows per panel: one 8-lane register of outputs.
const PANEL: usize = 8;
/// Activation rows per pass over a panel: 4 × (16-bit sums, 32-bit sums,
/// float sums) and the loaded values in AVX2's 16 registers. Fewer rows
/// than this take the row kernel.
pub(super) const RM: usize = 4;
/// Steps of four values per super-block.
const STEPS: usize = SUPER / 4;
/// A panel's share of each super-block, the one statement of its layout:
/// values, scales, offsets and factors (see [`Panel`]).
const BLOCK_VALUES: usize = STEPS * PANEL * 4;
const BLOCK_SCALES: usize = GROUPS * PANEL;
const BLOCK_OFFSETS: usize = GROUPS * PANEL;
const BLOCK_FACTORS: usize = 2 * PANEL;

pub fn panel_matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    if rows.len() < RM {
        // Too few rows to pay for packing (a decoded token).
        return avx2_matmul(x, rows, w, out);
    }
    let mut panel = Panel::new(w.cols / SUPER);
    for c in (0..w.rows).step_by(PANEL) {
        let columns = c..(c + PANEL).min(w.rows);
        // SAFETY: chosen by `super::kernel` only where the row kernel's
        // features (AVX2, FMA, F16C) are.
        unsafe {
            panel.pack(w, columns.clone());
            match w.kind {
                GgmlType::Q4_K => panel_rows::<8>(x, rows.clone(), &panel, columns, out, w.rows),
                GgmlType::Q5_K => panel_rows::<4>(x, rows.clone(), &panel, columns, out, w.rows),
                _ => panel_rows::<2>(x, rows.clone(), &panel, columns, out, w.rows),
            }
        }
    }
}

/// 8 weight rows of a K-quant matrix, unpacked and interleaved.
struct Panel {
    /// Per super-block: 64 steps × 8 rows × 4 values (0–63).
    values: Vec<u8>,
    /// Per super-block: 16 groups × 8 rows, each scale in both halves of
    /// its 32 bits (for `vpmaddwd`); 0 for rows past the matrix.
    scales: Vec<i32>,
    /// Per super-block: 8 pairs of groups × 8 rows × 2 offsets.
    offsets: Vec<i16>,
    /// Per super-block: 8 rows' `d`, then their `dmin`.
    factors: Vec<f32>,
}

impl Panel {
    fn new(blocks: usize) -> Panel {
        Panel {
            values: vec![0; blocks * BLOCK_VALUES],
            scales: vec![0; blocks * BLOCK_SCALES],
            offsets: vec![0; blocks * BLOCK_OFFSETS],
            factors: vec![0.0; blocks * BLOCK_FACTORS],
        }
    }

    /// Packs weight rows `columns` (at most [`PANEL`]); the panel's other
    /// rows multiply as zeros.
    #[target_feature(enable = "avx2,f16c")]
    fn pack(&mut self, w: &QMatrix, columns: Range<usize>) {
        let bytes = w.kind.block_bytes();
        if columns.len() < PANEL {
            self.factors.fill(0.0);
        }
        let mut rows = [[_mm256_setzero_si256(); 8]; PANEL];
        let mut row_scales_of = [[_mm256_setzero_si256(); PANEL]; 3];
        let per_block = (self.values.chunks_exact_mut(BLOCK_VALUES))
            .zip(self.scales.chunks_exact_mut(BLOCK_SCALES))
            .zip(self.offsets.chunks_exact_mut(BLOCK_OFFSETS))
            .zip(self.factors.chunks_exact_mut(BLOCK_FACTORS));
        for (b, (((values, scales), offsets), factors)) in per_block.enumerate() {
            for (j, r) in columns.clone().enumerate() {
                let block = &w.row(r)[b * bytes..][..bytes];
                rows[j] = match w.kind {
                    GgmlType::Q4_K => q4_k_values(&block[16..144], None),
                    GgmlType::Q5_K => q4_k_values(&block[48..176], Some(&block[16..48])),
                    GgmlType::Q6_K => q6_k_values(block),
                    other => unreachable!("{other} is not a K-quant"),
                };
                let s = row_scales(w.kind, block);
                row_scales_of[0][j] = s.scales[0];
                row_scales_of[1][j] = s.scales[1];
                row_scales_of[2][j] = s.offsets;
                factors[j] = s.d;
                factors[PANEL + j] = s.dmin;
            }
            for t in 0..8 {
                let a =
                    [rows[0][t], rows[1][t], rows[2][t], rows[3][t], rows[4][t], rows[5][t], rows[6][t], rows[7][t]];
                transpose_into(a, &mut values[t * 8 * PANEL * 4..][..8 * PANEL * 4]);
            }
            if columns.len() < PANEL {
                // Rows past the matrix scale by zero.
                row_scales_of.iter_mut().for_each(|rows| rows[columns.len()..].fill(_mm256_setzero_si256()));
            }
            let (low, high) = scales.split_at_mut(GROUPS / 2 * PANEL);
            transpose_into(row_scales_of[0], bytes_of(low));
            transpose_into(row_scales_of[1], bytes_of(high));
            transpose_into(row_scales_of[2], bytes_of(offsets));
        }
    }
}

/// A super-block's scales in a row of the panel's forms: groups 0–7 and
/// 8–15 (of 16 values), each scale twice in 32 bits (for `vpmaddwd`), the
/// offsets by pairs of groups, and `d`, `dmin`. Packing transposes them
/// with the values (a value at a time, as `blocks` reads them, took two
/// thirds of the packing).
struct RowScales {
    scales: [__m256i; 2],
    offsets: __m256i,
    d: f32,
    dmin: f32,
}

#[inline]
#[target_feature(enable = "avx2,f16c")]
fn row_scales(kind: GgmlType, block: &[u8]) -> RowScales {
    let twice =
        |v: __m256i| _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32::<16>(v));
    if kind == GgmlType::Q6_K {
        // SAFETY: Q6_K's 16 signed scales.
        let (low, high, all) = unsafe {
            let at = block[192..208].as_ptr();
            (_mm_loadl_epi64(at.cast()), _mm_loadl_epi64(at.add(8).cast()), _mm_loadu_si128(at.cast()))
        };
        let (low, high) = (_mm256_cvtepi8_epi32(low), _mm256_cvtepi8_epi32(high));
        let offsets = _mm256_slli_epi16::<5>(_mm256_cvtepi8_epi16(all));
        let d = half_at(block, 208);
        return RowScales { scales: [twice(low), twice(high)], offsets, d, dmin: d };
    }
    // Q4_K/Q5_K's 12 bytes of 6-bit scales and minimums (ggml's
    // `get_scale_min_k4` for all eight groups of 32 at once).
    let word = |i: usize| u32::from_le_bytes([block[4 + 4 * i], block[5 + 4 * i], block[6 + 4 * i], block[7 + 4 * i]]);
    let (u0, u1, u2) = (word(0), word(1), word(2));
    let (six, four, two) = (0x3f3f_3f3f, 0x0f0f_0f0f, 0x0303_0303);
    let scales = _mm_set_epi32(0, 0, ((u2 & four) | (((u0 >> 6) & two) << 4)) as i32, (u0 & six) as i32);
    let mins = _mm_set_epi32(0, 0, (((u2 >> 4) & four) | (((u1 >> 6) & two) << 4)) as i32, (u1 & six) as i32);
    let scales = twice(_mm256_cvtepu8_epi32(scales));
    let low = _mm256_permutevar8x32_epi32(scales, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    let high = _mm256_permutevar8x32_epi32(scales, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
    let offsets = twice(_mm256_cvtepu8_epi32(mins));
    RowScales { scales: [low, high], offsets, d: half_at(block, 0), dmin: half_at(block, 2) }
}

/// A slice's bytes, for [`transpose_into`].
fn bytes_of<T: Copy>(x: &mut [T]) -> &mut [u8] {
    // SAFETY: i32 and i16 have no invalid bit patterns; the length is the
    // slice's size in bytes.
    unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast(), std::mem::size_of_val(x)) }
}

/// An 8×8 transpose of 32-bit lanes, stored: lane `i` of `a[j]` to
/// `out[32·i + 4·j..]`.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose_into(a: [__m256i; 8], out: &mut [u8]) {
    // Rows 2p and 2p+1 interleaved: lanes 0,1 | 4,5 and 2,3 | 6,7.
    let t0 = _mm256_unpacklo_epi32(a[0], a[1]);
    let t1 = _mm256_unpackhi_epi32(a[0], a[1]);
    let t2 = _mm256_unpacklo_epi32(a[2], a[3]);
    let t3 = _mm256_unpackhi_epi32(a[2], a[3]);
    let t4 = _mm256_unpacklo_epi32(a[4], a[5]);
    let t5 = _mm256_unpackhi_epi32(a[4], a[5]);
    let t6 = _mm256_unpacklo_epi32(a[6], a[7]);
    let t7 = _mm256_unpackhi_epi32(a[6], a[7]);
    // Lane k | k+4 of rows 0–3 (u0..u3) and of rows 4–7 (u4..u7).
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    let lanes = [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ];
    for (lane, out) in lanes.into_iter().zip(out.chunks_exact_mut(32)) {
        // SAFETY: 32 bytes.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), lane) };
    }
}

/// Every activation row of `rows` (at least [`RM`]) against one panel,
/// [`RM`] at a time; the last tile overlaps the one before it (its rows
/// are computed again, to the same sums).
#[target_feature(enable = "avx2,fma")]
fn panel_rows<const SUM_STEPS: usize>(
    x: &Q8KRows,
    rows: Range<usize>,
    panel: &Panel,
    columns: Range<usize>,
    out: &mut [f32],
    n: usize,
) {
    let mut r = rows.start;
    while r < rows.end {
        let first = r.min(rows.end - RM);
        let xr: [Q8KRow; RM] = std::array::from_fn(|i| x.row(first + i));
        let sums = panel_tile::<SUM_STEPS>(&xr, panel);
        for (i, sums) in sums.iter().enumerate() {
            let at = (first - rows.start + i) * n + columns.start;
            out[at..at + columns.len()].copy_from_slice(&sums[..columns.len()]);
        }
        r += RM;
    }
}

/// [`RM`] activation rows against the panel's 8 weight rows, adding
/// `SUM_STEPS` steps in 16 bits before each scaling.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn panel_tile<const SUM_STEPS: usize>(xr: &[Q8KRow; RM], panel: &Panel) -> [[f32; PANEL]; RM] {
    let mut acc = [_mm256_setzero_ps(); RM];
    let per_block = (panel.values.chunks_exact(BLOCK_VALUES))
        .zip(panel.scales.chunks_exact(BLOCK_SCALES))
        .zip(panel.offsets.chunks_exact(BLOCK_OFFSETS))
        .zip(panel.factors.chunks_exact(BLOCK_FACTORS));
    for (b, (((values, scales), offsets), factors)) in per_block.enumerate() {
        let blocks: [(&[i8], f32, &[i16]); RM] = std::array::from_fn(|i| xr[i].block(b));
        let mut dot = [_mm256_setzero_si256(); RM];
        for first in (0..STEPS).step_by(SUM_STEPS) {
            let mut short = [_mm256_setzero_si256(); RM];
            for s in first..first + SUM_STEPS {
                // SAFETY: step s of the block holds 8 rows × 4 values.
                let w = unsafe { _mm256_loadu_si256(values.as_ptr().add(s * PANEL * 4).cast()) };
                for (short, (x, _, _)) in short.iter_mut().zip(&blocks) {
                    // SAFETY: values 4s..4s+4 of the super-block's 256.
                    let four = unsafe { x.as_ptr().add(4 * s).cast::<i32>().read_unaligned() };
                    *short = _mm256_add_epi16(*short, _mm256_maddubs_epi16(w, _mm256_set1_epi32(four)));
                }
            }
            // SAFETY: the 8 rows' scales of the steps' group of 16 values.
            let scale = unsafe { _mm256_loadu_si256(scales.as_ptr().add(first * 4 / GROUP * PANEL).cast()) };
            for (dot, short) in dot.iter_mut().zip(short) {
                *dot = _mm256_add_epi32(*dot, _mm256_madd_epi16(short, scale));
            }
        }
        let mut offset = [_mm256_setzero_si256(); RM];
        for p in 0..GROUPS / 2 {
            // SAFETY: 8 rows × 2 offsets of the pair of groups.
            let o = unsafe { _mm256_loadu_si256(offsets.as_ptr().add(p * PANEL * 2).cast()) };
            for (offset, (_, _, sums)) in offset.iter_mut().zip(&blocks) {
                let pair = i32::from(sums[2 * p] as u16) | (i32::from(sums[2 * p + 1] as u16) << 16);
                *offset = _mm256_add_epi32(*offset, _mm256_madd_epi16(o, _mm256_set1_epi32(pair)));
            }
        }
        // SAFETY: 8 rows' d, then 8 dmin.
        let (d, dmin) = unsafe { (_mm256_loadu_ps(factors.as_ptr()), _mm256_loadu_ps(factors.as_ptr().add(PANEL))) };
        for ((acc, (_, dx, _)), (dot, offset)) in acc.iter_mut().zip(&blocks).zip(dot.into_iter().zip(offset)) {
            let dx = _mm256_set1_ps(*dx);
            *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(d, dx), *acc);
            *acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(offset), _mm256_mul_ps(dmin, dx), *acc);
        }
    }
    acc.map(|acc| {
        let mut lanes = [0f32; PANEL];
        // SAFETY: 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        lanes
    })
}
