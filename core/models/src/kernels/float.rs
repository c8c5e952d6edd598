//! Weights without an integer kernel: dequantized a tile of rows at a
//! time and multiplied in f32 by `gemm` (AVX2/AVX-512/NEON/simd128 as the
//! target has them).

use std::ops::Range;

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

/// An attention head's two products over its keys and values: on `gemm`,
/// or in the page's relaxed-SIMD modules' embedding passes on relaxed
/// SIMD's fused multiply-add (see [`super::fused_attention`]).
pub struct HeadProducts<'k> {
    keys: Keys<'k>,
    len: usize,
    head_dim: usize,
}

enum Keys<'k> {
    /// The head's keys in place: `len` rows, `stride` apart.
    InPlace { k: &'k [f32], stride: usize },
    /// Transposed once for every block of queries.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    Transposed(Vec<f32>),
}

impl<'k> HeadProducts<'k> {
    /// Products over the head's keys: `len` rows of `head_dim` values in
    /// `k`, `stride` apart.
    pub fn new(k: &'k [f32], stride: usize, len: usize, head_dim: usize) -> HeadProducts<'k> {
        assert!(len == 0 || k.len() >= (len - 1) * stride + head_dim, "attention keys: {len} rows");
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
        if super::fused_attention(head_dim) {
            let keys = Keys::Transposed(super::wasm_relaxed_f32::transpose_keys(k, stride, len, head_dim));
            return HeadProducts { keys, len, head_dim };
        }
        HeadProducts { keys: Keys::InPlace { k, stride }, len, head_dim }
    }

    /// `out = scale · Q · K[span]ᵀ` (`rows × span.len()`, row-major): `q`
    /// holds the query rows, `q_stride` apart.
    pub fn scores(&self, q: &[f32], (q_stride, rows): (usize, usize), span: Range<usize>, scale: f32, out: &mut [f32]) {
        let (width, head_dim) = (span.len(), self.head_dim);
        if rows == 0 || width == 0 {
            return;
        }
        assert!(q.len() >= (rows - 1) * q_stride + head_dim, "attention queries: {rows} rows");
        assert!(span.end <= self.len && out.len() >= rows * width, "attention scores: {span:?}");
        match &self.keys {
            // SAFETY: the query rows, the span's keys (read as their
            // transpose) and the scores are in bounds (checked above).
            Keys::InPlace { k, stride } => unsafe {
                multiply(
                    (rows, width, head_dim),
                    out.as_mut_ptr(),
                    width,
                    View { data: q.as_ptr(), row_stride: q_stride as isize, col_stride: 1 },
                    View { data: k.as_ptr().add(span.start * stride), row_stride: 1, col_stride: *stride as isize },
                    scale,
                );
            },
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
            Keys::Transposed(kt) => {
                super::wasm_relaxed_f32::scores(q, (q_stride, rows), kt, (self.len, span), head_dim, scale, out)
            }
        }
    }

    /// `out = P · V` (`rows × head_dim`, rows `out_stride` apart): `p`
    /// holds `rows` rows of `width` weights, `v` the `width` value rows,
    /// `v_stride` apart.
    pub fn weighted_values(
        &self,
        p: &[f32],
        (rows, width): (usize, usize),
        (v, v_stride): (&[f32], usize),
        (out, out_stride): (&mut [f32], usize),
    ) {
        let head_dim = self.head_dim;
        if rows == 0 {
            return;
        }
        assert!(out.len() >= (rows - 1) * out_stride + head_dim, "attention output: {rows} rows");
        if width == 0 {
            // An empty sum: zeros, as either product would write.
            for row in out.chunks_mut(out_stride.max(head_dim)).take(rows) {
                row[..head_dim].fill(0.0);
            }
            return;
        }
        assert!(p.len() >= rows * width, "attention weights: {rows} × {width}");
        assert!(v.len() >= (width - 1) * v_stride + head_dim, "attention values: {width} rows");
        match &self.keys {
            // SAFETY: the weights, the value rows and the output rows are
            // in bounds (checked above).
            Keys::InPlace { .. } => unsafe {
                multiply(
                    (rows, head_dim, width),
                    out.as_mut_ptr(),
                    out_stride,
                    View { data: p.as_ptr(), row_stride: width as isize, col_stride: 1 },
                    View { data: v.as_ptr(), row_stride: v_stride as isize, col_stride: 1 },
                    1.0,
                );
            },
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
            Keys::Transposed(_) => {
                super::wasm_relaxed_f32::weighted_values(p, (rows, width), (v, v_stride), head_dim, (out, out_stride))
            }
        }
    }
}
