//! Activations quantized as ggml's Q8_K, the form llama.cpp multiplies
//! K-quant weights with (`quantize_row_q8_K_ref`): per super-block of 256
//! values, an f32 scale `d = max / -127` taken from the value of largest
//! magnitude (`max`, sign kept), the values rounded to `x / d` (ties to
//! even, capped at 127), and the sums of each 16 values, which the
//! weights' minimums and offsets multiply.

use crate::kernels::math::round_to_even;

/// Values per super-block.
pub const SUPER: usize = 256;
/// Values per partial sum.
pub const GROUP: usize = 16;

pub struct Q8KRows {
    /// Values, `k` per row.
    values: Vec<i8>,
    /// One scale per super-block.
    scales: Vec<f32>,
    /// One sum per 16 values.
    sums: Vec<i16>,
    k: usize,
}

/// One activation row of a [`Q8KRows`].
#[derive(Clone, Copy)]
pub struct Q8KRow<'a> {
    pub values: &'a [i8],
    pub scales: &'a [f32],
    pub sums: &'a [i16],
}

impl Q8KRow<'_> {
    /// Super-block `b`'s values, scale and 16 sums.
    // Always inlined: a call per super-block and row took 6% of decoding.
    #[inline(always)]
    pub fn block(&self, b: usize) -> (&[i8], f32, &[i16]) {
        (&self.values[b * SUPER..][..SUPER], self.scales[b], &self.sums[b * GROUP..][..GROUP])
    }
}

impl Q8KRows {
    pub fn quantize(x: &[f32], k: usize) -> Q8KRows {
        assert!(k.is_multiple_of(SUPER), "rows of {k} are not whole K-quant super-blocks");
        let blocks = x.len() / SUPER;
        let mut values = vec![0i8; x.len()];
        let mut scales = vec![0f32; blocks];
        let mut sums = vec![0i16; blocks * GROUP];
        // Super-blocks per task: 64 rows of 1,024 values.
        const TASK: usize = 256;
        let mut pieces: Vec<(&mut [i8], &mut [f32], &mut [i16])> = values
            .chunks_mut(TASK * SUPER)
            .zip(scales.chunks_mut(TASK))
            .zip(sums.chunks_mut(TASK * GROUP))
            .map(|((v, s), g)| (v, s, g))
            .collect();
        crate::kernels::parallel::chunks_mut(&mut pieces, 1, |i, piece| {
            let (values, scales, sums) = &mut piece[0];
            let x = &x[i * TASK * SUPER..][..values.len()];
            let blocks = x.chunks_exact(SUPER).zip(values.chunks_exact_mut(SUPER));
            for ((x, q), (d, sums)) in blocks.zip(scales.iter_mut().zip(sums.chunks_exact_mut(GROUP))) {
                *d = quantize_block(x, q, sums);
            }
        });
        Q8KRows { values, scales, sums, k }
    }

    pub fn row(&self, r: usize) -> Q8KRow<'_> {
        let blocks = self.k / SUPER;
        Q8KRow {
            values: &self.values[r * self.k..(r + 1) * self.k],
            scales: &self.scales[r * blocks..(r + 1) * blocks],
            sums: &self.sums[r * blocks * GROUP..(r + 1) * blocks * GROUP],
        }
    }

    pub fn k(&self) -> usize {
        self.k
    }
}

/// One super-block; returns its scale.
fn quantize_block(x: &[f32], q: &mut [i8], sums: &mut [i16]) -> f32 {
    // The first value of largest magnitude, as ggml scans.
    let max = x.iter().fold(0f32, |m, &v| if v.abs() > m.abs() { v } else { m });
    if max == 0.0 {
        q.fill(0);
        sums.fill(0);
        return 0.0;
    }
    let inverse = -127.0 / max;
    for (q, v) in q.iter_mut().zip(x) {
        *q = round_to_even(inverse * v).min(127.0) as i8;
    }
    for (sum, group) in sums.iter_mut().zip(q.chunks_exact(GROUP)) {
        *sum = group.iter().map(|&v| i16::from(v)).sum();
    }
    1.0 / inverse
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml's rules: the scale from the signed value of largest
    /// magnitude, that value mapped to -127, ties to even, zero blocks,
    /// sums of 16.
    #[test]
    fn quantizes_as_ggml_q8_k() {
        let mut x: Vec<f32> = (0..2 * SUPER).map(|i| (i as f32 * 0.37).sin() * 2.0).collect();
        x[5] = 4.0;
        x[SUPER..].fill(0.0);
        let rows = Q8KRows::quantize(&x, 2 * SUPER);
        let row = rows.row(0);
        let (values, d, sums) = row.block(0);
        assert_eq!(d, 1.0 / (-127.0 / 4.0));
        assert_eq!(values[5], -127);
        for (q, v) in values.iter().zip(&x) {
            assert!((f32::from(*q) * d - v).abs() <= d.abs() / 2.0 + 1e-6, "{q} · {d} vs {v}");
        }
        assert_eq!(sums[3], values[48..64].iter().map(|&v| i16::from(v)).sum::<i16>());
        let (zeros, d, sums) = row.block(1);
        assert_eq!((d, zeros.iter().all(|&v| v == 0), sums), (0.0, true, &[0i16; GROUP][..]));
        // 0.5 and 1.5 steps land on ties: even results.
        let mut ties = vec![0f32; SUPER];
        ties[0] = -127.0;
        ties[1] = 0.5;
        ties[2] = 1.5;
        let rows = Q8KRows::quantize(&ties, SUPER);
        assert_eq!(&rows.row(0).values[..3], &[-127, 0, 2]);
    }
}
