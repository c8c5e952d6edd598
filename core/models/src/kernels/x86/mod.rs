//! x86-64 kernels for Q8_0 weights × Q8_0 activations.
//!
//! - AVX-512 VNNI (`vpdpbusd`, on 256-bit registers), on packed panels:
//!   16 weight rows at a time are copied into a small buffer, interleaved
//!   four bytes per row (`[block][group of 4][row][4 bytes]`), so one
//!   `vpdpbusd` multiplies four activation bytes, broadcast, with four
//!   bytes of each of 8 weight rows, and every i32 lane sums one output's
//!   block: no horizontal sums, and the float scaling happens once per
//!   block for 8 outputs instead of once per output. `vpdpbusd` takes
//!   unsigned × signed bytes, so the packed weights are offset to
//!   `w + 128` and the offset's share, `128 · Σx` per activation block,
//!   is taken off by starting the sum at its negation; the sums are exact
//!   in i32, as in ggml. The panel (about 20 KB for 1,152 inputs) stays
//!   in L1 while every activation row of the task passes over it.
//! - AVX2: a tile of activation rows by a tile of weight rows, block by
//!   block, one 8-lane accumulator per pair, with ggml's sign trick (`|w|`
//!   times `x` with `w`'s sign: exact for a −128 weight too), summed by
//!   `vpmaddubsw` (no overflow: 2 · 128 · 127 < 2¹⁵) and `vpmaddwd`. (The offset trick would overflow
//!   `vpmaddubsw`'s 16-bit sums.)

mod q4;

use std::arch::x86_64::*;
use std::ops::Range;

use super::dispatch::{self, Level};
use super::{Q8_0_BLOCK_BYTES, Q8Kernel, QMatrix, QuantizedRows};

/// The widest kernel this CPU runs, and its instruction set's name.
pub fn q8_0_kernel() -> Option<(Q8Kernel, &'static str)> {
    match Level::current() {
        Level::Avx512Vnni => Some((vnni_matmul, "AVX-512 VNNI")),
        Level::Avx2 => Some((avx2_matmul, "AVX2")),
        Level::Portable => None,
    }
}

/// Activation rows per tile.
const RM: usize = 4;
/// Weight rows per tile.
const RN: usize = 4;

pub fn vnni_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    if rows.len() < PANEL_RM {
        // Too few rows to pay for packing the panels (a decoded token).
        return avx2_matmul(x, rows, w, out);
    }
    let mut panel = Panel::new(x.k / 32);
    for c in (0..w.rows).step_by(PANEL) {
        let columns = (c, PANEL.min(w.rows - c));
        panel.pack(w, columns);
        panel_rows(x, rows.clone(), &panel, columns, out, w.rows);
    }
}

/// A whole Q8_0 matrix packed into [`Panel`]s once, for a product with
/// many activation rows: packing per task of rows (as [`vnni_matmul`]
/// does) repacked every weight for every 64 rows, a fifth of a rerank
/// pass in `perf`.
pub struct PackedMatrix {
    panels: Vec<Panel>,
    rows: usize,
}

/// `w` packed for [`vnni_matmul_packed`], the panels spread over the
/// cores; `None` where the CPU lacks AVX-512 VNNI.
pub fn pack_for_vnni(w: &QMatrix) -> Option<PackedMatrix> {
    if !dispatch::avx512_vnni() {
        return None;
    }
    let starts: Vec<usize> = (0..w.rows).step_by(PANEL).collect();
    let panels = crate::kernels::parallel::map(&starts, |&c| {
        let mut panel = Panel::new(w.cols / 32);
        panel.pack(w, (c, PANEL.min(w.rows - c)));
        Ok(panel)
    })
    .expect("packing does not fail");
    Some(PackedMatrix { panels, rows: w.rows })
}

pub fn vnni_matmul_packed(x: &QuantizedRows, rows: Range<usize>, packed: &PackedMatrix, out: &mut [f32]) {
    for (p, panel) in packed.panels.iter().enumerate() {
        let c = p * PANEL;
        panel_rows(x, rows.clone(), panel, (c, PANEL.min(packed.rows - c)), out, packed.rows);
    }
}

/// Every activation row of `rows` against one packed panel.
fn panel_rows(x: &QuantizedRows, rows: Range<usize>, panel: &Panel, columns: Span, out: &mut [f32], n: usize) {
    let first_row = rows.start;
    for r in rows.clone().step_by(PANEL_RM) {
        let count = PANEL_RM.min(rows.end - r);
        let out = &mut out[(r - first_row) * n..];
        // SAFETY: panels exist only where `q8_0_kernel` found the features.
        unsafe { vnni_panel_tile(x, (r, count), panel, columns, out, n) };
    }
}

/// Weight rows per packed panel: two 8-lane registers of outputs.
const PANEL: usize = 16;
/// Activation rows per pass over a panel: 2 × 6 sums and 2 × 6
/// accumulators, in AVX-512VL's 32 registers.
const PANEL_RM: usize = 6;

