//! The portable K-quant kernel: plain loops over the unpacked form, the
//! reference the SIMD kernels are tested against.

use super::blocks::{scales, values};
use super::q8k_rows::{GROUP, Q8KRow, Q8KRows};
use crate::kernels::QMatrix;

/// One weight row against one activation row.
pub fn dot(x: Q8KRow, w: &QMatrix, row: usize) -> f32 {
    let mut sum = 0f32;
    for (b, block) in w.row(row).chunks_exact(w.kind.block_bytes()).enumerate() {
        let (xv, dx, xs) = x.block(b);
        let s = scales(w.kind, block);
        let v = values(w.kind, block);
        let groups = v.chunks_exact(GROUP).zip(xv.chunks_exact(GROUP));
        let products: i32 = groups
            .zip(s.scales)
            .map(|((v, x), scale)| {
                i32::from(scale) * v.iter().zip(x).map(|(&v, &x)| i32::from(v) * i32::from(x)).sum::<i32>()
            })
            .sum();
        let offsets: i32 = s.offsets.iter().zip(xs).map(|(&o, &x)| i32::from(o) * i32::from(x)).sum();
        sum += (s.d * dx) * products as f32 - (s.dmin * dx) * offsets as f32;
    }
    sum
}

// The SIMD kernels replace it there (tests still compare).
#[cfg_attr(
    all(
        any(target_arch = "x86_64", target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128")),
        not(test)
    ),
    allow(dead_code)
)]
pub fn matmul(x: &Q8KRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let row = x.row(r);
        for (c, y) in out.iter_mut().enumerate() {
            *y = dot(row, w, c);
        }
    }
}
