//! Activations quantized to Q8_0, as llama.cpp quantizes them before a
//! product with Q8_0 weights (`quantize_row_q8_0`): per block of 32, the
//! scale `d = max|x| / 127` (kept as f16, as ggml stores it) and the
//! values rounded to `x / d`.

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
    pub k: usize,
}

impl QuantizedRows {
    pub fn quantize(x: &[f32], k: usize) -> QuantizedRows {
        assert!(k.is_multiple_of(32), "rows of {k} are not whole Q8_0 blocks");
        let mut values = vec![0i8; x.len()];
        let mut scales = vec![0f32; x.len() / 32];
        let mut sums = vec![0i32; x.len() / 32];
        // Rows per task, spread over the cores like the products.
        let rows = 64;
        let mut pieces: Vec<(&mut [i8], &mut [f32], &mut [i32])> = values
            .chunks_mut(rows * k)
            .zip(scales.chunks_mut(rows * k / 32))
            .zip(sums.chunks_mut(rows * k / 32))
            .map(|((v, s), t)| (v, s, t))
            .collect();
        crate::model::parallel::chunks_mut(&mut pieces, 1, |i, piece| {
            let (values, scales, sums) = &mut piece[0];
            quantize_blocks(&x[i * rows * k..][..values.len()], values, scales, sums);
        });
        QuantizedRows { values, scales, sums, k }
    }

    pub fn row(&self, r: usize) -> (&[i8], &[f32]) {
        let blocks = self.k / 32;
        (&self.values[r * self.k..(r + 1) * self.k], &self.scales[r * blocks..(r + 1) * blocks])
    }
}

fn quantize_blocks(x: &[f32], values: &mut [i8], scales: &mut [f32], sums: &mut [i32]) {
    let blocks = x.chunks_exact(32).zip(values.chunks_exact_mut(32)).zip(scales.iter_mut().zip(sums.iter_mut()));
    for ((block, q), (scale, sum)) in blocks {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let inverse = if d != 0.0 { 1.0 / d } else { 0.0 };
        for (q, v) in q.iter_mut().zip(block) {
            *q = round_to_even(v * inverse) as i8;
        }
        *scale = f16::from_f32(d).to_f32();
        *sum = q.iter().map(|&v| i32::from(v)).sum();
    }
}
