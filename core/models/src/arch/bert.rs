//! BERT sentence encoders from GGUF (`general.architecture = bert`), as
//! llama.cpp runs them (`build_bert`): token + type + position
//! embeddings, post-norm encoder layers, the model's pooling.

use super::backend::Backend;
use super::ops::{self, AttentionShape, Window};
use super::weights::{Matrix, ModelBytes, Vector, Weights};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;

/// How token states become one vector (`bert.pooling_type`, llama.cpp's
/// numbers: 1 mean, 2 CLS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
}

#[derive(Clone, Debug)]
pub struct BertShape {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub ffn: usize,
    /// Positions the model has embeddings for.
    pub context: usize,
    pub eps: f32,
    pub pooling: Pooling,
}

struct Layer {
    q: Matrix,
    q_bias: Vector,
    k: Matrix,
    k_bias: Vector,
    v: Matrix,
    v_bias: Vector,
    out: Matrix,
    out_bias: Vector,
    attention_norm: (Vector, Vector),
    up: Matrix,
    up_bias: Vector,
    down: Matrix,
    down_bias: Vector,
    output_norm: (Vector, Vector),
}

pub struct Bert {
    pub shape: BertShape,
    attention: AttentionShape,
    weights: Weights,
    tokens: Matrix,
    /// Type 0's embedding (every text is one segment).
    token_type: Vector,
    positions: Matrix,
    embedding_norm: (Vector, Vector),
    layers: Vec<Layer>,
}

