//! EmbeddingGemma (`general.architecture = gemma-embedding`, qmd's default
//! embedding model) as llama.cpp runs it (`llama_model_gemma_embedding`):
//! Gemma 3 blocks with bidirectional attention, token embeddings scaled by
//! √width, RMS norms before and after attention and the feed-forward, q/k
//! norms, NEOX rotary embeddings, grouped-query attention; five of every
//! six layers see a symmetric window of tokens (with their own rope base),
//! the sixth the whole text. Mean pooling, then the sentence-transformers
//! dense projections when the file carries them (`dense_2`, `dense_3`).

use super::backend::Backend;
use super::block::{Activation, AttentionRun, Block, BlockKind, BlockShape};
use super::ops::{Rope, Window};
use super::weights::{Matrix, ModelBytes, Vector, Weights};
use crate::error::{Error, Result};
use crate::gguf::{GgufFile, Value};

const ARCH: &str = "gemma-embedding";

#[derive(Clone, Debug)]
pub struct GemmaShape {
    pub block: BlockShape,
    /// Tokens a windowed layer's query sees on each side.
    pub window_half: usize,
    /// Every `window_period`-th layer (the last of each group) is global.
    pub window_period: usize,
    pub rope_base: f32,
    pub rope_base_windowed: f32,
    /// Width of the pooled vector after the dense projections.
    pub output_width: usize,
}

pub struct GemmaEmbedding {
    pub shape: GemmaShape,
    weights: Weights,
    tokens: Matrix,
    layers: Vec<Block>,
    output_norm: Vector,
    /// `dense_2` then `dense_3`, applied to the pooled vector.
    dense: Vec<Matrix>,
}

impl GemmaEmbedding {
    pub fn load(file: &GgufFile, bytes: ModelBytes) -> Result<GemmaEmbedding> {
        let block = BlockShape::read(file, ARCH)?;
        let key = |name: &str| format!("{ARCH}.{name}");
        let optional = |name: &str| file.get(&key(name));
        let float = |name: &str, default: f32| match optional(name) {
            None => Ok(default),
            Some(_) => file.f64(&key(name)).map(|v| v as f32),
        };
        // A scalar period; llama.cpp ignores an array here and keeps 6.
        let window_period = match optional("attention.sliding_window_pattern") {
            Some(Value::Array(_)) | None => 6,
            Some(_) => file.usize(&key("attention.sliding_window_pattern"))?,
        };
        let width = block.width;
        let mut shape = GemmaShape {
            window_half: file.usize(&key("attention.sliding_window"))? / 2,
            window_period,
            rope_base: float("rope.freq_base", 10_000.0)?,
            rope_base_windowed: float("rope.freq_base_swa", 10_000.0)?,
            output_width: width,
            block,
        };
        let weights = Weights::new(file, bytes);
        let kind = BlockKind { qk_norms: true, post_norms: true, activation: Activation::Gelu };
        let layers = (0..shape.block.layers)
            .map(|i| Block::load(&weights, i, &shape.block, kind))
            .collect::<Result<Vec<_>>>()?;
        // sentence-transformers' Dense modules, in order: dense_2 widens
        // the pooled vector, dense_3 brings it back.
        let mut dense = Vec::new();
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

    /// Layer `layer`'s window: the last of each `window_period` is global.
    fn window(&self, layer: usize) -> Window {
        let period = self.shape.window_period.max(1);
        if layer % period == period - 1 { Window::Full } else { Window::Symmetric(self.shape.window_half) }
    }

    /// One pooled, projected row per sequence of token ids (special
    /// tokens included, at most the trained context each), recorded on `b`.
    pub fn pooled<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<B::Tensor> {
        let context = self.shape.block.context;
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        if let Some(len) = lengths.iter().find(|&&l| l == 0 || l > context) {
            return Err(Error::invalid(format!("a sequence of {len} tokens (1 to {context} fit)")));
        }
        let x = self.encode(b, sequences, &lengths)?;
        let mut pooled = b.mean_rows(&x, &lengths, self.shape.block.width);
        drop(x);
        for matrix in &self.dense {
            pooled = b.project(&self.weights, &pooled, matrix, None);
        }
        Ok(pooled)
    }

    /// The normalised last layer's token states, `[Σ lengths × width]`.
    fn encode<B: Backend>(&self, b: &B, sequences: &[Vec<u32>], lengths: &[usize]) -> Result<B::Tensor> {
        let s = &self.shape.block;
        // Token embeddings scaled by √width.
        let mut x = b.lookup(&self.weights, &self.tokens, &sequences.concat())?;
        b.scale(&mut x, (s.width as f32).sqrt());
        for (i, layer) in self.layers.iter().enumerate() {
            let window = self.window(i);
            let run = AttentionRun {
                lengths,
                attention: s.attention(window),
                rope: Rope::Halves,
                rope_base: if window == Window::Full { self.shape.rope_base } else { self.shape.rope_base_windowed },
                f16_keys_values: false,
            };
            let attended = layer.attention(b, &self.weights, &x, s, &run, false);
            b.add(&mut x, &attended);
            drop(attended);
            let fed = layer.feed_forward(b, &self.weights, &x, s);
            b.add(&mut x, &fed);
        }
        b.rms_norm(&mut x, &self.output_norm, s.eps);
        Ok(x)
    }
}
