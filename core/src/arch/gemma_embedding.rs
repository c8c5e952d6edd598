//! EmbeddingGemma (`general.architecture = gemma-embedding`, qmd's default
//! embedding model) as llama.cpp runs it (`llama_model_gemma_embedding`):
//! Gemma 3 blocks with bidirectional attention, token embeddings scaled by
//! √width, RMS norms before and after attention and the feed-forward, q/k
//! norms, NEOX rotary embeddings, grouped-query attention; five of every
//! six layers see a symmetric window of tokens (with their own rope base),
//! the sixth the whole text. Mean pooling, then the sentence-transformers
//! dense projections when the file carries them (`dense_2`, `dense_3`).

use super::ops::{self, AttentionShape, Rope, Window};
use super::weights::{Matrix, ModelBytes, Weights};
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};
use crate::kernels::{matmul, matmul_each};

const ARCH: &str = "gemma-embedding";

#[derive(Clone, Debug)]
pub struct GemmaShape {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub context: usize,
    pub eps: f32,
    /// Tokens a windowed layer's query sees on each side.
    pub window_half: usize,
    /// Every `window_period`-th layer (the last of each group) is global.
    pub window_period: usize,
    pub rope_base: f32,
    pub rope_base_windowed: f32,
    /// Width of the pooled vector after the dense projections.
    pub output_width: usize,
}

struct Layer {
    attention_norm: Vec<f32>,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    out: Matrix,
    attention_post_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
    ffn_post_norm: Vec<f32>,
}

pub struct GemmaEmbedding {
    pub shape: GemmaShape,
    weights: Weights,
    tokens: Matrix,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    /// `dense_2` then `dense_3`, applied to the pooled vector.
    dense: Vec<Matrix>,
}

