//! WebAssembly relaxed SIMD kernels, for the page's second module (built
//! with `--features relaxed-simd`; the page loads it where
//! `WebAssembly.validate` accepts relaxed SIMD, the simd128 one elsewhere).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add_s` is the 8-bit dot product simd128
//! lacks: V8 lowers it to VNNI's `vpdpbusd` where the CPU has it, else to
//! `pmaddubsw` + `pmaddwd`, and to `sdot` on ARM. Its second operand must
//! fit 7 bits (engines read a set top bit as signed or unsigned, as they
//! like), so each product puts a side that does there:
//! - Q4_0/Q4_1: the weights' nibbles (0–15), as they are;
//! - Q8_0 in an embedding pass ([`super::for_embedding`]): the signed
//!   weights against the activations quantized to 7 bits
//!   ([`Bits::Seven`], −63..=63), which offset by 64 are 1–127: one dot a
//!   byte pair, each sum starting at `−64 · Σw` (per block and weight
//!   row, summed when the panel is packed);
//! - Q8_0 otherwise (rerankers, generation: llama.cpp's 8 bits) and for a
//!   decoded token's few rows: the activations split into two
//!   non-negative halves, `x = max(x, 0) − max(−x, 0)` (each 0–127: the
//!   quantizer never writes −128), two dots a byte pair, so every weight
//!   byte, −128 included, is multiplied exactly.
//!
//! No pair of products can saturate (2 · 128 · 127 < 2¹⁵), so each block's
//! integer sum is exact, and it is scaled in the scalar kernel's order:
//! the results equal [`super::scalar`]'s (and the simd128 kernels') bit
//! for bit. With a few activation rows or more, the Q8_0 weights are
//! packed eight rows at a time ([`Panel`], the x86 VNNI kernel's layout),
//! so each lane of a dot sums one output and nothing is summed across
//! lanes; a decoded token's one row takes four weight rows at a time
//! unpacked, their block sums gathered into one vector.

use core::arch::wasm32::*;
use std::ops::Range;

use super::wasm::{add_scaled, f16x4_to_f32, halves_at, q8_0_rows_past, sum4};
use super::{Bits, Q8_0_BLOCK_BYTES, QMatrix, QuantizedRows};
use crate::gguf::GgmlType;

/// `c + Σ a·b` over each lane's four byte pairs (`b` within 0–127), in
/// one of two forms that give the same sums. Fused
/// (`i32x4.relaxed_dot_i8x16_i7x16_add_s`): one `vpdpbusd` where V8 has
/// AVX-VNNI, one `sdot` on ARM, but elsewhere on x86 five instructions,
/// two of them re-making a vector of ones at every dot. Split
/// (`SPLIT_DOT`): the 16-bit pair sums (`i16x8.relaxed_dot_i8x16_i7x16_s`,
/// one `pmaddubsw`), then their pairs summed against ones the loop keeps
/// in a register (`i32x4.dot_i16x8_s`, one `pmaddwd`) and added: three.
/// A pair of products is within ±2 · 128 · 127 < 2¹⁵, so the 16-bit step
/// never saturates and both forms are exact. Which is faster is the
/// CPU's: the relaxed module's Q8_0 trial picks ([`super::race`]).
#[inline]
#[target_feature(enable = "relaxed-simd")]
fn dot<const SPLIT_DOT: bool>(a: v128, b: v128, c: v128) -> v128 {
    if SPLIT_DOT {
        i32x4_add(c, i32x4_dot_i16x8(i16x8_relaxed_dot_i8x16_i7x16(a, b), i16x8_splat(1)))
    } else {
        i32x4_relaxed_dot_i8x16_i7x16_add(a, b, c)
    }
}

/// The dot product's forms, as [`dot`]'s parameter.
const FUSED: bool = false;
const SPLIT: bool = true;