/// 16 weight rows of a Q8_0 matrix, interleaved for [`vnni_panel_tile`].
struct Panel {
    /// Per block: 8 groups × 16 rows × 4 bytes, each byte `w + 128`.
    quants: Vec<u8>,
    /// Per block: the 16 rows' scales (0 for rows past the matrix).
    scales: Vec<f32>,
}

impl Panel {
    fn new(blocks: usize) -> Panel {
        Panel { quants: vec![0; blocks * 8 * PANEL * 4], scales: vec![0.0; blocks * PANEL] }
    }

    fn pack(&mut self, w: &QMatrix, columns: Span) {
        // Rows past the matrix multiply as zeros (128 is an offset 0).
        self.quants.fill(0x80);
        self.scales.fill(0.0);
        for j in 0..columns.1 {
            let row = w.row(columns.0 + j);
            for (b, block) in row.chunks_exact(Q8_0_BLOCK_BYTES).enumerate() {
                self.scales[b * PANEL + j] = crate::gguf::half_at(block, 0);
                for (g, four) in block[2..].chunks_exact(4).enumerate() {
                    let at = ((b * 8 + g) * PANEL + j) * 4;
                    for (dst, src) in self.quants[at..at + 4].iter_mut().zip(four) {
                        *dst = src ^ 0x80;
                    }
                }
            }
        }
    }
}

#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
fn vnni_panel_tile(x: &QuantizedRows, rows: Span, panel: &Panel, columns: Span, out: &mut [f32], n: usize) {
    let blocks = x.k / 32;
    let row_of = |i: usize| rows.0 + i.min(rows.1 - 1);
    let xr: [(&[i8], &[f32]); PANEL_RM] = std::array::from_fn(|i| x.row(row_of(i)));
    let sums: [&[i32]; PANEL_RM] = std::array::from_fn(|i| &x.sums[row_of(i) * blocks..(row_of(i) + 1) * blocks]);
    let mut acc = [[_mm256_setzero_ps(); 2]; PANEL_RM];
    let per_block = panel.quants.chunks_exact(8 * PANEL * 4).zip(panel.scales.chunks_exact(PANEL));
    for (b, (quants, scales)) in per_block.enumerate() {
        let mut sum: [[__m256i; 2]; PANEL_RM] = std::array::from_fn(|i| [_mm256_set1_epi32(-128 * sums[i][b]); 2]);
        for g in 0..8 {
            // SAFETY: group g of the block holds 16 rows × 4 bytes.
            let (w0, w1) = unsafe {
                let at = quants.as_ptr().add(g * PANEL * 4);
                (_mm256_loadu_si256(at.cast()), _mm256_loadu_si256(at.add(32).cast()))
            };
            for i in 0..PANEL_RM {
                let four = &xr[i].0[32 * b + 4 * g..32 * b + 4 * g + 4];
                let xv =
                    _mm256_set1_epi32(i32::from_le_bytes([four[0] as u8, four[1] as u8, four[2] as u8, four[3] as u8]));
                sum[i][0] = _mm256_dpbusd_epi32(sum[i][0], w0, xv);
                sum[i][1] = _mm256_dpbusd_epi32(sum[i][1], w1, xv);
            }
        }
        // SAFETY: 16 scales per block.
        let (dw0, dw1) = unsafe { (_mm256_loadu_ps(scales.as_ptr()), _mm256_loadu_ps(scales.as_ptr().add(8))) };
        for i in 0..PANEL_RM {
            let dx = _mm256_set1_ps(xr[i].1[b]);
            acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i][0]), _mm256_mul_ps(dx, dw0), acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i][1]), _mm256_mul_ps(dx, dw1), acc[i][1]);
        }
    }
    for (i, acc) in acc.iter().enumerate().take(rows.1) {
        let out = &mut out[i * n + columns.0..i * n + columns.0 + columns.1];
        // Straight stores: a copy of a variable length here was a call to
        // memmove a row, 15% of an embedding pass's time.
        if let Ok(out) = <&mut [f32; PANEL]>::try_from(&mut *out) {
            // SAFETY: 16 floats.
            unsafe {
                _mm256_storeu_ps(out.as_mut_ptr(), acc[0]);
                _mm256_storeu_ps(out.as_mut_ptr().add(8), acc[1]);
            }
            continue;
        }
        let mut lanes = [0f32; PANEL];
        // SAFETY: 16 floats.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(lanes.as_mut_ptr().add(8), acc[1]);
        }
        out.iter_mut().zip(lanes).for_each(|(o, v)| *o = v);
    }
}

pub use q4::avx2_q4_matmul;

/// The Q4_0/Q4_1 kernel this CPU runs, if it has one.
pub fn q4_kernel() -> Option<Q8Kernel> {
    q4::available().then_some(avx2_q4_matmul as Q8Kernel)
}

