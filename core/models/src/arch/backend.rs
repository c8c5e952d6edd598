//! Where an architecture's forward pass runs. The architectures are
//! written once over [`Backend`]; [`Cpu`] runs each operation at once on
//! rows of f32 in memory (the quantized kernels of [`crate::kernels`]),
//! the GPU backend (`crate::gpu`) records it as a compute dispatch and
//! runs the whole pass when the result is read.
//!
//! Token embeddings are looked up on the device too ([`Backend::lookup`]):
//! a GPU gets the token ids, not a pass's first activations.

use super::kv_cache::KvCache;
use super::ops::{self, AttentionShape, Rope};
use super::weights::{Matrix, Vector, Weights};
use crate::kernels::matmul_each_biased;

/// The value of `future`, which must finish at its first poll: a forward
/// pass on the CPU does, and so does a native GPU's read (it waits on the
/// device). A browser cannot wait on its GPU, so there such a read is an
/// error saying to read asynchronously: one async path serves both.
pub fn now<T>(future: impl std::future::Future<Output = crate::Result<T>>) -> crate::Result<T> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => {
            Err(crate::Error::io("reading the GPU's result: in a browser it can only be read asynchronously"))
        }
    }
}

/// The operations between a model's input rows and its output rows.
/// Tensors are `[rows × width]` f32, row-major, the width implied by the
/// operation (as in [`ops`]).
pub trait Backend {
    type Tensor;
    /// One block's keys and values of the tokens a sequence has seen, where
    /// this backend keeps them (a decoder's KV cache).
    type Cache: Default;

    /// Rows computed on the CPU, for the backend.
    fn upload(&self, rows: Vec<f32>) -> Self::Tensor;
    /// The tensor's values, after every operation recorded on it.
    fn read(&self, x: Self::Tensor) -> crate::Result<Vec<f32>>;
    fn copy(&self, x: &Self::Tensor) -> Self::Tensor;
    /// Rows `ids` of `m` (an embedding table); an error names an id
    /// outside it.
    fn lookup(&self, weights: &Weights, m: &Matrix, ids: &[u32]) -> crate::Result<Self::Tensor>;

    /// `x · mᵀ + bias` for each of several matrices taking the same inputs.
    fn matmul_each<const N: usize>(
        &self,
        weights: &Weights,
        x: &Self::Tensor,
        ms: [(&Matrix, Option<&Vector>); N],
    ) -> [Self::Tensor; N];

    fn rms_norm(&self, x: &mut Self::Tensor, weight: &Vector, eps: f32);
    fn layer_norm(&self, x: &mut Self::Tensor, weight: &Vector, bias: &Vector, eps: f32);
    /// `x += y`.
    fn add(&self, x: &mut Self::Tensor, y: &Self::Tensor);
    /// `row` added to each row of `x`.
    fn add_row(&self, x: &mut Self::Tensor, row: &Vector);
    /// `x *= factor`.
    fn scale(&self, x: &mut Self::Tensor, factor: f32);
    /// Rotary embeddings for packed sequences `(first position, length)`.
    fn rope_from(&self, x: &mut Self::Tensor, sequences: &[(usize, usize)], head_dim: usize, base: f32, layout: Rope);
    /// Each value rounded to the nearest f16 (llama.cpp's KV cache).
    fn round_to_f16(&self, x: &mut Self::Tensor);
    fn attention(
        &self,
        q: &Self::Tensor,
        k: &Self::Tensor,
        v: &Self::Tensor,
        lengths: &[usize],
        shape: AttentionShape,
    ) -> Self::Tensor;
    /// Appends `k` and `v`, the next tokens' keys and values (rope
    /// applied), to `cache` as f16 (llama.cpp's cache) and returns the
    /// causal attention of their queries `q` over every key the cache
    /// holds.
    fn attention_cached(
        &self,
        q: &Self::Tensor,
        k: Self::Tensor,
        v: Self::Tensor,
        cache: &mut Self::Cache,
        shape: AttentionShape,
    ) -> Self::Tensor;
    fn gelu(&self, x: &mut Self::Tensor);
    /// `gate = gelu(gate) · up`.
    fn gelu_gate(&self, gate: &mut Self::Tensor, up: &Self::Tensor);
    /// `gate = silu(gate) · up`.
    fn silu_gate(&self, gate: &mut Self::Tensor, up: &Self::Tensor);
    /// Each sequence's last row.
    fn last_rows(&self, x: &Self::Tensor, lengths: &[usize], width: usize) -> Self::Tensor;
    /// Each sequence's first row.
    fn first_rows(&self, x: &Self::Tensor, lengths: &[usize], width: usize) -> Self::Tensor;
    /// The mean of each sequence's rows.
    fn mean_rows(&self, x: &Self::Tensor, lengths: &[usize], width: usize) -> Self::Tensor;

