//! Dense layers (`x·W + b`) for the browser's CPU backend. burn's CPU
//! backend multiplies with `gemm`, whose simd128 microkernel was 68% of
//! the browser's embedding time in Chromium's profiler; here B is packed
//! once per product into contiguous column panels, and each 4 × 8 tile of
//! C is summed in simd128 registers over the whole of k (one Worker, 60
//! tldr pages: 15.7 s → 13.6 s).
//!
//! The kernel is written over four-lane vectors ([`lanes`]): simd128 in
//! the browser, plain arrays elsewhere, so native tests check the same
//! blocking and edge handling the browser runs. Native builds keep burn's
//! AVX2 `gemm`, which is faster there.

use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};

use lanes::F32x4;

/// Rows of A (and C) in one register tile.
const TILE_ROWS: usize = 4;
/// Columns of a register tile, in four-lane vectors.
const TILE_VECTORS: usize = 2;
const TILE_COLUMNS: usize = TILE_VECTORS * 4;
/// Rows of A walked per block: 64 rows of up to 1,536 floats stay in L2
/// while every column panel passes over them.
const ROW_BLOCK: usize = 64;
/// Below this many rows (a query of a few tokens) copying the weights out
/// of the tensor costs more than the kernel saves.
const MIN_ROWS: usize = 32;

/// Whether `device` is the browser's CPU backend, where this module's
/// kernels (and the attention's, in `attention.rs`) replace burn's.
pub fn on_browser_cpu(device: &Device) -> bool {
    cfg!(all(target_arch = "wasm32", target_feature = "simd128")) && *device == Device::flex()
}

/// `layer.forward(x)`, with the matrix product on this module's kernel
/// where it is faster (the browser's CPU backend). There only the rows of
/// real tokens are multiplied (the first `lengths[i]` of sequence i); the
/// rows of padding come out as zeros, which the encoder never reads
/// (attention skips them, pooling masks them).
pub fn linear(layer: &Linear, x: Tensor<3>, lengths: &[usize]) -> Tensor<3> {
    let [batch, tokens, inputs] = x.dims();
    let device = x.device();
    if !on_browser_cpu(&device) || batch * tokens < MIN_ROWS {
        return layer.forward(x);
    }
    let weight: TensorData = layer.weight.val().into_data();
    let bias: Option<TensorData> = layer.bias.as_ref().map(|b| b.val().into_data());
    let input: TensorData = x.into_data();
    let (Ok(a), Ok(b)) = (input.as_slice::<f32>(), weight.as_slice::<f32>()) else {
        // Another float type (f16 weights): burn's own product.
        return layer.forward(Tensor::from_data(input, &device));
    };
    let bias = bias.as_ref().and_then(|b| b.as_slice::<f32>().ok());
    let outputs = b.len() / inputs.max(1);
    let c = matmul_real_rows(a, b, bias, lengths, tokens, inputs, outputs);
    Tensor::from_data(TensorData::new(c, [batch, tokens, outputs]), &device)
}

/// [`matmul`] of the real rows of `a` (`[sequences, tokens, k]`, sequence
/// i's first `lengths[i]` rows real), zeros in the rows of padding.
fn matmul_real_rows(
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    lengths: &[usize],
    tokens: usize,
    k: usize,
    n: usize,
) -> Vec<f32> {
    assert!(lengths.iter().all(|&l| l <= tokens), "a length is over {tokens} tokens");
    let rows: Vec<usize> = lengths.iter().enumerate().flat_map(|(i, &l)| i * tokens..i * tokens + l).collect();
    multiply(a, b, bias, lengths.len() * tokens, &rows, k, n)
}

/// `a[m×k] · b[k×n] (+ bias[n])`, all row-major.
pub fn matmul(a: &[f32], b: &[f32], bias: Option<&[f32]>, m: usize, k: usize, n: usize) -> Vec<f32> {
    multiply(a, b, bias, m, &(0..m).collect::<Vec<_>>(), k, n)
}