pub fn avx2_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen by `q8_0_kernel` only where the CPU has the features.
    tiles(rows, w.rows, out, |(first, count), columns, out| unsafe {
        match count {
            RM => avx2_tile::<RM>(x, first, w, columns, out),
            _ => avx2_tile::<1>(x, first, w, columns, out),
        }
    });
}

/// Which rows a tile covers: `(first, count)` of activations and weights.
type Span = (usize, usize);

/// Walks the output in tiles: weight tiles outside (each read once per
/// call), activation tiles inside (they stay in L1 across weight tiles),
/// [`RM`] rows at a time and then the rest one by one: padding a decoded
/// token's single row to a full tile would multiply it [`RM`] times.
fn tiles(rows: Range<usize>, n: usize, out: &mut [f32], tile: impl Fn(Span, Span, &mut [f32])) {
    let whole = rows.start + rows.len() / RM * RM;
    let groups = (rows.start..whole).step_by(RM).map(|r| (r, RM)).chain((whole..rows.end).map(|r| (r, 1)));
    let groups: Vec<Span> = groups.collect();
    for c in (0..n).step_by(RN) {
        let columns = (c, RN.min(n - c));
        for &(r, count) in &groups {
            tile((r, count), columns, &mut out[(r - rows.start) * n..]);
        }
    }
}

/// One activation row: its values and its block scales.
type XRow<'a> = (&'a [i8], &'a [f32]);

/// The `R` activation rows from `first` and the weight rows of a tile,
/// padded to [`RN`] by repeating the last one (its results are not stored).
fn tile_rows<'a, const R: usize>(
    x: &'a QuantizedRows,
    first: usize,
    w: &QMatrix<'a>,
    columns: Span,
) -> ([XRow<'a>; R], [&'a [u8]; RN]) {
    let xr = std::array::from_fn(|i| x.row(first + i));
    let wr = std::array::from_fn(|j| w.row(columns.0 + j.min(columns.1 - 1)));
    (xr, wr)
}

/// Stores a tile's sums plus `extra` (`out` starts at the tile's first
/// row, `n` outputs a row).
#[target_feature(enable = "avx2")]
fn store<const R: usize>(acc: &[[__m256; RN]; R], extra: &[[f32; RN]; R], columns: Span, out: &mut [f32], n: usize) {
    for (i, (acc, extra)) in acc.iter().zip(extra).enumerate() {
        for (j, (acc, extra)) in acc.iter().zip(extra).enumerate().take(columns.1) {
            out[i * n + columns.0 + j] = sum_lanes(*acc) + extra;
        }
    }
}

#[target_feature(enable = "avx2")]
pub(super) fn sum_lanes(v: __m256) -> f32 {
    let pair = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let pair = _mm_add_ps(pair, _mm_movehl_ps(pair, pair));
    _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)))
}

/// The little-endian f16 at `at`, converted by F16C (the `half` crate's
/// portable conversion costs more than a block's products).
#[target_feature(enable = "f16c")]
pub(super) fn half_at(bytes: &[u8], at: usize) -> f32 {
    let bits = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(bits))))
}

/// A weight block's f16 scale.
#[target_feature(enable = "f16c")]
fn block_scale(block: &[u8]) -> __m256 {
    _mm256_cvtph_ps(_mm_set1_epi16(i16::from_le_bytes([block[0], block[1]])))
}

#[target_feature(enable = "avx2,fma,f16c")]
fn avx2_tile<const R: usize>(x: &QuantizedRows, first: usize, w: &QMatrix, columns: Span, out: &mut [f32]) {
    let (xr, wr) = tile_rows::<R>(x, first, w, columns);
    let mut acc = [[_mm256_setzero_ps(); RN]; R];
    let ones = _mm256_set1_epi16(1);
    for b in 0..x.k / 32 {
        let mut xs = [_mm256_setzero_si256(); R];
        let mut dx = [_mm256_setzero_ps(); R];
        for i in 0..R {
            // SAFETY: block b of a row of k values.
            xs[i] = unsafe { _mm256_loadu_si256(xr[i].0.as_ptr().add(32 * b).cast()) };
            dx[i] = _mm256_set1_ps(xr[i].1[b]);
        }
        for j in 0..RN {
            let block = &wr[j][Q8_0_BLOCK_BYTES * b..][..Q8_0_BLOCK_BYTES];
            // SAFETY: as above.
            let wv = unsafe { _mm256_loadu_si256(block.as_ptr().add(2).cast()) };
            // ggml's way round: |w| (−128's is 0x80, read as 128 unsigned)
            // times x with w's sign (x is never −128), exact for every
            // weight byte; |x| times w·sign(x) wrapped −128's sign.
            let magnitude = _mm256_abs_epi8(wv);
            let dw = block_scale(block);
            for i in 0..R {
                let signed = _mm256_sign_epi8(xs[i], wv);
                let pairs = _mm256_maddubs_epi16(magnitude, signed);
                let sum = _mm256_madd_epi16(pairs, ones);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dx[i], dw), acc[i][j]);
            }
        }
    }
    store(&acc, &[[0.0; RN]; R], columns, out, w.rows);
}