impl Bert {
    pub fn load(file: &GgufFile, bytes: ModelBytes) -> Result<Bert> {
        let arch = file.architecture()?;
        if arch != "bert" {
            return Err(Error::invalid(format!("{}: architecture {arch} is not BERT", file.name())));
        }
        let key = |name: &str| format!("bert.{name}");
        let pooling = match file.get(&key("pooling_type")).and_then(|v| v.as_u64()) {
            None | Some(1) => Pooling::Mean,
            Some(2) => Pooling::Cls,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "{}: pooling type {other} is not supported for embeddings (mean or CLS are)",
                    file.name()
                )));
            }
        };
        let shape = BertShape {
            width: file.usize(&key("embedding_length"))?,
            layers: file.block_count(&key("block_count"))?,
            heads: file.usize(&key("attention.head_count"))?,
            ffn: file.usize(&key("feed_forward_length"))?,
            context: file.usize(&key("context_length"))?,
            eps: file.f64(&key("attention.layer_norm_epsilon"))? as f32,
            pooling,
        };
        Bert::from_weights(shape, Weights::new(file, bytes))
    }

    /// The model of `shape` over `weights` named as llama.cpp's converter
    /// names them (a GGUF file's, or a repository's converted at load),
    /// every tensor's shape checked.
    pub fn from_weights(shape: BertShape, weights: Weights) -> Result<Bert> {
        let w = shape.width;
        if shape.heads == 0 || !w.is_multiple_of(shape.heads) || !w.is_multiple_of(32) {
            return Err(Error::invalid(format!(
                "{}: embedding length {w} is not a multiple of 32 and of the {} heads",
                weights.name(),
                shape.heads
            )));
        }
        let vocab = weights.rows_of("token_embd.weight").unwrap_or(0);
        let norm = |name: &str| -> Result<(Vector, Vector)> {
            Ok((weights.vector(&format!("{name}.weight"), w)?, weights.vector(&format!("{name}.bias"), w)?))
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let t = |name: &str| format!("blk.{i}.{name}");
            layers.push(Layer {
                q: weights.matrix(&t("attn_q.weight"), w, w)?,
                q_bias: weights.vector(&t("attn_q.bias"), w)?,
                k: weights.matrix(&t("attn_k.weight"), w, w)?,
                k_bias: weights.vector(&t("attn_k.bias"), w)?,
                v: weights.matrix(&t("attn_v.weight"), w, w)?,
                v_bias: weights.vector(&t("attn_v.bias"), w)?,
                out: weights.matrix(&t("attn_output.weight"), w, w)?,
                out_bias: weights.vector(&t("attn_output.bias"), w)?,
                attention_norm: norm(&t("attn_output_norm"))?,
                up: weights.matrix(&t("ffn_up.weight"), shape.ffn, w)?,
                up_bias: weights.vector(&t("ffn_up.bias"), shape.ffn)?,
                down: weights.matrix(&t("ffn_down.weight"), w, shape.ffn)?,
                down_bias: weights.vector(&t("ffn_down.bias"), w)?,
                output_norm: norm(&t("layer_output_norm"))?,
            });
        }
        let token_types =
            weights.matrix("token_types.weight", 2, w).or_else(|_| weights.matrix("token_types.weight", 1, w))?;
        let token_type = weights.row(&token_types, 0)?;
        let head_dim = w / shape.heads;
        let attention = AttentionShape {
            heads: shape.heads,
            kv_heads: shape.heads,
            head_dim,
            scale: 1.0 / (head_dim as f32).sqrt(),
            window: Window::Full,
            f16_sums: false,
        };
        Ok(Bert {
            attention,
            tokens: weights.matrix("token_embd.weight", vocab.max(1), w)?,
            token_type,
            positions: weights.matrix("position_embd.weight", shape.context, w)?,
            embedding_norm: norm("token_embd_norm")?,
            layers,
            shape,
            weights,
        })
    }

    /// One pooled row per sequence of token ids (special tokens
    /// included, at most [`BertShape::context`] each), recorded on `b`.
    pub fn pooled<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<B::Tensor> {
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        if let Some(len) = lengths.iter().find(|&&l| l == 0 || l > self.shape.context) {
            return Err(Error::invalid(format!("a sequence of {len} tokens (1 to {} fit)", self.shape.context)));
        }
        let x = self.encode(b, sequences, &lengths)?;
        let pooled = match self.shape.pooling {
            Pooling::Mean => b.mean_rows(&x, &lengths, self.shape.width),
            Pooling::Cls => b.first_rows(&x, &lengths, self.shape.width),
        };
        Ok(pooled)
    }

    /// The last layer's token states, `[Σ lengths × width]`.
    fn encode<B: Backend>(&self, b: &B, sequences: &[Vec<u32>], lengths: &[usize]) -> Result<B::Tensor> {
        let eps = self.shape.eps;
        let w = &self.weights;
        let mut x = self.embeddings(b, sequences)?;
        for layer in &self.layers {
            let [q, k, v] = b.matmul_each(
                w,
                &x,
                [(&layer.q, Some(&layer.q_bias)), (&layer.k, Some(&layer.k_bias)), (&layer.v, Some(&layer.v_bias))],
            );
            let attended = b.attention(&q, &k, &v, lengths, self.attention);
            drop((q, k, v));
            let attended = b.project(w, &attended, &layer.out, Some(&layer.out_bias));
            b.add(&mut x, &attended);
            drop(attended);
            b.layer_norm(&mut x, &layer.attention_norm.0, &layer.attention_norm.1, eps);
            let mut hidden = b.project(w, &x, &layer.up, Some(&layer.up_bias));
            b.gelu(&mut hidden);
            let out = b.project(w, &hidden, &layer.down, Some(&layer.down_bias));
            drop(hidden);
            b.add(&mut x, &out);
            b.layer_norm(&mut x, &layer.output_norm.0, &layer.output_norm.1, eps);
        }
        Ok(x)
    }

    /// Token + position + type embeddings, normalised.
    fn embeddings<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<B::Tensor> {
        let positions = ops::positions(sequences.iter().map(Vec::len));
        let mut x = b.lookup(&self.weights, &self.tokens, &sequences.concat())?;
        b.add(&mut x, &b.lookup(&self.weights, &self.positions, &positions)?);
        b.add_row(&mut x, &self.token_type);
        let (weight, bias) = &self.embedding_norm;
        b.layer_norm(&mut x, weight, bias, self.shape.eps);
        Ok(x)
    }
}
