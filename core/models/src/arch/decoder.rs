//! Causal language models as llama.cpp runs them: **Llama**
//! (`llama`: SmolLM2) and **Qwen3** (`qwen3`: Qwen3-Reranker, qmd's query
//! expansion model). Pre-norm blocks: RMS norm, grouped-query causal
//! attention with rotary position embeddings (Llama rotates adjacent
//! pairs, Qwen3 halves) and, in Qwen3, RMS norms on each query and key
//! head; RMS norm, SwiGLU feed-forward. Keys and values are rounded to
//! f16 before attention, as llama.cpp's KV cache stores them (and, in
//! generation's short passes, queries, as its f16 attention reads them):
//! the scores
//! then follow qmd's runtime to 1e-5 where f32 keys left 2e-4 between
//! them. A final RMS norm gives the states
//! the LM head (the token embeddings where the file has no `output`) and
//! a ranking head read.

use super::backend::{Backend, Cpu};
use super::block::{Activation, AttentionRun, Block, BlockKind, BlockShape};
use super::kv_cache::KvCache;
use super::ops::{Rope, Window};
use super::weights::{Matrix, ModelBytes, Vector, Weights};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::kernels::matmul;
use crate::kernels::parallel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Llama,
    Qwen3,
}

#[derive(Clone, Debug)]
pub struct DecoderShape {
    pub block: BlockShape,
    pub rope_base: f32,
    pub vocab: usize,
}

pub struct Decoder {
    pub family: Family,
    pub shape: DecoderShape,
    weights: Weights,
    tokens: Matrix,
    layers: Vec<Block>,
    output_norm: Vector,
    /// The LM head: `output.weight`, or the token embeddings when tied.
    output: Matrix,
}

impl Decoder {
    pub fn load(file: &GgufFile, bytes: ModelBytes) -> Result<Decoder> {
        let arch = file.architecture()?.to_string();
        let family = match arch.as_str() {
            "llama" => Family::Llama,
            "qwen3" => Family::Qwen3,
            other => {
                return Err(Error::invalid(format!(
                    "{}: architecture '{other}' is not a language model qmd-wasm runs (llama, qwen3)",
                    file.name()
                )));
            }
        };
        let block = BlockShape::read(file, &arch)?;
        let key = |name: &str| format!("{arch}.{name}");
        let vocab = file.tensor("token_embd.weight").map_or(0, |t| t.rows().1);
        let scaling = file.get(&key("rope.scaling.type")).and_then(|v| v.as_str()).filter(|kind| *kind != "none");
        if let Some(kind) = scaling {
            return Err(Error::invalid(format!("{}: rope scaling '{kind}' is not supported", file.name())));
        }
        let rope_base = match file.get(&key("rope.freq_base")) {
            Some(_) => file.f64(&key("rope.freq_base"))? as f32,
            None => 10_000.0,
        };
        let weights = Weights::new(file, bytes);
        let kind = BlockKind { qk_norms: family == Family::Qwen3, post_norms: false, activation: Activation::Silu };
        let layers = (0..block.layers).map(|i| Block::load(&weights, i, &block, kind)).collect::<Result<Vec<_>>>()?;
        let width = block.width;
        let tokens = weights.matrix("token_embd.weight", vocab.max(1), width)?;
        let output = match file.tensor("output.weight") {
            Some(_) => weights.matrix("output.weight", vocab.max(1), width)?,
            None => tokens.clone(),
        };
        Ok(Decoder {
            family,
            output_norm: weights.vector("output_norm.weight", width)?,
            tokens,
            output,
            layers,
            shape: DecoderShape { block, rope_base, vocab },
            weights,
        })
    }

    /// The file's tensors, for heads that read the final states (a
    /// reranker's `cls.output`).
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The final-normed state of each sequence's last token,
    /// `[sequences × width]`, computed on `b`. Each sequence is a whole
    /// prompt (at most the trained context), its positions counted from 0.
    pub fn last_states<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<Vec<f32>> {
        b.read(self.last_states_on(b, sequences)?)
    }

