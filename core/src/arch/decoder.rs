//! Causal language models as llama.cpp runs them: **Llama**
//! (`llama`: SmolLM2) and **Qwen3** (`qwen3`: Qwen3-Reranker, qmd's query
//! expansion model). Pre-norm blocks: RMS norm, grouped-query causal
//! attention with rotary position embeddings (Llama rotates adjacent
//! pairs, Qwen3 halves) and, in Qwen3, RMS norms on each query and key
//! head; RMS norm, SwiGLU feed-forward. Keys and values are rounded to
//! f16 before attention, as llama.cpp's KV cache stores them: the scores
//! then follow qmd's runtime to 1e-5 where f32 keys left 2e-4 between
//! them. A final RMS norm gives the states
//! the LM head (the token embeddings where the file has no `output`) and
//! a ranking head read.

use super::ops::{self, AttentionShape, Rope, Window};
use super::weights::{Matrix, ModelBytes, Weights};
use crate::error::{Error, Result};
use crate::gguf::GgufFile;
use crate::kernels::{matmul, matmul_each};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Llama,
    Qwen3,
}

#[derive(Clone, Debug)]
pub struct DecoderShape {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    /// Positions the model was trained for.
    pub context: usize,
    pub eps: f32,
    pub rope_base: f32,
    pub vocab: usize,
}

struct Layer {
    attention_norm: Vec<f32>,
    q: Matrix,
    k: Matrix,
    v: Matrix,
    /// Qwen3's per-head query and key norms.
    qk_norms: Option<(Vec<f32>, Vec<f32>)>,
    out: Matrix,
    ffn_norm: Vec<f32>,
    gate: Matrix,
    up: Matrix,
    down: Matrix,
}

pub struct Decoder {
    pub family: Family,
    pub shape: DecoderShape,
    weights: Weights,
    tokens: Matrix,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
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
        let key = |name: &str| format!("{arch}.{name}");
        let optional = |name: &str| file.get(&key(name)).is_some();
        let width = file.usize(&key("embedding_length"))?;
        let heads = file.usize(&key("attention.head_count"))?;
        let kv_heads =
            if optional("attention.head_count_kv") { file.usize(&key("attention.head_count_kv"))? } else { heads };
        let head_dim = if optional("attention.key_length") {
            file.usize(&key("attention.key_length"))?
        } else {
            width / heads.max(1)
        };
        let vocab = file.tensor("token_embd.weight").map_or(0, |t| t.rows().1);
        let shape = DecoderShape {
            width,
            layers: file.usize(&key("block_count"))?,
            heads,
            kv_heads,
            head_dim,
            ffn: file.usize(&key("feed_forward_length"))?,
            context: file.usize(&key("context_length"))?,
            eps: file.f64(&key("attention.layer_norm_rms_epsilon"))? as f32,
            rope_base: if optional("rope.freq_base") { file.f64(&key("rope.freq_base"))? as f32 } else { 10_000.0 },
            vocab,
        };
        if let Some(problem) = shape_problem(file, &arch, &shape) {
            return Err(Error::invalid(format!("{}: {problem}", file.name())));
        }
        let weights = Weights::new(file, bytes);
        let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let t = |name: &str| format!("blk.{i}.{name}.weight");
            let qk_norms = match family {
                Family::Qwen3 => {
                    Some((weights.vector(&t("attn_q_norm"), head_dim)?, weights.vector(&t("attn_k_norm"), head_dim)?))
                }
                Family::Llama => None,
            };
            layers.push(Layer {
                attention_norm: weights.vector(&t("attn_norm"), width)?,
                q: weights.matrix(&t("attn_q"), q_width, width)?,
                k: weights.matrix(&t("attn_k"), kv_width, width)?,
                v: weights.matrix(&t("attn_v"), kv_width, width)?,
                qk_norms,
                out: weights.matrix(&t("attn_output"), width, q_width)?,
                ffn_norm: weights.vector(&t("ffn_norm"), width)?,
                gate: weights.matrix(&t("ffn_gate"), shape.ffn, width)?,
                up: weights.matrix(&t("ffn_up"), shape.ffn, width)?,
                down: weights.matrix(&t("ffn_down"), width, shape.ffn)?,
            });
        }
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
            shape,
            weights,
        })
    }

    /// The file's tensors, for heads that read the final states (a
    /// reranker's `cls.output`).
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    fn rope(&self) -> Rope {
        match self.family {
            Family::Llama => Rope::Pairs,
            Family::Qwen3 => Rope::Halves,
        }
    }

    /// The final-normed state of each sequence's last token,
    /// `[sequences × width]`. Each sequence is a whole prompt (at most
    /// [`DecoderShape::context`] tokens), its positions counted from 0.
    pub fn last_states(&self, sequences: &[Vec<u32>]) -> Result<Vec<f32>> {
        let s = &self.shape;
        let lengths: Vec<usize> = sequences.iter().map(Vec::len).collect();
        if let Some(len) = lengths.iter().find(|&&l| l == 0 || l > s.context) {
            return Err(Error::invalid(format!("a sequence of {len} tokens (1 to {} fit)", s.context)));
        }
        let mut x = ops::embed_tokens(&self.weights.view(&self.tokens), sequences)?;
        let attention = AttentionShape {
            heads: s.heads,
            kv_heads: s.kv_heads,
            head_dim: s.head_dim,
            scale: 1.0 / (s.head_dim as f32).sqrt(),
            window: Window::Causal,
        };
        let view = |m: &Matrix| self.weights.view(m);
        let project = |input: &[f32], m: &Matrix| {
            let view = view(m);
            let mut out = vec![0f32; input.len() / view.cols * view.rows];
            matmul(input, &view, None, &mut out);
            out
        };
        for (i, layer) in self.layers.iter().enumerate() {
            let mut h = x.clone();
            ops::rms_norm(&mut h, &layer.attention_norm, s.eps);
            let [mut q, mut k, v] = matmul_each(&h, [&view(&layer.q), &view(&layer.k), &view(&layer.v)]);
            if let Some((q_norm, k_norm)) = &layer.qk_norms {
                ops::rms_norm(&mut q, q_norm, s.eps);
                ops::rms_norm(&mut k, k_norm, s.eps);
            }
            ops::rope(&mut q, &lengths, s.head_dim, s.rope_base, self.rope());
            ops::rope(&mut k, &lengths, s.head_dim, s.rope_base, self.rope());
            // Keys and values as llama.cpp's cache holds them: f16.
            let (k, v) = (ops::round_to_f16(k), ops::round_to_f16(v));
            let mut attended = ops::attention(&q, &k, &v, &lengths, attention);
            if i + 1 == self.layers.len() {
                // Only the last tokens are read from here on: the last
                // layer's projection and feed-forward run on those rows.
                attended = last_rows(&attended, &lengths);
                x = last_rows(&x, &lengths);
            }
            ops::add(&mut x, &project(&attended, &layer.out));
            let mut h = x.clone();
            ops::rms_norm(&mut h, &layer.ffn_norm, s.eps);
            let [mut gate, up] = matmul_each(&h, [&view(&layer.gate), &view(&layer.up)]);
            ops::silu_gate(&mut gate, &up);
            ops::add(&mut x, &project(&gate, &layer.down));
        }
        ops::rms_norm(&mut x, &self.output_norm, s.eps);
        Ok(x)
    }

    /// The LM head's logits over the vocabulary for each state.
    pub fn logits(&self, states: &[f32]) -> Vec<f32> {
        let head = self.weights.view(&self.output);
        let mut out = vec![0f32; states.len() / self.shape.width * head.rows];
        matmul(states, &head, None, &mut out);
        out
    }
}

