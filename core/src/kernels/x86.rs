//! x86-64 kernels for Q8_0 weights × Q8_0 activations.
//!
//! Both multiply a tile of activation rows by a tile of weight rows,
//! block by block, keeping one 8-lane f32 accumulator per pair: the
//! activation blocks are loaded once per weight row of the tile, the
//! weight blocks once per activation row.
//!
//! - AVX-512 VNNI (`vpdpbusd`, on 256-bit registers): multiplies unsigned
//!   by signed bytes, so the activations are offset to `x + 128` and the
//!   offset's share, `128 · Σw`, is taken off by starting the sum at its
//!   negation. The sums are exact in i32.
//! - AVX2: ggml's sign trick (`|x|` times `w` with `x`'s sign), summed by
//!   `vpmaddubsw` (no overflow: 2 · 127 · 127 < 2¹⁵) and `vpmaddwd`.

use std::arch::x86_64::*;
use std::ops::Range;

use super::{Q8Kernel, QMatrix, QuantizedRows};

/// The widest kernel this CPU runs.
pub fn q8_0_kernel() -> Option<Q8Kernel> {
    if is_x86_feature_detected!("avx512vnni")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
    {
        return Some(vnni_matmul);
    }
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c") {
        return Some(avx2_matmul);
    }
    None
}

/// Activation rows per tile.
const RM: usize = 4;
/// Weight rows per tile.
const RN: usize = 4;

pub fn vnni_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen by `q8_0_kernel` only where the CPU has the features.
    tiles(x, rows, w, out, |x, r, w, c, out, n| unsafe { vnni_tile(x, r, w, c, out, n) });
}

pub fn avx2_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: as above.
    tiles(x, rows, w, out, |x, r, w, c, out, n| unsafe { avx2_tile(x, r, w, c, out, n) });
}

/// Which rows a tile covers: `(first, count)` of activations and weights.
type Span = (usize, usize);

/// Walks the output in tiles: weight tiles outside (each read once per
/// call), activation tiles inside (they stay in L1 across weight tiles).
fn tiles(
    x: &QuantizedRows,
    rows: Range<usize>,
    w: &QMatrix,
    out: &mut [f32],
    tile: impl Fn(&QuantizedRows, Span, &QMatrix, Span, &mut [f32], usize),
) {
    let first_row = rows.start;
    for c in (0..w.rows).step_by(RN) {
        let columns = (c, RN.min(w.rows - c));
        for r in rows.clone().step_by(RM) {
            let count = RM.min(rows.end - r);
            let out = &mut out[(r - first_row) * w.rows..];
            tile(x, (r, count), w, columns, out, w.rows);
        }
    }
}

/// One activation row: its values and its block scales.
type XRow<'a> = (&'a [i8], &'a [f32]);

/// The activation rows and weight rows of a tile, padded to full tiles by
/// repeating the last row (its results are not stored).
fn tile_rows<'a>(x: &'a QuantizedRows, rows: Span, w: &QMatrix<'a>, columns: Span) -> ([XRow<'a>; RM], [&'a [u8]; RN]) {
    let xr = std::array::from_fn(|i| x.row(rows.0 + i.min(rows.1 - 1)));
    let wr = std::array::from_fn(|j| w.row(columns.0 + j.min(columns.1 - 1)));
    (xr, wr)
}

/// Stores the tile's sums (`out` starts at the tile's first row).
#[target_feature(enable = "avx2")]
fn store(acc: &[[__m256; RN]; RM], rows: Span, columns: Span, out: &mut [f32], n: usize) {
    for (i, acc) in acc.iter().enumerate().take(rows.1) {
        for (j, acc) in acc.iter().enumerate().take(columns.1) {
            out[i * n + columns.0 + j] = sum_lanes(*acc);
        }
    }
}

#[target_feature(enable = "avx2")]
fn sum_lanes(v: __m256) -> f32 {
    let pair = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let pair = _mm_add_ps(pair, _mm_movehl_ps(pair, pair));
    _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)))
}

/// A weight block's f16 scale.
#[target_feature(enable = "f16c")]
fn block_scale(block: &[u8]) -> __m256 {
    _mm256_cvtph_ps(_mm_set1_epi16(i16::from_le_bytes([block[0], block[1]])))
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
fn vnni_tile(x: &QuantizedRows, rows: Span, w: &QMatrix, columns: Span, out: &mut [f32], n: usize) {
    let (xr, wr) = tile_rows(x, rows, w, columns);
    let mut acc = [[_mm256_setzero_ps(); RN]; RM];
    let offset = _mm256_set1_epi8(-128);
    for b in 0..x.k / 32 {
        let mut xs = [_mm256_setzero_si256(); RM];
        let mut dx = [_mm256_setzero_ps(); RM];
        for i in 0..RM {
            // SAFETY: block b of a row of k values (b < k / 32).
            let v = unsafe { _mm256_loadu_si256(xr[i].0.as_ptr().add(32 * b).cast()) };
            xs[i] = _mm256_xor_si256(v, offset);
            dx[i] = _mm256_set1_ps(xr[i].1[b]);
        }
        for j in 0..RN {
            let block = &wr[j][34 * b..34 * b + 34];
            // SAFETY: the block's 32 value bytes follow its 2-byte scale.
            let wv = unsafe { _mm256_loadu_si256(block.as_ptr().add(2).cast()) };
            let dw = block_scale(block);
            let start =
                _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), offset, wv));
            for i in 0..RM {
                let sum = _mm256_dpbusd_epi32(start, xs[i], wv);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dx[i], dw), acc[i][j]);
            }
        }
    }
    store(&acc, rows, columns, out, n);
}

#[target_feature(enable = "avx2,fma,f16c")]
fn avx2_tile(x: &QuantizedRows, rows: Span, w: &QMatrix, columns: Span, out: &mut [f32], n: usize) {
    let (xr, wr) = tile_rows(x, rows, w, columns);
    let mut acc = [[_mm256_setzero_ps(); RN]; RM];
    let ones = _mm256_set1_epi16(1);
    for b in 0..x.k / 32 {
        let mut xs = [_mm256_setzero_si256(); RM];
        let mut dx = [_mm256_setzero_ps(); RM];
        for i in 0..RM {
            // SAFETY: block b of a row of k values.
            xs[i] = unsafe { _mm256_loadu_si256(xr[i].0.as_ptr().add(32 * b).cast()) };
            dx[i] = _mm256_set1_ps(xr[i].1[b]);
        }
        for j in 0..RN {
            let block = &wr[j][34 * b..34 * b + 34];
            // SAFETY: as above.
            let wv = unsafe { _mm256_loadu_si256(block.as_ptr().add(2).cast()) };
            let dw = block_scale(block);
            for i in 0..RM {
                let signed = _mm256_sign_epi8(wv, xs[i]);
                let pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(xs[i]), signed);
                let sum = _mm256_madd_epi16(pairs, ones);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dx[i], dw), acc[i][j]);
            }
        }
    }
    store(&acc, rows, columns, out, n);
}