/// The 32-bit words at byte `at` of four rows, one a lane.
#[inline(always)]
fn gather_u32(rows: &[&[u8]; 4], at: usize) -> v128 {
    let word = |row: &[u8]| u32::from_le_bytes(row[at..at + 4].try_into().expect("four bytes"));
    u32x4(word(rows[0]), word(rows[1]), word(rows[2]), word(rows[3]))
}

/// 16 bytes at `bytes`.
#[inline(always)]
fn load(bytes: &[u8]) -> v128 {
    assert!(bytes.len() >= 16);
    // SAFETY: 16 readable bytes (checked).
    unsafe { v128_load(bytes.as_ptr() as *const v128) }
}

/// An activation block's 32 values as `[max(x,0) low, high, max(−x,0) low, high]`.
fn halves(values: &[i8]) -> [v128; 4] {
    let bytes = |v: &[i8]| load(bytemuck_bytes(v));
    let (low, high) = (bytes(&values[..16]), bytes(&values[16..32]));
    let zero = i8x16_splat(0);
    [i8x16_max(low, zero), i8x16_max(high, zero), i8x16_max(i8x16_neg(low), zero), i8x16_max(i8x16_neg(high), zero)]
}

fn bytemuck_bytes(v: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same layout.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len()) }
}

pub fn q8_0_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    q8_0_matmul_with::<FUSED>(x, rows, w, out)
}

/// [`q8_0_matmul`] on the split dot product.
pub fn q8_0_matmul_split(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    q8_0_matmul_with::<SPLIT>(x, rows, w, out)
}

fn q8_0_matmul_with<const SPLIT_DOT: bool>(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // Safe on wasm: a module with relaxed SIMD in it does not validate
    // where the engine lacks it (the page picks the module by that test).
    if rows.len() < PACK_ROWS {
        q8_0_relaxed::<SPLIT_DOT>(x, rows, w, out)
    } else {
        q8_0_packed::<SPLIT_DOT>(x, rows, w, out)
    }
}

/// From this many activation rows on, the weights are packed into
/// [`Panel`]s: for fewer (a decoded token) the packing would cost more
/// than the products it saves.
const PACK_ROWS: usize = 4;
/// Weight rows per panel: two vectors of four outputs.
const PANEL: usize = 8;

/// Eight weight rows of a Q8_0 matrix, interleaved four bytes a row
/// (`[block][group of 4 bytes][row][4 bytes]`), as the x86 VNNI kernel
/// packs its panels: one dot multiplies an activation's four bytes,
/// splatted, with four bytes of each of four rows, so each i32 lane sums
/// one output's block: no horizontal sums, and one scaling per block for
/// four outputs.
struct Panel {
    quants: Vec<u8>,
    /// Per block: the eight rows' scales.
    scales: Vec<f32>,
    /// Per block: the eight rows' `−64 · Σw`, where the sums of
    /// activations offset by 64 start.
    offsets: Vec<i32>,
}

/// What the packed kernel adds to each 7-bit activation: the result fits
/// relaxed SIMD's 7-bit operand.
const OFFSET: i32 = 64;

impl Panel {
    fn new(blocks: usize) -> Panel {
        Panel {
            quants: vec![0; blocks * 8 * PANEL * 4],
            scales: vec![0.0; blocks * PANEL],
            offsets: vec![0; blocks * PANEL],
        }
    }