    /// Rotary embeddings for packed sequences, positions counted from 0.
    fn rope(&self, x: &mut Self::Tensor, lengths: &[usize], head_dim: usize, base: f32, layout: Rope) {
        let sequences: Vec<(usize, usize)> = lengths.iter().map(|&len| (0, len)).collect();
        self.rope_from(x, &sequences, head_dim, base, layout);
    }

    /// `x · mᵀ`.
    fn project(&self, weights: &Weights, x: &Self::Tensor, m: &Matrix, bias: Option<&Vector>) -> Self::Tensor {
        let [out] = self.matmul_each(weights, x, [(m, bias)]);
        out
    }
}

/// The CPU: every operation at once, on all cores.
pub struct Cpu;

impl Backend for Cpu {
    type Tensor = Vec<f32>;
    type Cache = KvCache;

    fn upload(&self, rows: Vec<f32>) -> Vec<f32> {
        rows
    }

    fn read(&self, x: Vec<f32>) -> crate::Result<Vec<f32>> {
        Ok(x)
    }

    fn copy(&self, x: &Vec<f32>) -> Vec<f32> {
        x.clone()
    }

    fn lookup(&self, weights: &Weights, m: &Matrix, ids: &[u32]) -> crate::Result<Vec<f32>> {
        ops::lookup(&weights.view(m), ids)
    }

    fn matmul_each<const N: usize>(
        &self,
        weights: &Weights,
        x: &Vec<f32>,
        ms: [(&Matrix, Option<&Vector>); N],
    ) -> [Vec<f32>; N] {
        let views = ms.map(|(m, bias)| (weights.view(m), bias));
        let each: [_; N] = std::array::from_fn(|i| (&views[i].0, views[i].1.map(|b| b.values())));
        matmul_each_biased(x, each)
    }

    fn rms_norm(&self, x: &mut Vec<f32>, weight: &Vector, eps: f32) {
        ops::rms_norm(x, weight.values(), eps);
    }

    fn layer_norm(&self, x: &mut Vec<f32>, weight: &Vector, bias: &Vector, eps: f32) {
        ops::layer_norm(x, weight.len(), weight.values(), bias.values(), eps);
    }

    fn add(&self, x: &mut Vec<f32>, y: &Vec<f32>) {
        ops::add(x, y);
    }

    fn add_row(&self, x: &mut Vec<f32>, row: &Vector) {
        x.chunks_exact_mut(row.len()).for_each(|r| ops::add(r, row.values()));
    }

    fn scale(&self, x: &mut Vec<f32>, factor: f32) {
        ops::scale(x, factor);
    }

    fn rope_from(&self, x: &mut Vec<f32>, sequences: &[(usize, usize)], head_dim: usize, base: f32, layout: Rope) {
        ops::rope_from(x, sequences, head_dim, base, layout);
    }

    fn round_to_f16(&self, x: &mut Vec<f32>) {
        *x = ops::round_to_f16(std::mem::take(x));
    }

    fn attention(
        &self,
        q: &Vec<f32>,
        k: &Vec<f32>,
        v: &Vec<f32>,
        lengths: &[usize],
        shape: AttentionShape,
    ) -> Vec<f32> {
        ops::attention(q, k, v, lengths, shape)
    }

    fn attention_cached(
        &self,
        q: &Vec<f32>,
        k: Vec<f32>,
        v: Vec<f32>,
        cache: &mut KvCache,
        shape: AttentionShape,
    ) -> Vec<f32> {
        cache.attend(q, &k, &v, shape)
    }

    fn gelu(&self, x: &mut Vec<f32>) {
        ops::gelu(x);
    }

    fn gelu_gate(&self, gate: &mut Vec<f32>, up: &Vec<f32>) {
        ops::gelu_gate(gate, up);
    }

    fn silu_gate(&self, gate: &mut Vec<f32>, up: &Vec<f32>) {
        ops::silu_gate(gate, up);
    }

    fn last_rows(&self, x: &Vec<f32>, lengths: &[usize], _width: usize) -> Vec<f32> {
        ops::last_rows(x, lengths)
    }

    fn first_rows(&self, x: &Vec<f32>, lengths: &[usize], width: usize) -> Vec<f32> {
        ops::first_token(x, lengths, width)
    }

    fn mean_rows(&self, x: &Vec<f32>, lengths: &[usize], width: usize) -> Vec<f32> {
        ops::mean_pool(x, lengths, width)
    }
}
