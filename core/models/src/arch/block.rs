//! The attention block Gemma 3 and Qwen3/Llama share, as llama.cpp builds
//! them: an RMS norm, grouped-query attention (query and key heads RMS
//! normed in Gemma and Qwen3) with rotary position embeddings, an output
//! projection; an RMS norm and a gated feed-forward. Gemma also norms
//! each sub-block's output before adding it back (its post-norms).

use super::backend::Backend;
use super::ops::{self, AttentionShape, Rope};
use super::weights::{Matrix, Vector, Weights};
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};

/// The block's sizes, from the file's `<arch>.*` metadata.
#[derive(Clone, Debug)]
pub struct BlockShape {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    /// Key/value heads; each serves `heads / kv_heads` query heads.
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    /// Positions the model was trained for.
    pub context: usize,
    pub eps: f32,
}

impl BlockShape {
    /// Reads the shape, and refuses one this code cannot run (heads that
    /// cannot be shared, odd head sizes, widths that are not whole Q8_0
    /// blocks, rotary embeddings over part of a head).
    pub fn read(file: &GgufFile, arch: &str) -> Result<BlockShape> {
        let key = |name: &str| format!("{arch}.{name}");
        let present = |name: &str| file.get(&key(name)).is_some();
        let width = file.usize(&key("embedding_length"))?;
        let heads = file.usize(&key("attention.head_count"))?;
        let shape = BlockShape {
            width,
            layers: file.block_count(&key("block_count"))?,
            heads,
            kv_heads: if present("attention.head_count_kv") {
                file.usize(&key("attention.head_count_kv"))?
            } else {
                heads
            },
            head_dim: if present("attention.key_length") {
                file.usize(&key("attention.key_length"))?
            } else {
                width / heads.max(1)
            },
            ffn: file.usize(&key("feed_forward_length"))?,
            context: file.usize(&key("context_length"))?,
            eps: file.f64(&key("attention.layer_norm_rms_epsilon"))? as f32,
        };
        match shape.problem(file.get(&key("rope.dimension_count"))) {
            Some(problem) => Err(Error::invalid(format!("{}: {problem}", file.name()))),
            None => Ok(shape),
        }
    }

    fn problem(&self, rope_dimensions: Option<&Value>) -> Option<String> {
        let (heads, kv_heads, head_dim) = (self.heads, self.kv_heads, self.head_dim);
        // Sizes from the file: their products must not wrap (each is then
        // held to a tensor's shape, which the file's bytes bound).
        let (Some(q_width), Some(kv_width)) = (heads.checked_mul(head_dim), kv_heads.checked_mul(head_dim)) else {
            return Some(format!("{heads} heads of {head_dim} values are too many"));
        };
        if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            Some(format!("{heads} heads cannot share {kv_heads} key/value heads"))
        } else if head_dim == 0 || !head_dim.is_multiple_of(2) {
            Some(format!("head size {head_dim} is not even"))
        } else if [self.width, q_width, kv_width, self.ffn].iter().any(|w| !w.is_multiple_of(32)) {
            Some(format!("widths {}, {q_width}, {kv_width} and {} are not multiples of 32", self.width, self.ffn))
        } else {
            rope_dimensions
                .and_then(Value::as_u64)
                .filter(|&d| d as usize != head_dim)
                .map(|d| format!("rotary embeddings over {d} of {head_dim} dimensions are not supported"))
        }
    }

    /// Attention of every query head over its shared key/value head,
    /// scaled by 1/√head_dim, seeing `window`.
    pub fn attention(&self, window: ops::Window) -> AttentionShape {
        AttentionShape {
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            scale: 1.0 / (self.head_dim as f32).sqrt(),
            window,
            f16_sums: false,
        }
    }
}

/// Which of the optional tensors an architecture's blocks carry.
#[derive(Clone, Copy)]
pub struct BlockKind {
    pub qk_norms: bool,
    pub post_norms: bool,
    /// The feed-forward's gate activation.
    pub activation: Activation,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// GEGLU (Gemma).
    Gelu,
    /// SwiGLU (Llama, Qwen3).
    Silu,
}

/// One block's weights, checked against the shape at load.
pub struct Block {
    attention_norm: Vector,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    qk_norms: Option<(Vector, Vector)>,
    out: Matrix,
    attention_post_norm: Option<Vector>,
    ffn_norm: Vector,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
    ffn_post_norm: Option<Vector>,
    activation: Activation,
}

/// Passes with fewer queries than this take llama.cpp's f16 flash
/// attention on the CPU (queries converted to f16).
const FLASH_F16_QUERIES: usize = 64;

/// How a block's attention runs: which keys each query sees, how
/// positions rotate, and whether keys and values are rounded to f16 first
/// (as llama.cpp's KV cache stores them).
pub struct AttentionRun<'a> {
    pub lengths: &'a [usize],
    pub attention: AttentionShape,
    pub rope: Rope,
    pub rope_base: f32,
    pub f16_keys_values: bool,
}

