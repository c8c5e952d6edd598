//! Weights without an integer kernel: dequantized a tile of rows at a
//! time and multiplied in f32 by `gemm` (AVX2/AVX-512/NEON/simd128 as the
//! target has them).

use super::QMatrix;

/// Weight rows dequantized per tile: 64 rows × 4,096 floats = 1 MiB.
const TILE: usize = 64;

/// `out[m×n] = x[m×k] · wᵀ`.
pub fn matmul_dequantized(x: &[f32], w: &QMatrix, out: &mut [f32]) {
    let (k, n) = (w.cols, w.rows);
    let m = x.len() / k;
    let mut tile = vec![0f32; TILE.min(n) * k];
    for first in (0..n).step_by(TILE) {
        let count = TILE.min(n - first);
        for (i, row) in tile.chunks_exact_mut(k).take(count).enumerate() {
            w.dequantize_row(first + i, row);
        }
        // out[:, first..first+count] = x · tileᵀ
        // SAFETY: the strides describe x (m×k), tile (count×k) read as its
        // transpose (k×count) and the column block of out (m×n), all in
        // bounds of their slices.
        unsafe {
            gemm::gemm(
                m,
                count,
                k,
                out.as_mut_ptr().add(first),
                1,
                n as isize,
                false,
                x.as_ptr(),
                1,
                k as isize,
                tile.as_ptr(),
                k as isize,
                1,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
}
