//! Activations quantized to 8 bits, as llama.cpp quantizes them before a
//! product with quantized weights (`quantize_row_q8_0`, and `_q8_1` for
//! Q4_1 weights): per block of 32, the scale `d = max|x| / 127` (kept as
//! f16, as ggml stores it) and the values rounded to `x · 127 / max|x|`,
//! ties to even; Q8_1 adds `d · Σ values` (as f16).
//!
//! The page's relaxed-SIMD module quantizes the activations of an
//! embedding pass's Q8_0 products to 7 bits instead ([`Bits::Seven`]:
//! `d = max|x| / 63`; see `kernels::for_embedding`), so each byte pair
//! is one 8-bit dot product there (relaxed SIMD's dot needs one side
//! within 0–127: the activations, offset by 64) rather than two. Every
//! Q8_0 product of such a pass does, whatever its rows, so a text's
//! vector does not depend on what it was batched with.

use half::f16;

use crate::kernels::math::round_to_even;

/// How many bits the values take: their largest magnitude is
/// [`Bits::max`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bits {
    /// −127..=127, as llama.cpp quantizes.
    Eight,
    /// −63..=63: offset by 64, a value fits relaxed SIMD's 7-bit operand.
    Seven,
}

impl Bits {
    pub fn max(self) -> f32 {
        match self {
            Bits::Eight => 127.0,
            Bits::Seven => 63.0,
        }
    }
}

pub struct QuantizedRows {
    pub bits: Bits,
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
        QuantizedRows::quantize_to(x, k, Bits::Eight)
    }

    pub fn quantize_to(x: &[f32], k: usize, bits: Bits) -> QuantizedRows {
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
        crate::kernels::parallel::chunks_mut(&mut pieces, 1, |i, piece| {
            let piece = &mut piece[0];
            quantize_blocks(&x[i * rows * k..][..piece.values.len()], bits.max(), piece);
        });
        QuantizedRows { bits, values, scales, sums, scaled_sums, k }
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

/// Quantizes each block of 32 to values within ±`max`.
fn quantize_blocks(x: &[f32], max: f32, piece: &mut Piece) {
    #[cfg(target_arch = "x86_64")]
    if super::dispatch::avx2() {
        // SAFETY: the CPU has the features.
        return unsafe { quantize_blocks_avx2(x, max, piece) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    quantize_blocks_simd128(x, max, piece);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    quantize_blocks_portable(x, max, piece);
}

/// The portable loop's operations four lanes at a time, so the same
/// bytes. In wasm the portable loop's `f32::max` is a call to libm's
/// `fmaxf` per value (wasm's `f32.max` has other NaN rules): the
/// quantizer was about 7% of a MiniLM pass in the page, 1.7% now.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn quantize_blocks_simd128(x: &[f32], max: f32, piece: &mut Piece) {
    use core::arch::wasm32::*;
    let Piece { values, scales, sums, scaled_sums } = piece;
    let outputs = scales.iter_mut().zip(sums.iter_mut()).zip(scaled_sums.iter_mut());
    for ((block, q), ((scale, sum), scaled_sum)) in x.chunks_exact(32).zip(values.chunks_exact_mut(32)).zip(outputs) {
        // SAFETY: a block is 32 floats.
        let v: [v128; 8] = std::array::from_fn(|i| unsafe { v128_load(block.as_ptr().add(4 * i).cast()) });
        // NaN lanes become 0 first, so the maximum skips them as
        // `f32::max` does whatever the lowering: with `+relaxed-simd` LLVM
        // may turn a `pmax` into `relaxed_max`, whose NaN result is the
        // engine's choice (wasmtime's kept a NaN). Without NaNs every
        // maximum agrees.
        let finite_abs = |v: v128| {
            let a = f32x4_abs(v);
            v128_and(a, f32x4_eq(a, a))
        };
        let lanes = v.iter().fold(f32x4_splat(0.0), |m, &v| f32x4_pmax(m, finite_abs(v)));
        let pairs = f32x4_pmax(lanes, i32x4_shuffle::<2, 3, 0, 1>(lanes, lanes));
        let amax = f32x4_extract_lane::<0>(f32x4_pmax(pairs, i32x4_shuffle::<1, 0, 3, 2>(pairs, pairs)));
        let d = amax / max;
        let inverse = f32x4_splat(if amax != 0.0 { max / amax } else { 0.0 });
        // Ties to even, then saturating to i8 as `as i8` does (NaN to 0).
        let ints: [v128; 8] = std::array::from_fn(|i| i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(v[i], inverse))));
        let total = ints.iter().fold(i32x4_splat(0), |t, &i| i32x4_add(t, i));
        *sum = super::wasm::lane_sum(total);
        let halves: [v128; 4] = std::array::from_fn(|i| i16x8_narrow_i32x4(ints[2 * i], ints[2 * i + 1]));
        // SAFETY: a block is 32 bytes out.
        unsafe {
            v128_store(q.as_mut_ptr().cast(), i8x16_narrow_i16x8(halves[0], halves[1]));
            v128_store(q.as_mut_ptr().add(16).cast(), i8x16_narrow_i16x8(halves[2], halves[3]));
        }
        *scale = f16::from_f32(d).to_f32();
        *scaled_sum = f16::from_f32(d * *sum as f32).to_f32();
    }
}

