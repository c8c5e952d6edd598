//! Activations quantized to 8 bits, as llama.cpp quantizes them before a
//! product with quantized weights (`quantize_row_q8_0`, and `_q8_1` for
//! Q4_1 weights): per block of 32, the scale `d = max|x| / 127` (kept as
//! f16, as ggml stores it) and the values rounded to `x · 127 / max|x|`,
//! ties to even; Q8_1 adds `d · Σ values` (as f16).

use half::f16;

use crate::model::attention::round_to_even;

pub struct QuantizedRows {
    /// Values, `k` per row.
    pub values: Vec<i8>,
    /// One scale per block of 32, `k / 32` per row.
    pub scales: Vec<f32>,
    /// Each block's sum of values (what the VNNI kernel's weight offset
    /// adds, taken off again).
    pub sums: Vec<i32>,
    /// Each block's Q8_1 sum term: `d · Σ values` rounded to f16, with
    /// the unrounded `d` (what a Q4_1 block's minimum multiplies).
    pub scaled_sums: Vec<f32>,
    pub k: usize,
}

impl QuantizedRows {
    pub fn quantize(x: &[f32], k: usize) -> QuantizedRows {
        assert!(k.is_multiple_of(32), "rows of {k} are not whole Q8_0 blocks");
        let mut values = vec![0i8; x.len()];
        let mut scales = vec![0f32; x.len() / 32];
        let mut sums = vec![0i32; x.len() / 32];
        let mut scaled_sums = vec![0f32; x.len() / 32];
        // Rows per task, spread over the cores like the products.
        let rows = 64;
        let mut pieces: Vec<Piece> = values
            .chunks_mut(rows * k)
            .zip(scales.chunks_mut(rows * k / 32))
            .zip(sums.chunks_mut(rows * k / 32))
            .zip(scaled_sums.chunks_mut(rows * k / 32))
            .map(|(((values, scales), sums), scaled_sums)| Piece { values, scales, sums, scaled_sums })
            .collect();
        crate::model::parallel::chunks_mut(&mut pieces, 1, |i, piece| {
            let piece = &mut piece[0];
            quantize_blocks(&x[i * rows * k..][..piece.values.len()], piece);
        });
        QuantizedRows { values, scales, sums, scaled_sums, k }
    }

    pub fn row(&self, r: usize) -> (&[i8], &[f32]) {
        let blocks = self.k / 32;
        (&self.values[r * self.k..(r + 1) * self.k], &self.scales[r * blocks..(r + 1) * blocks])
    }

    /// Row `r`'s Q8_1 sum terms.
    pub fn scaled_sums(&self, r: usize) -> &[f32] {
        let blocks = self.k / 32;
        &self.scaled_sums[r * blocks..(r + 1) * blocks]
    }
}

/// One task's share of the output buffers.
struct Piece<'a> {
    values: &'a mut [i8],
    scales: &'a mut [f32],
    sums: &'a mut [i32],
    scaled_sums: &'a mut [f32],
}

fn quantize_blocks(x: &[f32], piece: &mut Piece) {
    let Piece { values, scales, sums, scaled_sums } = piece;
    let outputs = scales.iter_mut().zip(sums.iter_mut()).zip(scaled_sums.iter_mut());
    for ((block, q), ((scale, sum), scaled_sum)) in x.chunks_exact(32).zip(values.chunks_exact_mut(32)).zip(outputs) {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        // ggml's x86 code takes 127/max, not 1/d: they differ in the last
        // bit now and then, which moves a value sitting on a rounding edge.
        let inverse = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        for (q, v) in q.iter_mut().zip(block) {
            *q = round_to_even(v * inverse) as i8;
        }
        *scale = f16::from_f32(d).to_f32();
        *sum = q.iter().map(|&v| i32::from(v)).sum();
        *scaled_sum = f16::from_f32(d * *sum as f32).to_f32();
    }
}
