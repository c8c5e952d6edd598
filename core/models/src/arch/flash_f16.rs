//! Attention as llama.cpp's CPU flash attention computes it over an f16
//! cache for passes of few queries: a key at a time, the values' running
//! sum held in f16.

#[cfg(target_arch = "x86_64")]
use super::attention_shape::Rows;
use super::attention_shape::{AttentionShape, CacheElement, dot, round_slice_to_f16};
use crate::kernels::parallel;

/// Attention as llama.cpp's CPU flash attention computes it over an f16
/// cache for a pass of fewer than 64 queries
/// (`ggml_compute_forward_flash_attn_ext_f16_one_chunk`), so that
/// generation's first logits are its own to within 1e-3: each query and
/// head walks its keys in order, keeps the largest score `M` and the sum
/// `S` of `e^(s − M)`, and adds each value times `e^(s − M)` to a running
/// sum held in f16 (rescaled by `e^(M_old − M)` when the largest score
/// moves), divided by `S` at the end. Queries at positions
/// `len − queries..len`.
pub fn attention<E: CacheElement>(
    q: &[f32],
    k: &[E],
    v: &[E],
    (cached, len): (usize, usize),
    shape: AttentionShape,
    out: &mut [f32],
) {
    let AttentionShape { heads, kv_heads, head_dim, scale, window, .. } = shape;
    let (q_width, kv_width, group) = (heads * head_dim, kv_heads * head_dim, heads / kv_heads.max(1));
    parallel::chunks_mut(out, head_dim, |i, out| {
        let (row, h) = (i / heads, i % heads);
        let kv_column = (h / group) * head_dim;
        let query = &q[row * q_width + h * head_dim..][..head_dim];
        let keys = window.keys(cached + row, len);
        // The same path for f32 and f16 rows, so a cached pass and a whole
        // one give the same sums.
        #[cfg(target_arch = "x86_64")]
        if x86::available(head_dim) {
            let columns = (kv_width, kv_column);
            // SAFETY: the CPU has the features; rows are whole multiples of 8.
            return unsafe {
                match E::rows(k, v) {
                    Rows::F32(k, v) => x86::head(query, (k, v), keys, columns, scale, out),
                    Rows::F16(k, v) => x86::head(query, (k, v), keys, columns, scale, out),
                }
            };
        }
        let at = |j: usize| j * kv_width + kv_column..j * kv_width + kv_column + head_dim;
        let (mut key, mut value) = (vec![0f32; head_dim], vec![0f32; head_dim]);
        let (mut largest, mut sum) = (f32::NEG_INFINITY, 0f32);
        out.fill(0.0);
        for j in keys {
            E::widen(&k[at(j)], &mut key);
            let s = dot(query, &key) * scale;
            let (mut rescale, mut weight) = (1.0, 1.0);
            if s > largest {
                rescale = (largest - s).exp();
                largest = s;
                out.iter_mut().for_each(|o| *o *= rescale);
                round_slice_to_f16(out);
            } else {
                weight = (s - largest).exp();
            }
            E::widen(&v[at(j)], &mut value);
            out.iter_mut().zip(&value).for_each(|(o, &x)| *o += x * weight);
            round_slice_to_f16(out);
            sum = sum * rescale + weight;
        }
        let inverse = if sum == 0.0 { 0.0 } else { 1.0 / sum };
        out.iter_mut().for_each(|o| *o *= inverse);
    });
}

