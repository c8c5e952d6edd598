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
        // out[:, first..first+count] = x · tileᵀ (tile read as its transpose)
        // SAFETY: x is m×k, tile count×k, and the column block of out m×n
        // starting at `first` holds m×count: all in bounds of their slices.
        unsafe {
            multiply(
                (m, count, k),
                out.as_mut_ptr().add(first),
                n,
                View { data: x.as_ptr(), row_stride: k as isize, col_stride: 1 },
                View { data: tile.as_ptr(), row_stride: 1, col_stride: k as isize },
                1.0,
            );
        }
    }
}

/// A read-only f32 matrix in memory: element (i, j) at
/// `data + i·row_stride + j·col_stride`.
#[derive(Clone, Copy)]
pub struct View {
    pub data: *const f32,
    pub row_stride: isize,
    pub col_stride: isize,
}

/// `dst = scale · lhs · rhs` for `(m, n, k)` = (rows of lhs, columns of
/// rhs, their shared length), `dst` row-major with `dst_row_stride`;
/// single-threaded `gemm` (callers spread their own tasks over the cores).
///
/// # Safety
/// Every element the shapes and strides reach must be in bounds of its
/// allocation, and `dst` must not overlap `lhs` or `rhs`.
pub unsafe fn multiply(
    (m, n, k): (usize, usize, usize),
    dst: *mut f32,
    dst_row_stride: usize,
    lhs: View,
    rhs: View,
    scale: f32,
) {
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_row_stride as isize,
            false,
            lhs.data,
            lhs.col_stride,
            lhs.row_stride,
            rhs.data,
            rhs.col_stride,
            rhs.row_stride,
            0.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}