impl Block {
    pub fn load(weights: &Weights, i: usize, s: &BlockShape, kind: BlockKind) -> Result<Block> {
        let t = |name: &str| format!("blk.{i}.{name}.weight");
        let (q_width, kv_width) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
        let norm = |name: &str, len: usize| weights.vector(&t(name), len);
        let optional = |present: bool, name: &str, len: usize| present.then(|| norm(name, len)).transpose();
        Ok(Block {
            attention_norm: norm("attn_norm", s.width)?,
            q: weights.matrix(&t("attn_q"), q_width, s.width)?,
            k: weights.matrix(&t("attn_k"), kv_width, s.width)?,
            v: weights.matrix(&t("attn_v"), kv_width, s.width)?,
            qk_norms: match kind.qk_norms {
                true => Some((norm("attn_q_norm", s.head_dim)?, norm("attn_k_norm", s.head_dim)?)),
                false => None,
            },
            out: weights.matrix(&t("attn_output"), s.width, q_width)?,
            attention_post_norm: optional(kind.post_norms, "post_attention_norm", s.width)?,
            ffn_norm: norm("ffn_norm", s.width)?,
            gate: weights.matrix(&t("ffn_gate"), s.ffn, s.width)?,
            up: weights.matrix(&t("ffn_up"), s.ffn, s.width)?,
            down: weights.matrix(&t("ffn_down"), s.width, s.ffn)?,
            ffn_post_norm: optional(kind.post_norms, "post_ffw_norm", s.width)?,
            activation: kind.activation,
        })
    }

    /// The attention sub-block's output for the token states `x`
    /// (`[Σ lengths × width]`), before it is added back: all rows, or
    /// each sequence's last row when `last_only` (the rest are not read
    /// again).
    pub fn attention<B: Backend>(
        &self,
        b: &B,
        weights: &Weights,
        x: &B::Tensor,
        s: &BlockShape,
        run: &AttentionRun,
        last_only: bool,
    ) -> B::Tensor {
        let mut h = b.copy(x);
        b.rms_norm(&mut h, &self.attention_norm, s.eps);
        let [mut q, mut k, mut v] = b.matmul_each(weights, &h, [(&self.q, None), (&self.k, None), (&self.v, None)]);
        drop(h);
        if let Some((q_norm, k_norm)) = &self.qk_norms {
            b.rms_norm(&mut q, q_norm, s.eps);
            b.rms_norm(&mut k, k_norm, s.eps);
        }
        b.rope(&mut q, run.lengths, s.head_dim, run.rope_base, run.rope);
        b.rope(&mut k, run.lengths, s.head_dim, run.rope_base, run.rope);
        let mut attention = run.attention;
        if run.f16_keys_values {
            // Queries too, and the values summed in f16, where llama.cpp's
            // f16 flash attention would run (see `attention_cached`): here
            // when every sequence is that short.
            if run.lengths.iter().all(|&len| len < FLASH_F16_QUERIES) {
                b.round_to_f16(&mut q);
                attention.f16_sums = true;
            }
            b.round_to_f16(&mut k);
            b.round_to_f16(&mut v);
        }
        let mut attended = b.attention(&q, &k, &v, run.lengths, attention);
        if last_only {
            attended = b.last_rows(&attended, run.lengths, s.heads * s.head_dim);
        }
        let mut out = b.project(weights, &attended, &self.out, None);
        if let Some(norm) = &self.attention_post_norm {
            b.rms_norm(&mut out, norm, s.eps);
        }
        out
    }

    /// The attention sub-block's output for the next `tokens` of one
    /// sequence whose earlier tokens' keys and values are in `cache`
    /// (`cached` of them): the new tokens' keys and values join the cache.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_cached<B: Backend>(
        &self,
        b: &B,
        weights: &Weights,
        x: &B::Tensor,
        s: &BlockShape,
        cache: &mut B::Cache,
        (cached, tokens): (usize, usize),
        rope: Rope,
        rope_base: f32,
    ) -> B::Tensor {
        let mut h = b.copy(x);
        b.rms_norm(&mut h, &self.attention_norm, s.eps);
        let [mut q, mut k, v] = b.matmul_each(weights, &h, [(&self.q, None), (&self.k, None), (&self.v, None)]);
        drop(h);
        if let Some((q_norm, k_norm)) = &self.qk_norms {
            b.rms_norm(&mut q, q_norm, s.eps);
            b.rms_norm(&mut k, k_norm, s.eps);
        }
        let at = [(cached, tokens)];
        b.rope_from(&mut q, &at, s.head_dim, rope_base, rope);
        b.rope_from(&mut k, &at, s.head_dim, rope_base, rope);
        // Keys and values as llama.cpp's cache holds them: f16. A pass of
        // fewer than 64 tokens (a decoded token, a short prompt) takes
        // llama.cpp's f16 flash-attention path, which reads the queries as
        // f16 too (rounding them took a Q4_K_M Qwen3's greedy run from 4
        // to 20 tokens agreed with llama.cpp) and sums the values in f16
        // (see `flash_f16::attention`).
        let short = tokens < FLASH_F16_QUERIES;
        if short {
            b.round_to_f16(&mut q);
        }
        let attention = AttentionShape { f16_sums: short, ..s.attention(ops::Window::Causal) };
        let attended = b.attention_cached(&q, k, v, cache, attention);
        b.project(weights, &attended, &self.out, None)
    }

    /// The feed-forward sub-block's output for `x`, before it is added back.
    pub fn feed_forward<B: Backend>(&self, b: &B, weights: &Weights, x: &B::Tensor, s: &BlockShape) -> B::Tensor {
        let mut h = b.copy(x);
        b.rms_norm(&mut h, &self.ffn_norm, s.eps);
        let [mut gate, up] = b.matmul_each(weights, &h, [(&self.gate, None), (&self.up, None)]);
        drop(h);
        match self.activation {
            Activation::Gelu => b.gelu_gate(&mut gate, &up),
            Activation::Silu => b.silu_gate(&mut gate, &up),
        }
        drop(up);
        let mut out = b.project(weights, &gate, &self.down, None);
        if let Some(norm) = &self.ffn_post_norm {
            b.rms_norm(&mut out, norm, s.eps);
        }
        out
    }
}