/// Rows `rows` of `a[m×k] · b[k×n] (+ bias[n])`; C's other rows are zeros.
/// The kernel reads and writes rows by index, so rows left out cost
/// nothing and nothing is copied to gather the others.
fn multiply(a: &[f32], b: &[f32], bias: Option<&[f32]>, m: usize, rows: &[usize], k: usize, n: usize) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "A is not {m}×{k}");
    assert_eq!(b.len(), k * n, "B is not {k}×{n}");
    assert!(bias.is_none_or(|bias| bias.len() == n), "bias is not {n} long");
    assert!(rows.iter().all(|&row| row < m), "a row is past {m}");
    let panels = pack(b, k, n);
    let mut c = vec![0.0; m * n];
    for block in rows.chunks(ROW_BLOCK) {
        for (p, panel) in panels.chunks_exact(k * TILE_COLUMNS).enumerate() {
            let cols = p * TILE_COLUMNS..((p + 1) * TILE_COLUMNS).min(n);
            let tiles = block.chunks_exact(TILE_ROWS);
            for row in tiles.remainder() {
                tile::<1>(a, k, &[*row], panel, bias, &mut c, n, cols.clone());
            }
            for rows in tiles {
                tile::<TILE_ROWS>(a, k, rows.try_into().expect("a tile's rows"), panel, bias, &mut c, n, cols.clone());
            }
        }
    }
    c
}

/// B's columns cut into panels [`TILE_COLUMNS`] wide, each stored row
/// after row so the kernel reads it front to back; the last panel is
/// padded with zero columns.
fn pack(b: &[f32], k: usize, n: usize) -> Vec<f32> {
    let count = n.div_ceil(TILE_COLUMNS);
    let mut panels = vec![0.0; count * k * TILE_COLUMNS];
    for (p, panel) in panels.chunks_exact_mut(k * TILE_COLUMNS).enumerate() {
        let col = p * TILE_COLUMNS;
        let width = TILE_COLUMNS.min(n - col);
        for (i, out) in panel.chunks_exact_mut(TILE_COLUMNS).enumerate() {
            out[..width].copy_from_slice(&b[i * n + col..i * n + col + width]);
        }
    }
    panels
}

/// Rows `rows` of C in the columns `cols`, over the whole of k.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<const R: usize>(
    a: &[f32],
    k: usize,
    rows: &[usize; R],
    panel: &[f32],
    bias: Option<&[f32]>,
    c: &mut [f32],
    n: usize,
    cols: std::ops::Range<usize>,
) {
    assert_eq!(panel.len(), k * TILE_COLUMNS);
    let a_rows: [&[f32]; R] = std::array::from_fn(|r| &a[rows[r] * k..(rows[r] + 1) * k]);
    let mut sums = [[F32x4::zero(); TILE_VECTORS]; R];
    for (p, b) in panel.chunks_exact(TILE_COLUMNS).enumerate() {
        let b: [F32x4; TILE_VECTORS] = std::array::from_fn(|v| F32x4::load(&b[4 * v..4 * v + 4]));
        for (row, sums) in a_rows.iter().zip(sums.iter_mut()) {
            // SAFETY: p < k, the length of every row (the panel holds k
            // steps of TILE_COLUMNS, asserted above). The check is kept out
            // of the innermost loop of the browser's embedding.
            let a = F32x4::splat(unsafe { *row.get_unchecked(p) });
            for (sum, b) in sums.iter_mut().zip(b) {
                *sum = sum.mul_add(a, b);
            }
        }
    }
    for (row, sums) in rows.iter().zip(&sums) {
        let mut out = [0.0; TILE_COLUMNS];
        for (v, sum) in sums.iter().enumerate() {
            sum.store(&mut out[4 * v..4 * v + 4]);
        }
        let c = &mut c[row * n + cols.start..row * n + cols.end];
        match bias {
            Some(bias) => {
                for ((c, out), bias) in c.iter_mut().zip(out).zip(&bias[cols.clone()]) {
                    *c = out + bias;
                }
            }
            None => c.copy_from_slice(&out[..cols.len()]),
        }
    }
}

/// Four f32 lanes: one simd128 register in the browser, an array
/// elsewhere.
mod lanes {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    mod imp {
        use core::arch::wasm32::*;

        #[derive(Clone, Copy)]
        pub struct F32x4(v128);

