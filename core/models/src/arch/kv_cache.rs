//! The CPU's key/value cache: each block's keys and values of the tokens
//! a sequence has seen, as f16 (what llama.cpp's cache holds). The CPU
//! backend's `Cache`; the GPU keeps its own (`gpu::GpuKvCache`).

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::ops::{self, AttentionShape};

/// One block's keys and values of the tokens a sequence has seen so far
/// (rope applied), `[len × kv_heads·head_dim]` each, as f16: what
/// llama.cpp's cache holds, in half the memory of f32.
#[derive(Default)]
pub struct KvCache {
    keys: Vec<f16>,
    values: Vec<f16>,
    len: usize,
}

impl KvCache {
    /// `Backend::attention_cached` on the CPU: appends the new tokens'
    /// keys and values, rounded to f16, and attends their queries `q` over
    /// the whole cache.
    pub fn attend(&mut self, q: &[f32], keys: &[f32], values: &[f32], shape: AttentionShape) -> Vec<f32> {
        for (cache, new) in [(&mut self.keys, keys), (&mut self.values, values)] {
            let at = cache.len();
            cache.resize(at + new.len(), f16::ZERO);
            // F16C, eight at a time.
            cache[at..].convert_from_f32_slice(new);
        }
        let attended = ops::attention_after(q, &self.keys, &self.values, self.len, shape);
        self.len += q.len() / (shape.heads * shape.head_dim);
        attended
    }
}