/// The same steps with AVX2, FMA and F16C, as ggml's
/// `ggml_vec_dot_f16`, `ggml_vec_scale_f16` and `ggml_vec_mad_f16` take
/// them: the running sum stored as f16 after each fused multiply-add, in
/// registers rather than through the portable loop's slice conversions.
/// (SmolLM2 Q4_1 decoding after 520 tokens measured 0.60× llama.cpp with
/// the portable loop and 0.58× with this one, in noisy runs: attention is
/// not what holds that model's decoding back.)
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use half::f16;

    /// What a cache row holds, read eight values at a time as f32.
    pub trait Eight: Copy {
        /// Values `at..at + 8` of `row`.
        ///
        /// # Safety
        /// The CPU has AVX and F16C, and `at + 8 <= row.len()`.
        unsafe fn eight(row: &[Self], at: usize) -> __m256;
    }

    impl Eight for f32 {
        #[inline]
        #[target_feature(enable = "avx")]
        unsafe fn eight(row: &[f32], at: usize) -> __m256 {
            // SAFETY: the caller's.
            unsafe { _mm256_loadu_ps(row.as_ptr().add(at)) }
        }
    }

    impl Eight for f16 {
        #[inline]
        #[target_feature(enable = "avx,f16c")]
        unsafe fn eight(row: &[f16], at: usize) -> __m256 {
            // SAFETY: the caller's.
            unsafe { _mm256_cvtph_ps(_mm_loadu_si128(row.as_ptr().add(at).cast())) }
        }
    }

    /// Heads this path takes: a multiple of 8 values, at most 256.
    pub fn available(head_dim: usize) -> bool {
        head_dim.is_multiple_of(8) && head_dim <= 256 && crate::kernels::dispatch::avx2()
    }

    /// One query's head over `keys`, into `out` (`head_dim` values).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub fn head<E: Eight>(
        query: &[f32],
        (k, v): (&[E], &[E]),
        keys: Range<usize>,
        (kv_width, kv_column): (usize, usize),
        scale: f32,
        out: &mut [f32],
    ) {
        let head_dim = query.len();
        let mut sums = [0u16; 256];
        let sums = &mut sums[..head_dim];
        let (mut largest, mut total) = (f32::NEG_INFINITY, 0f32);
        for j in keys {
            let at = j * kv_width + kv_column;
            let mut d = _mm256_setzero_ps();
            for c in (0..head_dim).step_by(8) {
                // SAFETY: 8 values of the query.
                let q = unsafe { _mm256_loadu_ps(query.as_ptr().add(c)) };
                // SAFETY: 8 values of a key row.
                d = _mm256_fmadd_ps(q, unsafe { E::eight(k, at + c) }, d);
            }
            let mut lanes = [0f32; 8];
            // SAFETY: 8 floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), d) };
            let s = lanes.iter().sum::<f32>() * scale;
            let (mut rescale, mut weight) = (1.0, 1.0);
            if s > largest {
                rescale = (largest - s).exp();
                largest = s;
                let factor = _mm256_set1_ps(rescale);
                for c in (0..head_dim).step_by(8) {
                    // SAFETY: 8 of the sums.
                    unsafe {
                        let at = sums.as_mut_ptr().add(c).cast::<__m128i>();
                        let scaled = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(at)), factor);
                        _mm_storeu_si128(at, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(scaled));
                    }
                }
            } else {
                weight = (s - largest).exp();
            }
            let w = _mm256_set1_ps(weight);
            for c in (0..head_dim).step_by(8) {
                // SAFETY: 8 values of a value row.
                let x = unsafe { E::eight(v, at + c) };
                // SAFETY: 8 of the sums.
                unsafe {
                    let sums = sums.as_mut_ptr().add(c).cast::<__m128i>();
                    let sum = _mm256_fmadd_ps(x, w, _mm256_cvtph_ps(_mm_loadu_si128(sums)));
                    _mm_storeu_si128(sums, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(sum));
                }
            }
            total = total * rescale + weight;
        }
        let inverse = if total == 0.0 { 0.0 } else { 1.0 / total };
        for (o, &s) in out.iter_mut().zip(sums.iter()) {
            *o = f16::from_bits(s).to_f32() * inverse;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::attention_shape::Window;
    use half::f16;

    /// An f16 cache gives the sums of the same values held as f32 (on
    /// x86 the same SIMD path, so exactly; elsewhere the portable one).
    #[test]
    fn an_f16_cache_sums_as_f32_rows_of_its_values() {
        let mut seed = 5u32;
        let mut random = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            f16::from_f32(((seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 4.0)
        };
        let (heads, kv_heads, head_dim, len) = (4, 2, 16, 40);
        let shape = AttentionShape { heads, kv_heads, head_dim, scale: 0.25, window: Window::Causal, f16_sums: true };
        let q: Vec<f32> = (0..3 * heads * head_dim).map(|_| random().to_f32()).collect();
        let k: Vec<f16> = (0..len * kv_heads * head_dim).map(|_| random()).collect();
        let v: Vec<f16> = (0..len * kv_heads * head_dim).map(|_| random()).collect();
        let widen = |x: &[f16]| x.iter().map(|h| h.to_f32()).collect::<Vec<f32>>();
        let (mut from_f16, mut from_f32) = (vec![0f32; q.len()], vec![0f32; q.len()]);
        attention(&q, &k, &v, (len - 3, len), shape, &mut from_f16);
        attention(&q, &widen(&k), &widen(&v), (len - 3, len), shape, &mut from_f32);
        assert_eq!(from_f16, from_f32);
        assert!(from_f16.iter().any(|&x| x.abs() > 0.1), "the sums are not all zero");
    }
}