/// ggml's x86 `quantize_row_q8_0`/`_q8_1`, block by block: the same
/// operations, so the same bytes (and 5× the portable loop's speed).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
fn quantize_blocks_avx2(x: &[f32], max: f32, piece: &mut Piece) {
    use std::arch::x86_64::*;
    let Piece { values, scales, sums, scaled_sums } = piece;
    let outputs = scales.iter_mut().zip(sums.iter_mut()).zip(scaled_sums.iter_mut());
    for ((block, q), ((scale, sum), scaled_sum)) in x.chunks_exact(32).zip(values.chunks_exact_mut(32)).zip(outputs) {
        // SAFETY: a block is 32 floats in and 32 bytes out.
        unsafe {
            let v: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(block.as_ptr().add(8 * i)));
            let sign = _mm256_set1_ps(-0.0);
            let mut amax = _mm256_andnot_ps(sign, v[0]);
            for vi in &v[1..] {
                amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, *vi));
            }
            let mut half = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
            half = _mm_max_ps(half, _mm_movehl_ps(half, half));
            half = _mm_max_ss(half, _mm_movehdup_ps(half));
            let amax = _mm_cvtss_f32(half);
            let d = amax / max;
            let inverse = _mm256_set1_ps(if amax != 0.0 { max / amax } else { 0.0 });
            let ints: [__m256i; 4] = std::array::from_fn(|i| {
                let scaled = _mm256_round_ps(_mm256_mul_ps(v[i], inverse), _MM_FROUND_TO_NEAREST_INT);
                _mm256_cvtps_epi32(scaled)
            });
            let total = _mm256_add_epi32(_mm256_add_epi32(ints[0], ints[1]), _mm256_add_epi32(ints[2], ints[3]));
            let lanes: [i32; 8] = std::mem::transmute(total);
            *sum = lanes.iter().sum();
            // Pack to bytes; the packs interleave 128-bit lanes, undone by
            // the final permute (as in ggml).
            let low = _mm256_packs_epi32(ints[0], ints[1]);
            let high = _mm256_packs_epi32(ints[2], ints[3]);
            let bytes = _mm256_packs_epi16(low, high);
            let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
            _mm256_storeu_si256(q.as_mut_ptr().cast(), _mm256_permutevar8x32_epi32(bytes, order));
            *scale = f16::from_f32(d).to_f32();
            *scaled_sum = f16::from_f32(d * *sum as f32).to_f32();
        }
    }
}