impl GemmaEmbedding {
    pub fn load(file: &GgufFile, bytes: ModelBytes) -> Result<GemmaEmbedding> {
        let key = |name: &str| format!("{ARCH}.{name}");
        let optional = |name: &str| file.get(&key(name));
        let width = file.usize(&key("embedding_length"))?;
        let heads = file.usize(&key("attention.head_count"))?;
        let kv_heads = match optional("attention.head_count_kv") {
            Some(_) => file.usize(&key("attention.head_count_kv"))?,
            None => heads,
        };
        let head_dim = match optional("attention.key_length") {
            Some(_) => file.usize(&key("attention.key_length"))?,
            None => width / heads.max(1),
        };
        let float = |name: &str, default: f32| match optional(name) {
            None => Ok(default),
            Some(_) => file.f64(&key(name)).map(|v| v as f32),
        };
        // A scalar period; llama.cpp ignores an array here and keeps 6.
        let window_period = match optional("attention.sliding_window_pattern") {
            Some(Value::Array(_)) | None => 6,
            Some(_) => file.usize(&key("attention.sliding_window_pattern"))?,
        };
        let shape = GemmaShape {
            width,
            layers: file.usize(&key("block_count"))?,
            heads,
            kv_heads,
            head_dim,
            ffn: file.usize(&key("feed_forward_length"))?,
            context: file.usize(&key("context_length"))?,
            eps: file.f64(&key("attention.layer_norm_rms_epsilon"))? as f32,
            window_half: file.usize(&key("attention.sliding_window"))? / 2,
            window_period,
            rope_base: float("rope.freq_base", 10_000.0)?,
            rope_base_windowed: float("rope.freq_base_swa", 10_000.0)?,
            output_width: width,
        };
        let problem = if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            Some(format!("{heads} heads cannot share {kv_heads} key/value heads"))
        } else if head_dim == 0 || !head_dim.is_multiple_of(2) {
            Some(format!("head size {head_dim} is not even"))
        } else if !width.is_multiple_of(32) || !(heads * head_dim).is_multiple_of(32) || !shape.ffn.is_multiple_of(32) {
            Some(format!("widths {width}, {} and {} are not multiples of 32", heads * head_dim, shape.ffn))
        } else {
            optional("rope.dimension_count")
                .and_then(Value::as_u64)
                .filter(|&d| d as usize != head_dim)
                .map(|d| format!("rotary embeddings over {d} of {head_dim} dimensions are not supported"))
        };
        if let Some(problem) = problem {
            return Err(Error::invalid(format!("{}: {problem}", file.name())));
        }
        let weights = Weights::new(file, bytes);
        let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let t = |name: &str| format!("blk.{i}.{name}.weight");
            layers.push(Layer {
                attention_norm: weights.vector(&t("attn_norm"), width)?,
                q: weights.matrix(&t("attn_q"), q_width, width)?,
                k: weights.matrix(&t("attn_k"), kv_width, width)?,
                v: weights.matrix(&t("attn_v"), kv_width, width)?,
                q_norm: weights.vector(&t("attn_q_norm"), head_dim)?,
                k_norm: weights.vector(&t("attn_k_norm"), head_dim)?,
                out: weights.matrix(&t("attn_output"), width, q_width)?,
                attention_post_norm: weights.vector(&t("post_attention_norm"), width)?,
                ffn_norm: weights.vector(&t("ffn_norm"), width)?,
                gate: weights.matrix(&t("ffn_gate"), shape.ffn, width)?,
                up: weights.matrix(&t("ffn_up"), shape.ffn, width)?,
                down: weights.matrix(&t("ffn_down"), width, shape.ffn)?,
                ffn_post_norm: weights.vector(&t("post_ffw_norm"), width)?,
            });
        }
        // sentence-transformers' Dense modules, in order: dense_2 widens
        // the pooled vector, dense_3 brings it back.
        let mut dense = Vec::new();
        let mut shape = shape;
        for name in ["dense_2.weight", "dense_3.weight"] {
            if let Some(outputs) = file.tensor(name).map(|t| t.rows().1) {
                dense.push(weights.matrix(name, outputs, shape.output_width)?);
                shape.output_width = outputs;
            }
        }
        let vocab = file.tensor("token_embd.weight").map_or(0, |t| t.rows().1);
        Ok(GemmaEmbedding {
            tokens: weights.matrix("token_embd.weight", vocab.max(1), width)?,
            output_norm: weights.vector("output_norm.weight", width)?,
            layers,
            dense,
            shape,
            weights,
        })
    }

    fn attention(&self, layer: usize) -> AttentionShape {
        let global = layer % self.shape.window_period.max(1) == self.shape.window_period.max(1) - 1;
        AttentionShape {
            heads: self.shape.heads,
            kv_heads: self.shape.kv_heads,
            head_dim: self.shape.head_dim,
            // Gemma scales queries by 1/√head_dim before the product.
            scale: 1.0 / (self.shape.head_dim as f32).sqrt(),
            window: if global { Window::Full } else { Window::Symmetric(self.shape.window_half) },
        }
    }

    /// One unit vector per sequence of token ids (special tokens
    /// included, at most [`GemmaShape::context`] each).
    pub fn embed(&self, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        if let Some(len) = lengths.iter().find(|&&l| l == 0 || l > self.shape.context) {
            return Err(Error::invalid(format!("a sequence of {len} tokens (1 to {} fit)", self.shape.context)));
        }
        let x = self.encode(sequences, &lengths)?;
        let mut pooled = ops::mean_pool(&x, &lengths, self.shape.width).concat();
        for matrix in &self.dense {
            let view = self.weights.view(matrix);
            let mut out = vec![0f32; sequences.len() * view.rows];
            matmul(&pooled, &view, None, &mut out);
            pooled = out;
        }
        let mut pooled: Vec<Vec<f32>> = pooled.chunks_exact(self.shape.output_width).map(<[f32]>::to_vec).collect();
        pooled.iter_mut().for_each(|v| ops::l2_normalize(v));
        Ok(pooled)
    }

    /// The normalised last layer's token states, `[Σ lengths × width]`.
    fn encode(&self, sequences: &[Vec<u32>], lengths: &[usize]) -> Result<Vec<f32>> {
        let s = &self.shape;
        let mut x = self.embeddings(sequences)?;
        let tokens = x.len() / s.width;
        let project = |input: &[f32], m: &Matrix| {
            let view = self.weights.view(m);
            let mut out = vec![0f32; tokens * view.rows];
            matmul(input, &view, None, &mut out);
            out
        };
        for (i, layer) in self.layers.iter().enumerate() {
            let attention = self.attention(i);
            let base = if attention.window == Window::Full { s.rope_base } else { s.rope_base_windowed };
            let mut h = x.clone();
            ops::rms_norm(&mut h, &layer.attention_norm, s.eps);
            let view = |m: &Matrix| self.weights.view(m);
            let [mut q, mut k, v] = matmul_each(&h, [&view(&layer.q), &view(&layer.k), &view(&layer.v)]);
            ops::rms_norm(&mut q, &layer.q_norm, s.eps);
            ops::rms_norm(&mut k, &layer.k_norm, s.eps);
            ops::rope(&mut q, lengths, s.head_dim, base, Rope::Halves);
            ops::rope(&mut k, lengths, s.head_dim, base, Rope::Halves);
            let mut attended = project(&ops::attention(&q, &k, &v, lengths, attention), &layer.out);
            ops::rms_norm(&mut attended, &layer.attention_post_norm, s.eps);
            ops::add(&mut x, &attended);
            let mut h = x.clone();
            ops::rms_norm(&mut h, &layer.ffn_norm, s.eps);
            let [mut gate, up] = matmul_each(&h, [&view(&layer.gate), &view(&layer.up)]);
            ops::gelu_gate(&mut gate, &up);
            let mut out = project(&gate, &layer.down);
            ops::rms_norm(&mut out, &layer.ffn_post_norm, s.eps);
            ops::add(&mut x, &out);
        }
        ops::rms_norm(&mut x, &self.output_norm, s.eps);
        Ok(x)
    }

    /// Token embeddings scaled by √width.
    fn embeddings(&self, sequences: &[Vec<u32>]) -> Result<Vec<f32>> {
        let w = self.shape.width;
        let mut x = ops::embed_tokens(&self.weights.view(&self.tokens), sequences)?;
        ops::scale(&mut x, (w as f32).sqrt());
        Ok(x)
    }
}