    /// Rows `first..first + PANEL` of `w`, the last row repeated past the
    /// matrix (those outputs are not stored).
    fn pack(&mut self, w: &QMatrix, first: usize) {
        let rows: [&[u8]; PANEL] = std::array::from_fn(|j| w.row((first + j).min(w.rows - 1)));
        let per_block = self
            .quants
            .chunks_exact_mut(8 * PANEL * 4)
            .zip(self.scales.chunks_exact_mut(PANEL))
            .zip(self.offsets.chunks_exact_mut(PANEL));
        for (b, ((quants, scales), offsets)) in per_block.enumerate() {
            let at = b * Q8_0_BLOCK_BYTES;
            for (offset, row) in offsets.iter_mut().zip(&rows) {
                let sum: i32 = row[at + 2..at + Q8_0_BLOCK_BYTES].iter().map(|&q| i32::from(q as i8)).sum();
                *offset = -OFFSET * sum;
            }
            for (half, scales) in scales.chunks_exact_mut(4).enumerate() {
                let four: [&[u8]; 4] = std::array::from_fn(|j| rows[half * 4 + j]);
                // SAFETY: four floats.
                unsafe { v128_store(scales.as_mut_ptr() as *mut v128, halves_at(&four, at)) };
            }
            for (g, group) in quants.chunks_exact_mut(PANEL * 4).enumerate() {
                for (dst, row) in group.chunks_exact_mut(4).zip(&rows) {
                    dst.copy_from_slice(&row[at + 2 + 4 * g..][..4]);
                }
            }
        }
    }
}

/// A whole Q8_0 matrix in [`Panel`]s, packed once for a product with many
/// activation rows (packing per task of rows, as [`q8_0_packed`] does,
/// repacks every weight for every task).
pub struct PackedMatrix {
    panels: Vec<Panel>,
    rows: usize,
}

/// `w` packed for [`matmul_packed`]. (Always `Some`: the x86 packer it
/// stands beside answers `None` where the CPU lacks its instructions.)
pub fn pack(w: &QMatrix) -> Option<PackedMatrix> {
    let panels = (0..w.rows)
        .step_by(PANEL)
        .map(|c| {
            let mut panel = Panel::new(w.cols / 32);
            panel.pack(w, c);
            panel
        })
        .collect();
    Some(PackedMatrix { panels, rows: w.rows })
}

pub fn matmul_packed(x: &QuantizedRows, rows: Range<usize>, packed: &PackedMatrix, out: &mut [f32]) {
    matmul_packed_with::<FUSED>(x, rows, packed, out)
}

/// [`matmul_packed`] on the split dot product.
pub fn matmul_packed_split(x: &QuantizedRows, rows: Range<usize>, packed: &PackedMatrix, out: &mut [f32]) {
    matmul_packed_with::<SPLIT>(x, rows, packed, out)
}

fn matmul_packed_with<const SPLIT_DOT: bool>(
    x: &QuantizedRows,
    rows: Range<usize>,
    packed: &PackedMatrix,
    out: &mut [f32],
) {
    over_panels::<SPLIT_DOT>(x, rows, packed.rows, out, |run| {
        packed.panels.iter().enumerate().for_each(|(p, panel)| run(panel, p * PANEL));
    });
}

/// Packs each panel of `w` in turn and runs every activation row over it:
/// for a task with too few rows to pack the whole matrix for.
fn q8_0_packed<const SPLIT_DOT: bool>(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    over_panels::<SPLIT_DOT>(x, rows, w.rows, out, |run| {
        let mut panel = Panel::new(w.cols / 32);
        for c in (0..w.rows).step_by(PANEL) {
            panel.pack(w, c);
            run(&panel, c);
        }
    });
}

/// Runs the activation rows `rows` of `x` (in the block form of their
/// width) over each panel that `panels` hands its argument, with the
/// panel's first output column; the outputs are `columns` wide.
fn over_panels<const SPLIT_DOT: bool>(
    x: &QuantizedRows,
    rows: Range<usize>,
    columns: usize,
    out: &mut [f32],
    panels: impl FnOnce(&mut dyn FnMut(&Panel, usize)),
) {
    match x.bits {
        Bits::Seven => {
            let rows = PanelRows::<Offset>::new(x, rows);
            panels(&mut |panel, c| panel_rows::<OFFSET_RM, SPLIT_DOT, _>(&rows, panel, c, columns, out));
        }
        Bits::Eight => {
            let rows = PanelRows::<Halves>::new(x, rows);
            panels(&mut |panel, c| panel_rows::<HALVES_RM, SPLIT_DOT, _>(&rows, panel, c, columns, out));
        }
    }
}

