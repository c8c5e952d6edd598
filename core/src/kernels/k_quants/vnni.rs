//! AVX-512 VNNI kernel for K-quant weights × Q8_K activations, on packed
//! panels, for products of several activation rows (a prompt): llama.cpp
//! repacks K-quant weights eight rows interleaved for the same reason.
//!
//! 16 weight rows at a time are unpacked (the AVX2 kernel's unpacking)
//! into a panel, each super-block's values interleaved four bytes per
//! row (`[step of 4 values][row][4 bytes]`, an 8×8 transpose of 32-bit
//! lanes per 32 values of 8 rows). One `vpdpbusd` then multiplies four
//! activation bytes, broadcast, with four values of each of 8 weight rows,
//! and every i32 lane sums one output: a scale group's sum is one
//! `vpmulld` by its 8 rows' scales for all its steps (the AVX2 kernel pays
//! a `vpmaddwd` per 32 values and row), and the offsets are `vpdpwssd`
//! over pairs of groups. The sums are exact in i32 and scaled once per
//! super-block, as the AVX2 kernel's, so both give the same floats up to
//! the order of the float additions.

use std::arch::x86_64::*;
use std::ops::Range;

use super::activations::{GROUP, Q8KRow, Q8KRows, SUPER};
use super::blocks::{GROUPS, scales};
use super::x86::{avx2_matmul, q4_k_values, q6_k_values};
use crate::gguf::GgmlType;
use crate::kernels::QMatrix;

pub fn available() -> bool {
    super::x86::available()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
}

/// Weight rows per panel: two 8-lane registers of outputs.
const PANEL: usize = 16;
/// Activation rows per pass over a panel: 2 × 4 group sums and 2 × 4
/// super-block sums (plus offsets), in AVX-512VL's 32 registers.
pub(super) const RM: usize = 4;
/// Steps of four values per super-block.
const STEPS: usize = SUPER / 4;

pub fn vnni_matmul(x: &Q8KRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    if rows.len() < RM {
        // Too few rows to pay for packing (a decoded token).
        return avx2_matmul(x, rows, w, out);
    }
    let mut panel = Panel::new(w.cols / SUPER);
    for c in (0..w.rows).step_by(PANEL) {
        let columns = c..(c + PANEL).min(w.rows);
        // SAFETY: chosen by `super::kernel` only where `available()`.
        unsafe {
            panel.pack(w, columns.clone());
            match w.kind {
                // Q4_K and Q5_K scale groups of 32 values (8 steps), Q6_K 16.
                GgmlType::Q6_K => panel_rows::<4>(x, rows.clone(), &panel, columns, out, w.rows),
                _ => panel_rows::<8>(x, rows.clone(), &panel, columns, out, w.rows),
            }
        }
    }
}

/// 16 weight rows of a K-quant matrix, unpacked and interleaved.
struct Panel {
    /// Per super-block: 64 steps × 16 rows × 4 values (0–63).
    values: Vec<u8>,
    /// Per super-block: 16 groups × 16 rows (rows past the matrix 0).
    scales: Vec<i32>,
    /// Per super-block: 8 pairs of groups × 16 rows × 2 offsets.
    offsets: Vec<i16>,
    /// Per super-block: 16 rows' `d`, then their `dmin`.
    factors: Vec<f32>,
}

impl Panel {
    fn new(blocks: usize) -> Panel {
        Panel {
            values: vec![0; blocks * STEPS * PANEL * 4],
            scales: vec![0; blocks * GROUPS * PANEL],
            offsets: vec![0; blocks * GROUPS * PANEL],
            factors: vec![0.0; blocks * 2 * PANEL],
        }
    }