        impl F32x4 {
            #[inline(always)]
            pub fn zero() -> F32x4 {
                F32x4(f32x4_splat(0.0))
            }
            #[inline(always)]
            pub fn splat(x: f32) -> F32x4 {
                F32x4(f32x4_splat(x))
            }
            #[inline(always)]
            pub fn load(from: &[f32]) -> F32x4 {
                assert!(from.len() >= 4);
                // SAFETY: four floats are in bounds (checked above);
                // v128.load takes unaligned addresses.
                F32x4(unsafe { v128_load(from.as_ptr() as *const v128) })
            }
            #[inline(always)]
            pub fn store(self, to: &mut [f32]) {
                assert!(to.len() >= 4);
                // SAFETY: as in `load`.
                unsafe { v128_store(to.as_mut_ptr() as *mut v128, self.0) }
            }
            /// `self + a·b` (simd128 has no fused multiply-add).
            #[inline(always)]
            pub fn mul_add(self, a: F32x4, b: F32x4) -> F32x4 {
                F32x4(f32x4_add(self.0, f32x4_mul(a.0, b.0)))
            }
        }
    }

    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    mod imp {
        #[derive(Clone, Copy)]
        pub struct F32x4([f32; 4]);

        impl F32x4 {
            pub fn zero() -> F32x4 {
                F32x4([0.0; 4])
            }
            pub fn splat(x: f32) -> F32x4 {
                F32x4([x; 4])
            }
            pub fn load(from: &[f32]) -> F32x4 {
                F32x4([from[0], from[1], from[2], from[3]])
            }
            pub fn store(self, to: &mut [f32]) {
                to[..4].copy_from_slice(&self.0);
            }
            pub fn mul_add(self, a: F32x4, b: F32x4) -> F32x4 {
                F32x4(std::array::from_fn(|i| self.0[i] + a.0[i] * b.0[i]))
            }
        }
    }

    pub use imp::F32x4;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(a: &[f32], b: &[f32], bias: Option<&[f32]>, m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut c = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = bias.map_or(0.0, |b| f64::from(b[j]))
                    + (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum::<f64>();
            }
        }
        c.into_iter().map(|x| x as f32).collect()
    }

    /// Shapes off every block size: rows past a row block and not a
    /// multiple of the tile, columns not a multiple of the panel width.
    #[test]
    fn products_match_a_plain_triple_loop_at_every_edge() {
        for (m, k, n) in [(1, 1, 1), (3, 5, 7), (4, 8, 8), (67, 33, 19), (130, 384, 40), (5, 2, 9)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 53 % 89) as f32 - 44.0) / 30.0).collect();
            let bias: Vec<f32> = (0..n).map(|j| j as f32 / 7.0 - 1.0).collect();
            for bias in [None, Some(bias.as_slice())] {
                let ours = matmul(&a, &b, bias, m, k, n);
                let expected = reference(&a, &b, bias, m, k, n);
                for (i, (x, y)) in ours.iter().zip(&expected).enumerate() {
                    assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{m}×{k}×{n} at {i}: {x} vs {y}");
                }
            }
        }
    }

    /// Sequences of 4 tokens holding 4, 1, 0 and 3 real ones.
    #[test]
    fn padding_rows_are_skipped_and_left_zero() {
        let (tokens, k, n, lengths) = (4, 6, 9, [4, 1, 0, 3]);
        let m = tokens * lengths.len();
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 41 % 67) as f32 - 33.0) / 17.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 23 % 31) as f32 - 15.0) / 9.0).collect();
        let bias: Vec<f32> = (0..n).map(|j| j as f32 / 3.0).collect();
        let full = matmul(&a, &b, Some(&bias), m, k, n);
        let ours = matmul_real_rows(&a, &b, Some(&bias), &lengths, tokens, k, n);
        for (row, (ours, full)) in ours.chunks(n).zip(full.chunks(n)).enumerate() {
            let real = row % tokens < lengths[row / tokens];
            let expected = if real { full.to_vec() } else { vec![0.0; n] };
            assert_eq!(ours, expected.as_slice(), "row {row}");
        }
    }

    #[test]
    #[should_panic(expected = "B is not 3×2")]
    fn mismatched_shapes_are_refused() {
        matmul(&[0.0; 6], &[0.0; 5], None, 2, 3, 2);
    }

    /// On the native CPU `linear` is burn's own layer; this checks the
    /// kernel against it on a real layer's layout (weights `[in, out]`).
    #[test]
    fn the_kernel_computes_what_burns_linear_layer_does() {
        let device = Device::flex();
        let layer = burn::nn::LinearConfig::new(24, 40).init(&device);
        let x: Vec<f32> = (0..2 * 9 * 24).map(|i| ((i * 29 % 61) as f32 - 30.0) / 20.0).collect();
        let input = Tensor::<3>::from_data(TensorData::new(x.clone(), [2, 9, 24]), &device);
        let burns: Vec<f32> = layer.forward(input).into_data().try_to_vec::<f32>().unwrap();
        let weight: Vec<f32> = layer.weight.val().into_data().try_to_vec::<f32>().unwrap();
        let bias: Vec<f32> = layer.bias.as_ref().unwrap().val().into_data().try_to_vec::<f32>().unwrap();
        let ours = matmul(&x, &weight, Some(&bias), 18, 24, 40);
        for (x, y) in ours.iter().zip(&burns) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }
}