/// A block of activations in the form a panel kernel multiplies, and
/// that kernel.
trait PanelBlock: Copy {
    fn of(values: &[i8]) -> Self;

    /// `R` activation rows (their blocks from `blocks`, block scales from
    /// `scales`) against one panel: each row's eight outputs.
    fn tile<const R: usize, const SPLIT_DOT: bool>(blocks: &[Self], scales: &[&[f32]], panel: &Panel)
    -> [[v128; 2]; R];
}

/// A 7-bit block offset by [`OFFSET`]: two vectors of 1–127, one dot a
/// byte pair.
#[derive(Clone, Copy)]
struct Offset([v128; 2]);

/// An 8-bit block as two non-negative halves ([`halves`]): four vectors,
/// two dots a byte pair.
#[derive(Clone, Copy)]
struct Halves([v128; 4]);

/// Activation rows per pass over a panel, 7-bit: their eight sums, the
/// panel's two vectors and an activation fit V8's sixteen SIMD registers
/// (MiniLM in the page, 2 Workers: 21.6 texts/s at 4, 21.2 at 3, 20.3 at
/// 2).
const OFFSET_RM: usize = 4;
/// The same for 8-bit blocks, whose rows take sixteen sums at four.
const HALVES_RM: usize = 2;

impl PanelBlock for Offset {
    fn of(values: &[i8]) -> Offset {
        let offset = |v: &[i8]| i8x16_add(load(bytemuck_bytes(v)), i8x16_splat(OFFSET as i8));
        Offset([offset(&values[..16]), offset(&values[16..32])])
    }

    fn tile<const R: usize, const SPLIT_DOT: bool>(
        blocks: &[Offset],
        scales: &[&[f32]],
        panel: &Panel,
    ) -> [[v128; 2]; R] {
        offset_tile::<R, SPLIT_DOT>(blocks, scales, panel)
    }
}

impl PanelBlock for Halves {
    fn of(values: &[i8]) -> Halves {
        Halves(halves(values))
    }

    fn tile<const R: usize, const SPLIT_DOT: bool>(
        blocks: &[Halves],
        scales: &[&[f32]],
        panel: &Panel,
    ) -> [[v128; 2]; R] {
        halves_tile::<R, SPLIT_DOT>(blocks, scales, panel)
    }
}

/// Activation rows as a panel kernel reads them: their blocks in form
/// `B`, and each row's block scales.
struct PanelRows<'x, B> {
    blocks: Vec<B>,
    scales: Vec<&'x [f32]>,
}