    /// Packs weight rows `columns` (at most [`PANEL`]); the rest of the
    /// panel multiplies as zeros.
    #[target_feature(enable = "avx2,f16c")]
    fn pack(&mut self, w: &QMatrix, columns: Range<usize>) {
        let bytes = w.kind.block_bytes();
        let blocks = w.cols / SUPER;
        if columns.len() < PANEL {
            self.scales.fill(0);
            self.offsets.fill(0);
            self.factors.fill(0.0);
        }
        for b in 0..blocks {
            for half in 0..2 {
                // Eight rows' values, 32 a register, then transposed.
                let mut rows = [[_mm256_setzero_si256(); 8]; 8];
                for (j, row) in rows.iter_mut().enumerate() {
                    let r = columns.start + 8 * half + j;
                    if r >= columns.end {
                        break;
                    }
                    let block = &w.row(r)[b * bytes..][..bytes];
                    *row = match w.kind {
                        GgmlType::Q4_K => q4_k_values(&block[16..144], None),
                        GgmlType::Q5_K => q4_k_values(&block[48..176], Some(&block[16..48])),
                        GgmlType::Q6_K => q6_k_values(block),
                        other => unreachable!("{other} is not a K-quant"),
                    };
                    let s = scales(w.kind, block);
                    let lane = 8 * half + j;
                    for g in 0..GROUPS {
                        self.scales[(b * GROUPS + g) * PANEL + lane] = i32::from(s.scales[g]);
                        self.offsets[((b * GROUPS / 2 + g / 2) * PANEL + lane) * 2 + g % 2] = s.offsets[g];
                    }
                    self.factors[b * 2 * PANEL + lane] = s.d;
                    self.factors[b * 2 * PANEL + PANEL + lane] = s.dmin;
                }
                for t in 0..8 {
                    let steps = transpose(std::array::from_fn(|j| rows[j][t]));
                    for (i, step) in steps.into_iter().enumerate() {
                        let at = ((b * STEPS + 8 * t + i) * PANEL + 8 * half) * 4;
                        // SAFETY: 8 rows × 4 values of the step, in the panel.
                        unsafe { _mm256_storeu_si256(self.values[at..at + 32].as_mut_ptr().cast(), step) };
                    }
                }
            }
        }
    }
}

/// An 8×8 transpose of 32-bit lanes: lane `i` of `a[j]` to lane `j` of
/// the result's `[i]`.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose(a: [__m256i; 8]) -> [__m256i; 8] {
    let t: [__m256i; 8] = std::array::from_fn(|p| {
        let (x, y) = (a[2 * (p / 2)], a[2 * (p / 2) + 1]);
        if p % 2 == 0 { _mm256_unpacklo_epi32(x, y) } else { _mm256_unpackhi_epi32(x, y) }
    });
    // u[0..4]: lanes 0|4, 1|5, 2|6, 3|7 of rows 0–3; u[4..8] of rows 4–7.
    let u: [__m256i; 8] = std::array::from_fn(|p| {
        let base = 4 * (p / 4);
        let (x, y) = (t[base + (p % 4) / 2], t[base + 2 + (p % 4) / 2]);
        if p % 2 == 0 { _mm256_unpacklo_epi64(x, y) } else { _mm256_unpackhi_epi64(x, y) }
    });
    std::array::from_fn(|i| {
        let (low, high) = (u[i % 4], u[4 + i % 4]);
        if i < 4 { _mm256_permute2x128_si256::<0x20>(low, high) } else { _mm256_permute2x128_si256::<0x31>(low, high) }
    })
}

/// Every activation row of `rows` against one panel: [`RM`] at a time,
/// the last tile overlapping the one before it (its rows are recomputed,
/// the same sums).
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
fn panel_rows<const SCALE_STEPS: usize>(
    x: &Q8KRows,
    rows: Range<usize>,
    panel: &Panel,
    columns: Range<usize>,
    out: &mut [f32],
    n: usize,
) {
    let mut r = rows.start;
    loop {
        let first = r.min(rows.end - RM);
        let xr: [Q8KRow; RM] = std::array::from_fn(|i| x.row(first + i));
        let sums = panel_tile::<SCALE_STEPS>(&xr, panel);
        for (i, sums) in sums.iter().enumerate() {
            let at = (first - rows.start + i) * n + columns.start;
            out[at..at + columns.len()].copy_from_slice(&sums[..columns.len()]);
        }
        r += RM;
        if r >= rows.end {
            break;
        }
    }
}

