//! Products of K-quant weights (Q4_K, Q5_K, Q6_K: super-blocks of 256)
//! with activations quantized to Q8_K, as llama.cpp multiplies them on
//! the CPU: integer sums per super-block, scaled once. The weights stay
//! in their file's blocks.
//!
//! [`blocks`] reads every type into one form (values, group scales and
//! offsets), so one kernel per instruction set serves all three:
//! [`scalar`] (any CPU; the reference), `x86` (AVX2, a row at a time;
//! `x86_panel` for several activation rows, on packed panels), `arm` (NEON, with
//! `sdot` where the CPU has it), `wasm` (simd128, in the browser) and
//! `wasm_relaxed` (relaxed SIMD, the page's second module).

#[cfg(target_arch = "aarch64")]
mod arm;
pub(crate) mod blocks;
mod q8k_rows;
mod scalar;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
// The relaxed-SIMD module replaces it.
#[cfg_attr(feature = "relaxed-simd", allow(dead_code))]
mod wasm;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
mod wasm_relaxed;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_panel;

use std::ops::Range;

pub use blocks::is_k_quant;
pub use q8k_rows::Q8KRows;

use super::QMatrix;

/// Multiplies activation rows `rows` with every row of a K-quant matrix
/// into `out` (`rows.len() × w.rows`).
pub type Kernel = fn(&Q8KRows, Range<usize>, &QMatrix, &mut [f32]);

/// The widest kernel this CPU runs.
pub fn kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        return x86_panel::panel_matmul;
    }
    #[cfg(target_arch = "aarch64")]
    {
        arm::kernel()
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    {
        wasm_relaxed::matmul
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", not(feature = "relaxed-simd")))]
    {
        wasm::matmul
    }
    #[cfg(not(any(target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    {
        scalar::matmul
    }
}

#[cfg(test)]
mod tests;