impl<'x, B: PanelBlock> PanelRows<'x, B> {
    fn new(x: &'x QuantizedRows, rows: Range<usize>) -> PanelRows<'x, B> {
        PanelRows {
            blocks: rows.clone().flat_map(|r| x.row(r).0.chunks_exact(32).map(B::of)).collect(),
            scales: rows.map(|r| x.row(r).1).collect(),
        }
    }
}

/// Every row of `rows` over the panel of output columns from `c` (of
/// `n`), `R` rows at a time. Each block's integer sums are those of the
/// unpacked kernel, scaled in the same order: the same floats, bit for
/// bit.
#[target_feature(enable = "relaxed-simd")]
fn panel_rows<const R: usize, const SPLIT_DOT: bool, B: PanelBlock>(
    rows: &PanelRows<B>,
    panel: &Panel,
    c: usize,
    n: usize,
    out: &mut [f32],
) {
    let (count, blocks) = (rows.scales.len(), panel.scales.len() / PANEL);
    let width = PANEL.min(n - c);
    let mut i = 0;
    while i < count {
        let take = if count - i >= R { R } else { 1 };
        let (blocks_from, scales_from) = (&rows.blocks[i * blocks..], &rows.scales[i..]);
        let sums: [[v128; 2]; R] = if take == R {
            B::tile::<R, SPLIT_DOT>(blocks_from, scales_from, panel)
        } else {
            let [one] = B::tile::<1, SPLIT_DOT>(blocks_from, scales_from, panel);
            [one; R]
        };
        for (j, sums) in sums.iter().enumerate().take(take) {
            store_outputs(sums, &mut out[(i + j) * n + c..][..width]);
        }
        i += take;
    }
}

/// A row's outputs of one panel (`out`: eight, or fewer at the matrix's
/// edge) stored from its two vectors. Straight stores: a copy of a
/// variable length was a `memory.copy`, which V8 runs as a call to
/// memmove, 9% of the page's embedding time for 32 bytes a call.
#[inline(always)]
fn store_outputs(sums: &[v128; 2], out: &mut [f32]) {
    if let Ok(out) = <&mut [f32; PANEL]>::try_from(&mut *out) {
        // SAFETY: eight floats.
        unsafe {
            v128_store(out.as_mut_ptr() as *mut v128, sums[0]);
            v128_store(out.as_mut_ptr().add(4) as *mut v128, sums[1]);
        }
        return;
    }
    let mut lanes = [0f32; PANEL];
    // SAFETY: eight floats.
    unsafe {
        v128_store(lanes.as_mut_ptr() as *mut v128, sums[0]);
        v128_store(lanes.as_mut_ptr().add(4) as *mut v128, sums[1]);
    }
    out.iter_mut().zip(lanes).for_each(|(o, v)| *o = v);
}

/// A panel's eight weight scales of block `b`, as two vectors.
#[inline(always)]
fn weight_scales(panel: &Panel, b: usize) -> [v128; 2] {
    let scales = &panel.scales[b * PANEL..][..PANEL];
    // SAFETY: eight floats.
    unsafe { [v128_load(scales.as_ptr() as *const v128), v128_load(scales.as_ptr().add(4) as *const v128)] }
}

/// A panel block's bytes, hidden from LLVM so it keeps the loop over
/// their eight groups rolled: unrolled, the loop's loads all came first
/// in V8's schedule and half the sums spilled to the stack. Rolled, the
/// page embedded 1.2× (8-bit activations) to 1.8× (7-bit, four rows a
/// pass) faster on an AVX-VNNI Xeon.
#[inline(always)]
fn rolled(quants: &[u8]) -> std::slice::ChunksExact<'_, u8> {
    std::hint::black_box(quants).chunks_exact(PANEL * 4)
}

#[target_feature(enable = "relaxed-simd")]
fn offset_tile<const R: usize, const SPLIT_DOT: bool>(
    blocks: &[Offset],
    scales: &[&[f32]],
    panel: &Panel,
) -> [[v128; 2]; R] {
    let count = panel.scales.len() / PANEL;
    let mut acc = [[f32x4_splat(0.0); 2]; R];
    for (b, (quants, offsets)) in
        panel.quants.chunks_exact(8 * PANEL * 4).zip(panel.offsets.chunks_exact(PANEL)).enumerate()
    {
        let xs: [*const u8; R] = std::array::from_fn(|i| blocks[i * count + b].0.as_ptr() as *const u8);
        // SAFETY: eight offsets a block.
        let start =
            unsafe { [v128_load(offsets.as_ptr() as *const v128), v128_load(offsets.as_ptr().add(4) as *const v128)] };
        let mut sums = [start; R];
        for (g, group) in rolled(quants).enumerate() {
            let (w0, w1) = (load(&group[..16]), load(&group[16..]));
            for i in 0..R {
                // SAFETY: byte 4g of a 32-byte block, g < 8.
                let x = unsafe { v128_load32_splat(xs[i].add(4 * g) as *const u32) };
                sums[i] = [dot::<SPLIT_DOT>(w0, x, sums[i][0]), dot::<SPLIT_DOT>(w1, x, sums[i][1])];
            }
        }
        let dw = weight_scales(panel, b);
        for i in 0..R {
            for h in 0..2 {
                acc[i][h] = add_scaled(acc[i][h], sums[i][h], scales[i][b], dw[h]);
            }
        }
    }
    acc
}