    /// [`last_states`](Self::last_states), recorded on `b` and not read.
    pub fn last_states_on<B: Backend>(&self, b: &B, sequences: &[Vec<u32>]) -> Result<B::Tensor> {
        let s = &self.shape.block;
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        if let Some(len) = lengths.iter().find(|&&l| l == 0 || l > s.context) {
            return Err(Error::invalid(format!("a sequence of {len} tokens (1 to {} fit)", s.context)));
        }
        let run = AttentionRun {
            lengths: &lengths,
            attention: s.attention(Window::Causal),
            rope: self.rope(),
            rope_base: self.shape.rope_base,
            // Keys and values as llama.cpp's cache holds them: f16.
            f16_keys_values: true,
        };
        let mut x = b.lookup(&self.weights, &self.tokens, &sequences.concat())?;
        for (i, layer) in self.layers.iter().enumerate() {
            // Only the last tokens are read after the last layer's
            // attention: its projection and feed-forward run on those rows.
            let last = i + 1 == self.layers.len();
            let attended = layer.attention(b, &self.weights, &x, s, &run, last);
            if last {
                x = b.last_rows(&x, &lengths, s.width);
            }
            b.add(&mut x, &attended);
            drop(attended);
            let fed = layer.feed_forward(b, &self.weights, &x, s);
            b.add(&mut x, &fed);
        }
        b.rms_norm(&mut x, &self.output_norm, s.eps);
        Ok(x)
    }

    /// One cache per block, empty: a new sequence for [`Self::extend`].
    pub fn new_cache<C: Default>(&self) -> Vec<C> {
        self.layers.iter().map(|_| C::default()).collect()
    }

    /// Runs the next `tokens` of the sequence whose earlier tokens are in
    /// `cache` (`cached` of them, all from [`Self::new_cache`]), on the CPU
    /// kernels; their keys and values join the cache. Returns the
    /// final-normed state of the last token.
    pub fn extend(&self, cache: &mut [KvCache], cached: usize, tokens: &[u32]) -> Result<Vec<f32>> {
        parallel::on_workers(|| self.extend_on(&Cpu, cache, cached, tokens))
    }

    /// [`extend`](Self::extend) on `b`, the state recorded and not read.
    pub fn extend_on<B: Backend>(
        &self,
        b: &B,
        cache: &mut [B::Cache],
        cached: usize,
        tokens: &[u32],
    ) -> Result<B::Tensor> {
        let s = &self.shape.block;
        if tokens.is_empty() || cached + tokens.len() > s.context {
            return Err(Error::invalid(format!(
                "{} tokens after {cached} (1 to {} in all fit the model's context)",
                tokens.len(),
                s.context
            )));
        }
        let (rope, base) = (self.rope(), self.shape.rope_base);
        let mut x = b.lookup(&self.weights, &self.tokens, tokens)?;
        for (layer, cache) in self.layers.iter().zip(cache) {
            let attended = layer.attention_cached(b, &self.weights, &x, s, cache, (cached, tokens.len()), rope, base);
            b.add(&mut x, &attended);
            drop(attended);
            let fed = layer.feed_forward(b, &self.weights, &x, s);
            b.add(&mut x, &fed);
        }
        let mut last = b.last_rows(&x, &[tokens.len()], s.width);
        b.rms_norm(&mut last, &self.output_norm, s.eps);
        Ok(last)
    }

    fn rope(&self) -> Rope {
        match self.family {
            Family::Llama => Rope::Pairs,
            Family::Qwen3 => Rope::Halves,
        }
    }

    /// The LM head's logits for each state, recorded on `b`.
    pub fn logits_on<B: Backend>(&self, b: &B, states: &B::Tensor) -> B::Tensor {
        b.project(&self.weights, states, &self.output, None)
    }

    /// The LM head's logits over the vocabulary for each state.
    pub fn logits(&self, states: &[f32]) -> Vec<f32> {
        let head = self.weights.view(&self.output);
        let mut out = vec![0f32; states.len() / self.shape.block.width * head.rows];
        parallel::on_workers(|| matmul(states, &head, None, &mut out));
        out
    }
}
