//! AVX2 kernel for Q4_0 and Q4_1 weights × Q8_0/Q8_1 activations. Each
//! weight block's 16 bytes of nibbles are spread to 32 unsigned bytes
//! (values 0–15 in the low half, 16–31 in the high, as ggml's
//! `bytes_from_nibbles_32`), multiplied with the activation bytes by
//! `vpmaddubsw` (at most 2 · 15 · 127) and summed by `vpmaddwd`. The
//! weights' zero point enters as ggml's kernels have it: Q4_0's −8 in
//! integers (`−8 · Σx`, the activations' block sum, before the block is
//! scaled), Q4_1's minimum as `m · s` (the Q8_1 sum term).

use std::arch::x86_64::*;
use std::ops::Range;

use super::{RM, RN, Span, half_at, store, tile_rows, tiles};
use crate::gguf::GgmlType;
use crate::kernels::{QMatrix, QuantizedRows};

pub fn available() -> bool {
    crate::kernels::dispatch::avx2()
}

pub fn avx2_q4_matmul(x: &QuantizedRows, rows: Range<usize>, w: &QMatrix, out: &mut [f32]) {
    // SAFETY: chosen only where `available()`.
    tiles(rows, w.rows, out, |(first, count), columns, out| unsafe {
        match count {
            RM => tile::<RM>(x, first, w, columns, out),
            _ => tile::<1>(x, first, w, columns, out),
        }
    });
}

#[target_feature(enable = "avx2,fma,f16c")]
fn tile<const R: usize>(x: &QuantizedRows, first: usize, w: &QMatrix, columns: Span, out: &mut [f32]) {
    let (xr, wr) = tile_rows::<R>(x, first, w, columns);
    let q4_1 = w.kind == GgmlType::Q4_1;
    let (block_bytes, nibbles) = if q4_1 { (20, 4) } else { (18, 2) };
    let blocks = x.k / 32;
    let sums: [&[i32]; R] = std::array::from_fn(|i| &x.sums[(first + i) * blocks..][..blocks]);
    let scaled_sums: [&[f32]; R] = std::array::from_fn(|i| x.scaled_sums(first + i));
    let mut acc = [[_mm256_setzero_ps(); RN]; R];
    let mut minimums = [[0f32; RN]; R];
    let (ones, low_nibbles) = (_mm256_set1_epi16(1), _mm256_set1_epi8(0xF));
    for b in 0..blocks {
        // SAFETY: block b of a row of k values.
        let xs: [__m256i; R] =
            std::array::from_fn(|i| unsafe { _mm256_loadu_si256(xr[i].0.as_ptr().add(32 * b).cast()) });
        for j in 0..RN {
            let block = &wr[j][block_bytes * b..][..block_bytes];
            // SAFETY: 16 bytes of nibbles.
            let q = unsafe { _mm_loadu_si128(block[nibbles..nibbles + 16].as_ptr().cast()) };
            let wv = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16::<4>(q), q), low_nibbles);
            let dw = half_at(block, 0);
            for i in 0..R {
                let mut sum = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, xs[i]), ones);
                if q4_1 {
                    minimums[i][j] += half_at(block, 2) * scaled_sums[i][b];
                } else {
                    sum = _mm256_add_epi32(sum, _mm256_zextsi128_si256(_mm_cvtsi32_si128(-8 * sums[i][b])));
                }
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(xr[i].1[b] * dw), acc[i][j]);
            }
        }
    }
    store(&acc, &minimums, columns, out, w.rows);
}