#[target_feature(enable = "relaxed-simd")]
fn halves_tile<const R: usize, const SPLIT_DOT: bool>(
    blocks: &[Halves],
    scales: &[&[f32]],
    panel: &Panel,
) -> [[v128; 2]; R] {
    let count = panel.scales.len() / PANEL;
    let zero = i32x4_splat(0);
    let mut acc = [[f32x4_splat(0.0); 2]; R];
    for (b, quants) in panel.quants.chunks_exact(8 * PANEL * 4).enumerate() {
        // Each row's block as bytes: 32 of max(x, 0), then 32 of max(−x, 0).
        let xs: [*const u8; R] = std::array::from_fn(|i| blocks[i * count + b].0.as_ptr() as *const u8);
        let (mut pos, mut neg) = ([[zero; 2]; R], [[zero; 2]; R]);
        for (g, group) in rolled(quants).enumerate() {
            let (w0, w1) = (load(&group[..16]), load(&group[16..]));
            for i in 0..R {
                // SAFETY: byte 4g (and 32 + 4g) of a 64-byte block, g < 8.
                let (p, n) = unsafe {
                    (
                        v128_load32_splat(xs[i].add(4 * g) as *const u32),
                        v128_load32_splat(xs[i].add(32 + 4 * g) as *const u32),
                    )
                };
                pos[i] = [dot::<SPLIT_DOT>(w0, p, pos[i][0]), dot::<SPLIT_DOT>(w1, p, pos[i][1])];
                neg[i] = [dot::<SPLIT_DOT>(w0, n, neg[i][0]), dot::<SPLIT_DOT>(w1, n, neg[i][1])];
            }
        }
        let dw = weight_scales(panel, b);
        for i in 0..R {
            for h in 0..2 {
                acc[i][h] = add_scaled(acc[i][h], i32x4_sub(pos[i][h], neg[i][h]), scales[i][b], dw[h]);
            }
        }
    }
    acc
}

#[target_feature(enable = "relaxed-simd")]
fn q8_0_relaxed<const SPLIT_DOT: bool>(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    let blocks = w.cols / 32;
    let split: Vec<[v128; 4]> = rows.clone().flat_map(|r| x.row(r).0.chunks_exact(32).map(halves)).collect();
    let full = w.rows / 4 * 4;
    let mut weight_scales = vec![f32x4_splat(0.0); blocks];
    for c in (0..full).step_by(4) {
        let weights = [w.row(c), w.row(c + 1), w.row(c + 2), w.row(c + 3)];
        // A decoded token's one row converts each block's scales where it
        // reads the block (as [`q4_relaxed`]).
        let precomputed = rows.len() > 1;
        if precomputed {
            for (b, scale) in weight_scales.iter_mut().enumerate() {
                *scale = halves_at(&weights, b * Q8_0_BLOCK_BYTES);
            }
        }
        for (i, (r, out)) in rows.clone().zip(out.chunks_exact_mut(w.rows)).enumerate() {
            let scales = x.row(r).1;
            let mut sums = f32x4_splat(0.0);
            for (b, &[pos_low, pos_high, neg_low, neg_high]) in split[i * blocks..][..blocks].iter().enumerate() {
                let dw = if precomputed { weight_scales[b] } else { halves_at(&weights, b * Q8_0_BLOCK_BYTES) };
                let row_dot = |j: usize| {
                    let q = &weights[j][b * Q8_0_BLOCK_BYTES + 2..][..32];
                    let (low, high) = (load(&q[..16]), load(&q[16..]));
                    let zero = i32x4_splat(0);
                    i32x4_sub(
                        dot::<SPLIT_DOT>(high, pos_high, dot::<SPLIT_DOT>(low, pos_low, zero)),
                        dot::<SPLIT_DOT>(high, neg_high, dot::<SPLIT_DOT>(low, neg_low, zero)),
                    )
                };
                let ints = sum4(row_dot(0), row_dot(1), row_dot(2), row_dot(3));
                sums = add_scaled(sums, ints, scales[b], dw);
            }
            // SAFETY: `c + 3 < full <= out.len()`.
            unsafe { v128_store(out[c..c + 4].as_mut_ptr() as *mut v128, sums) };
        }
    }
    q8_0_rows_past(full, x, rows, w, out);
}