/// The rows of each sequence's last token, from `[Σ lengths × width]`.
fn last_rows(x: &[f32], lengths: &[usize]) -> Vec<f32> {
    let width = x.len() / lengths.iter().sum::<usize>().max(1);
    let mut out = Vec::with_capacity(lengths.len() * width);
    let mut end = 0;
    for &len in lengths {
        end += len;
        out.extend_from_slice(&x[(end - 1) * width..end * width]);
    }
    out
}

/// What in the file's shape this code cannot run, if anything.
fn shape_problem(file: &GgufFile, arch: &str, s: &DecoderShape) -> Option<String> {
    let (q_width, kv_width) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
    if s.heads == 0 || s.kv_heads == 0 || !s.heads.is_multiple_of(s.kv_heads) {
        Some(format!("{} heads cannot share {} key/value heads", s.heads, s.kv_heads))
    } else if s.head_dim == 0 || !s.head_dim.is_multiple_of(2) {
        Some(format!("head size {} is not even", s.head_dim))
    } else if s.vocab == 0 {
        Some("tensor token_embd.weight is missing".to_string())
    } else if [s.width, q_width, kv_width, s.ffn].iter().any(|w| !w.is_multiple_of(32)) {
        Some(format!("widths {}, {q_width}, {kv_width} and {} are not multiples of 32", s.width, s.ffn))
    } else if let Some(d) = file.get(&format!("{arch}.rope.dimension_count")).and_then(|v| v.as_u64())
        && d as usize != s.head_dim
    {
        Some(format!("rotary embeddings over {d} of {} dimensions are not supported", s.head_dim))
    } else {
        file.get(&format!("{arch}.rope.scaling.type"))
            .and_then(|v| v.as_str())
            .filter(|kind| *kind != "none")
            .map(|kind| format!("rope scaling '{kind}' is not supported"))
    }
}