// In a simd128 build only the tests call it (the SIMD quantizer's reference).
#[cfg_attr(all(target_arch = "wasm32", target_feature = "simd128", not(test)), allow(dead_code))]
fn quantize_blocks_portable(x: &[f32], max: f32, piece: &mut Piece) {
    let Piece { values, scales, sums, scaled_sums } = piece;
    let outputs = scales.iter_mut().zip(sums.iter_mut()).zip(scaled_sums.iter_mut());
    for ((block, q), ((scale, sum), scaled_sum)) in x.chunks_exact(32).zip(values.chunks_exact_mut(32)).zip(outputs) {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / max;
        // ggml's x86 code takes 127/max, not 1/d: they differ in the last
        // bit now and then, which moves a value sitting on a rounding edge.
        let inverse = if amax != 0.0 { max / amax } else { 0.0 };
        for (q, v) in q.iter_mut().zip(block) {
            *q = round_to_even(v * inverse) as i8;
        }
        *scale = f16::from_f32(d).to_f32();
        *sum = q.iter().map(|&v| i32::from(v)).sum();
        *scaled_sum = f16::from_f32(d * *sum as f32).to_f32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantized(x: &[f32], simd: bool) -> (Vec<i8>, Vec<f32>, Vec<i32>, Vec<f32>) {
        quantized_to(x, Bits::Eight, simd)
    }

    fn quantized_to(x: &[f32], bits: Bits, simd: bool) -> (Vec<i8>, Vec<f32>, Vec<i32>, Vec<f32>) {
        let blocks = x.len() / 32;
        let (mut values, mut scales, mut sums, mut scaled_sums) =
            (vec![0i8; x.len()], vec![0f32; blocks], vec![0i32; blocks], vec![0f32; blocks]);
        let mut piece =
            Piece { values: &mut values, scales: &mut scales, sums: &mut sums, scaled_sums: &mut scaled_sums };
        if simd {
            quantize_blocks(x, bits.max(), &mut piece)
        } else {
            quantize_blocks_portable(x, bits.max(), &mut piece)
        }
        (values, scales, sums, scaled_sums)
    }

    /// The SIMD quantizer writes the portable one's bytes: random blocks,
    /// a zero block, values on rounding ties, huge and tiny scales.
    #[test]
    fn simd_quantization_equals_the_portable_one() {
        let mut x: Vec<f32> = (0..32 * 64).map(|i| ((i * 7919 % 2003) as f32 / 1001.0 - 1.0) * 3.0).collect();
        x[32..64].fill(0.0);
        for (i, v) in x[64..96].iter_mut().enumerate() {
            *v = (i as f32 - 16.0) * 0.5 + if i == 0 { 63.5 } else { 0.0 };
        }
        x[96..128].iter_mut().enumerate().for_each(|(i, v)| *v = 1e30 * (i as f32 - 7.0));
        x[128..160].iter_mut().enumerate().for_each(|(i, v)| *v = 1e-30 * (i as f32 - 7.0));
        assert_eq!(quantized(&x, true), quantized(&x, false));
        let seven = quantized_to(&x, Bits::Seven, true);
        assert_eq!(seven, quantized_to(&x, Bits::Seven, false));
        assert!(seven.0.iter().all(|v| (-63..=63).contains(v)), "7-bit values within ±63");
        assert!(seven.0.iter().any(|&v| v.abs() == 63), "each block's largest reaches 63");
    }

    /// In wasm the SIMD quantizer also treats NaN and infinite activations
    /// as the portable loop does (a NaN is skipped by the maximum and
    /// becomes 0; an infinite maximum makes the block's values 0), so the
    /// two page builds and the scalar reference agree on damaged input too.
    /// (ggml's AVX2 code, which ours follows on x86, differs there.)
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[test]
    fn wasm_quantization_of_non_finite_values_equals_the_portable_one() {
        let mut x: Vec<f32> = (0..32 * 4).map(|i| (i as f32 * 0.37).sin() * 5.0).collect();
        x[3] = f32::NAN;
        x[40] = f32::INFINITY;
        x[70] = f32::NEG_INFINITY;
        x[71] = f32::NAN;
        x[96..128].fill(f32::NAN);
        // At 8 bits and at an embedding pass's 7.
        for width in [Bits::Eight, Bits::Seven] {
            let (values, scales, sums, scaled_sums) = quantized_to(&x, width, true);
            let portable = quantized_to(&x, width, false);
            assert_eq!(values, portable.0, "{width:?}");
            assert_eq!(sums, portable.2, "{width:?}");
            // NaN != NaN: compare the scales' bits.
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!((bits(&scales), bits(&scaled_sums)), (bits(&portable.1), bits(&portable.3)), "{width:?}");
            assert_eq!(values[3], 0, "a NaN activation quantizes to 0");
        }
    }
}