/// Q4_0 or Q4_1 weights × Q8_0/Q8_1 activations: the nibbles are the
/// 7-bit operand as they are; Q4_0's −8 is taken off in integers
/// (`−8 · Σx`), Q4_1's minimum times the activations' scaled sum, each in
/// the scalar kernel's order.
pub fn q4_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    q4_relaxed(x, rows, w, out)
}

#[target_feature(enable = "relaxed-simd")]
fn q4_relaxed(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    let q4_1 = w.kind == GgmlType::Q4_1;
    let (block_bytes, nibbles) = if q4_1 { (20, 4) } else { (18, 2) };
    let blocks = w.cols / 32;
    let full = w.rows / 4 * 4;
    let mut weight_factors = vec![(f32x4_splat(0.0), f32x4_splat(0.0)); blocks];
    for c in (0..full).step_by(4) {
        let weights = [w.row(c), w.row(c + 1), w.row(c + 2), w.row(c + 3)];
        // A block opens with its f16 scale (then Q4_1's minimum): one word
        // a row holds both.
        let factors = |b: usize| {
            let words = gather_u32(&weights, b * block_bytes);
            let minimum = if q4_1 { f16x4_to_f32(u32x4_shr(words, 16)) } else { f32x4_splat(0.0) };
            (f16x4_to_f32(words), minimum)
        };
        // A decoded token's one row takes each block's factors where it
        // reads the block's bytes: one pass over the weights, not two
        // (SmolLM2 Q4_1 decoded about 5% faster in the page).
        let precomputed = rows.len() > 1;
        if precomputed {
            for (b, f) in weight_factors.iter_mut().enumerate() {
                *f = factors(b);
            }
        }
        for (i, r) in rows.clone().enumerate() {
            let (values, scales) = x.row(r);
            let (sums, scaled_sums) = (&x.sums[r * blocks..][..blocks], x.scaled_sums(r));
            let (mut products, mut minimums) = (f32x4_splat(0.0), f32x4_splat(0.0));
            for b in 0..blocks {
                let (dw, mw) = if precomputed { weight_factors[b] } else { factors(b) };
                let xs = bytemuck_bytes(&values[b * 32..][..32]);
                let (x_low, x_high) = (load(&xs[..16]), load(&xs[16..]));
                let row_dot = |j: usize| {
                    let q = load(&weights[j][b * block_bytes + nibbles..][..16]);
                    let (low, high) = (v128_and(q, u8x16_splat(0x0f)), u8x16_shr(q, 4));
                    dot::<FUSED>(x_high, high, dot::<FUSED>(x_low, low, i32x4_splat(0)))
                };
                let mut ints = sum4(row_dot(0), row_dot(1), row_dot(2), row_dot(3));
                if q4_1 {
                    minimums = f32x4_add(minimums, f32x4_mul(mw, f32x4_splat(scaled_sums[b])));
                } else {
                    ints = i32x4_sub(ints, i32x4_splat(8 * sums[b]));
                }
                products = add_scaled(products, ints, scales[b], dw);
            }
            let out = &mut out[i * w.rows + c..][..4];
            // SAFETY: four floats.
            unsafe { v128_store(out.as_mut_ptr() as *mut v128, f32x4_add(products, minimums)) };
        }
    }
    for (i, r) in rows.enumerate() {
        let (values, scales) = x.row(r);
        for c in full..w.rows {
            out[i * w.rows + c] = if q4_1 {
                super::scalar::dot_q4_1(values, scales, x.scaled_sums(r), w.row(c))
            } else {
                super::scalar::dot_q4_0(values, scales, w.row(c))
            };
        }
    }
}