/// [`RM`] activation rows against the panel's 16 weight rows.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
fn panel_tile<const SCALE_STEPS: usize>(xr: &[Q8KRow; RM], panel: &Panel) -> [[f32; PANEL]; RM] {
    let mut acc = [[_mm256_setzero_ps(); 2]; RM];
    let per_block = panel
        .values
        .chunks_exact(STEPS * PANEL * 4)
        .zip(panel.scales.chunks_exact(GROUPS * PANEL))
        .zip(panel.offsets.chunks_exact(GROUPS * PANEL))
        .zip(panel.factors.chunks_exact(2 * PANEL));
    for (b, (((values, scales), offsets), factors)) in per_block.enumerate() {
        let blocks: [(&[i8], f32, &[i16]); RM] = std::array::from_fn(|i| xr[i].block(b));
        let mut dot = [[_mm256_setzero_si256(); 2]; RM];
        for g in 0..STEPS / SCALE_STEPS {
            let mut group = [[_mm256_setzero_si256(); 2]; RM];
            for s in g * SCALE_STEPS..(g + 1) * SCALE_STEPS {
                // SAFETY: step s of the block holds 16 rows × 4 values.
                let (w0, w1) = unsafe {
                    let at = values.as_ptr().add(s * PANEL * 4);
                    (_mm256_loadu_si256(at.cast()), _mm256_loadu_si256(at.add(32).cast()))
                };
                for (group, (x, _, _)) in group.iter_mut().zip(&blocks) {
                    // SAFETY: values 4s..4s+4 of the super-block's 256.
                    let four = unsafe { x.as_ptr().add(4 * s).cast::<i32>().read_unaligned() };
                    let xv = _mm256_set1_epi32(four);
                    group[0] = _mm256_dpbusd_epi32(group[0], w0, xv);
                    group[1] = _mm256_dpbusd_epi32(group[1], w1, xv);
                }
            }
            // Groups of 16 scales: a group of 32 values takes its first.
            let scale_group = g * SCALE_STEPS * 4 / GROUP;
            // SAFETY: 16 rows' scales of that group.
            let (s0, s1) = unsafe {
                let at = scales.as_ptr().add(scale_group * PANEL);
                (_mm256_loadu_si256(at.cast()), _mm256_loadu_si256(at.add(8).cast()))
            };
            for (dot, group) in dot.iter_mut().zip(group) {
                dot[0] = _mm256_add_epi32(dot[0], _mm256_mullo_epi32(group[0], s0));
                dot[1] = _mm256_add_epi32(dot[1], _mm256_mullo_epi32(group[1], s1));
            }
        }
        let mut offset = [[_mm256_setzero_si256(); 2]; RM];
        for p in 0..GROUPS / 2 {
            // SAFETY: 16 rows × 2 offsets of the pair of groups.
            let (o0, o1) = unsafe {
                let at = offsets.as_ptr().add(p * PANEL * 2);
                (_mm256_loadu_si256(at.cast()), _mm256_loadu_si256(at.add(16).cast()))
            };
            for (offset, (_, _, sums)) in offset.iter_mut().zip(&blocks) {
                let pair = i32::from(sums[2 * p] as u16) | (i32::from(sums[2 * p + 1] as u16) << 16);
                let xv = _mm256_set1_epi32(pair);
                offset[0] = _mm256_dpwssd_epi32(offset[0], o0, xv);
                offset[1] = _mm256_dpwssd_epi32(offset[1], o1, xv);
            }
        }
        // SAFETY: 16 rows' d, then 16 dmin.
        let (d, dmin) = unsafe {
            let at = factors.as_ptr();
            (
                [_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8))],
                [_mm256_loadu_ps(at.add(16)), _mm256_loadu_ps(at.add(24))],
            )
        };
        for (i, (_, dx, _)) in blocks.iter().enumerate() {
            let dx = _mm256_set1_ps(*dx);
            for h in 0..2 {
                let a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][h]), _mm256_mul_ps(d[h], dx), acc[i][h]);
                acc[i][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(offset[i][h]), _mm256_mul_ps(dmin[h], dx), a);
            }
        }
    }
    acc.map(|[low, high]| {
        let mut lanes = [0f32; PANEL];
        // SAFETY: 16 floats.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), low);
            _mm256_storeu_ps(lanes.as_mut_ptr().add(8), high);
        }
        lanes
    })
}
