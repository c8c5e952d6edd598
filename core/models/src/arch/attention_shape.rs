//! What every attention kernel here shares: the pass's shape (heads,
//! window, scale), the key/value cache's element types, and the small
//! row operations on them. A leaf below `ops` (the f32 attention) and
//! `flash_f16` (llama.cpp's f16 flash attention), which `ops` calls.

use std::borrow::Cow;

use crate::kernels::parallel::{self, MAP_CHUNK};

/// How the heads are laid out and which keys each query sees.
#[derive(Clone, Copy, Debug)]
pub struct AttentionShape {
    pub heads: usize,
    /// Key/value heads; each serves `heads / kv_heads` query heads
    /// (grouped-query attention).
    pub kv_heads: usize,
    pub head_dim: usize,
    /// What the scores are multiplied by before the softmax.
    pub scale: f32,
    pub window: Window,
    /// Sum the values as llama.cpp's CPU flash attention does for a pass
    /// of few queries over an f16 cache: a key at a time (online
    /// softmax), the running sum stored as f16 after every step. Else in
    /// f32, the softmax first.
    pub f16_sums: bool,
}

/// The keys a query at position `i` attends to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Every token of its sequence (BERT, global layers).
    Full,
    /// Tokens at most this far away on either side (llama.cpp's
    /// `LLAMA_SWA_TYPE_SYMMETRIC`, half its `n_swa`).
    Symmetric(usize),
    /// The token itself and those before it (causal language models).
    Causal,
}

impl Window {
    pub(crate) fn keys(self, i: usize, len: usize) -> std::ops::Range<usize> {
        match self {
            Window::Full => 0..len,
            Window::Symmetric(half) => i.saturating_sub(half)..(i + half + 1).min(len),
            Window::Causal => 0..i + 1,
        }
    }
}

/// What keys and values are held as: f32, or f16 as llama.cpp's cache
/// (half the memory).
pub trait CacheElement: Copy + Send + Sync {
    /// `row` as f32, into `out` of the same length.
    fn widen(row: &[Self], out: &mut [f32]);
    /// Every value as f32 (borrowed where they are).
    fn widen_all(rows: &[Self]) -> Cow<'_, [f32]>;
    /// Keys and values by their type.
    // Read by the x86 kernels only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn rows<'a>(k: &'a [Self], v: &'a [Self]) -> Rows<'a>;
}

/// Keys and values by their type, for kernels written for each.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub enum Rows<'a> {
    F32(&'a [f32], &'a [f32]),
    F16(&'a [half::f16], &'a [half::f16]),
}

impl CacheElement for f32 {
    fn widen(row: &[f32], out: &mut [f32]) {
        out.copy_from_slice(row);
    }

    fn widen_all(rows: &[f32]) -> Cow<'_, [f32]> {
        Cow::Borrowed(rows)
    }

    fn rows<'a>(k: &'a [f32], v: &'a [f32]) -> Rows<'a> {
        Rows::F32(k, v)
    }
}

impl CacheElement for half::f16 {
    fn widen(row: &[half::f16], out: &mut [f32]) {
        // In wasm, half converts a value at a time in software.
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        crate::kernels::wasm::widen_f16(row, out);
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        {
            use half::slice::HalfFloatSliceExt;
            // F16C, eight at a time.
            row.convert_to_f32_slice(out);
        }
    }

    fn widen_all(rows: &[half::f16]) -> Cow<'_, [f32]> {
        let mut out = vec![0f32; rows.len()];
        parallel::chunks_mut(&mut out, MAP_CHUNK, |i, chunk| {
            Self::widen(&rows[i * MAP_CHUNK..][..chunk.len()], chunk);
        });
        Cow::Owned(out)
    }

    fn rows<'a>(k: &'a [half::f16], v: &'a [half::f16]) -> Rows<'a> {
        Rows::F16(k, v)
    }
}

/// `a · b`, in eight lanes (so it vectorises).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
    for (a, b) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += a[i] * b[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Each value rounded to the nearest f16 in place, on this thread
/// (`ops::round_to_f16` spreads it over the cores).
pub(crate) fn round_slice_to_f16(x: &mut [f32]) {
    // In wasm, half converts a value at a time in software.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    crate::kernels::wasm::round_to_f16(x);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        use half::slice::HalfFloatSliceExt;
        let mut halves = [half::f16::ZERO; 256];
        for chunk in x.chunks_mut(halves.len()) {
            // half's slice conversions use F16C eight values at a time.
            let halves = &mut halves[..chunk.len()];
            halves.convert_from_f32_slice(chunk);
            halves.convert_to_f32_slice(chunk);
        }
    }
}
