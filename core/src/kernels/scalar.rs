//! The portable kernel: plain loops, the reference the SIMD kernels are
//! tested against.

use super::{QMatrix, QuantizedRows};
use crate::gguf::GgmlType;

/// `Σ_b d_x[b]·d_w[b]·Σ_i x[b][i]·w[b][i]` over the blocks of one row
/// pair, summed as ggml's `ggml_vec_dot_q8_0_q8_0` does.
pub fn dot_q8_0(x: &[i8], x_scales: &[f32], w: &[u8]) -> f32 {
    let mut sum = 0f32;
    for ((x, &dx), w) in x.chunks_exact(32).zip(x_scales).zip(w.chunks_exact(34)) {
        let dw = crate::gguf::half_at(w, 0);
        let dot: i32 = x.iter().zip(&w[2..]).map(|(&a, &b)| i32::from(a) * i32::from(b as i8)).sum();
        sum += dot as f32 * (dx * dw);
    }
    sum
}

pub fn q8_0_matmul(x: &QuantizedRows, rows: std::ops::Range<usize>, w: &QMatrix, out: &mut [f32]) {
    debug_assert_eq!(w.kind, GgmlType::Q8_0);
    for (r, out) in rows.zip(out.chunks_exact_mut(w.rows)) {
        let (values, scales) = x.row(r);
        for (c, y) in out.iter_mut().enumerate() {
            *y = dot_q8_0(values, scales, w.row(c));
        }
    }
}
