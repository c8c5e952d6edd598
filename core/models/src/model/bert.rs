//! BERT (Devlin et al.) as Hugging Face's `BertModel` computes it: token,
//! position and segment embeddings, post-norm transformer layers with exact
//! (erf) GELU, and the `tanh` pooler that classification heads read.
//!
//! Field names follow the checkpoint's keys, so loading needs only two
//! renames (`LayerNorm` → `layer_norm`, `attention.self` →
//! `attention.self_attention`; see `load.rs`).

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::gelu;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::attention;
use super::config::BertConfig;
use super::dense;

/// A batch of token sequences, padded to one length.
pub struct TokenBatch {
    /// `[batch, tokens]`
    pub ids: Tensor<2, Int>,
    /// `[batch, tokens]`, segment A = 0, B = 1.
    pub type_ids: Tensor<2, Int>,
    /// `[batch, tokens]`, 1.0 for real tokens, 0.0 for padding.
    pub mask: Tensor<2>,
    /// Real tokens of each sequence, at the start of its row; the rest is
    /// padding.
    pub lengths: Vec<usize>,
}

#[derive(Module, Debug)]
pub struct Embeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
}

#[derive(Module, Debug)]
pub struct SelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
}

#[derive(Module, Debug)]
pub struct DenseNorm {
    dense: Linear,
    layer_norm: LayerNorm,
}

#[derive(Module, Debug)]
pub struct Attention {
    self_attention: SelfAttention,
    output: DenseNorm,
}

#[derive(Module, Debug)]
pub struct Intermediate {
    dense: Linear,
}

#[derive(Module, Debug)]
pub struct BurnLayer {
    attention: Attention,
    intermediate: Intermediate,
    output: DenseNorm,
}

#[derive(Module, Debug)]
pub struct BurnLayers {
    layer: Vec<BurnLayer>,
}

#[derive(Module, Debug)]
pub struct BurnBert {
    embeddings: Embeddings,
    encoder: BurnLayers,
    heads: usize,
}

#[derive(Module, Debug)]
pub struct Pooler {
    dense: Linear,
}

fn linear(d_input: usize, d_output: usize, device: &Device) -> Linear {
    LinearConfig::new(d_input, d_output).init(device)
}

fn layer_norm(config: &BertConfig, device: &Device) -> LayerNorm {
    LayerNormConfig::new(config.hidden_size).with_epsilon(config.layer_norm_eps).init(device)
}

fn dense_norm(d_input: usize, config: &BertConfig, device: &Device) -> DenseNorm {
    DenseNorm { dense: linear(d_input, config.hidden_size, device), layer_norm: layer_norm(config, device) }
}

impl BurnBert {
    /// An uninitialised model of the configured shape, ready to load into.
    pub fn new(config: &BertConfig, device: &Device) -> BurnBert {
        let h = config.hidden_size;
        let embeddings = Embeddings {
            word_embeddings: EmbeddingConfig::new(config.vocab_size, h).init(device),
            position_embeddings: EmbeddingConfig::new(config.max_position_embeddings, h).init(device),
            token_type_embeddings: EmbeddingConfig::new(config.type_vocab_size, h).init(device),
            layer_norm: layer_norm(config, device),
        };
        let layer = (0..config.num_hidden_layers)
            .map(|_| BurnLayer {
                attention: Attention {
                    self_attention: SelfAttention {
                        query: linear(h, h, device),
                        key: linear(h, h, device),
                        value: linear(h, h, device),
                    },
                    output: dense_norm(h, config, device),
                },
                intermediate: Intermediate { dense: linear(h, config.intermediate_size, device) },
                output: dense_norm(config.intermediate_size, config, device),
            })
            .collect();
        BurnBert { embeddings, encoder: BurnLayers { layer }, heads: config.num_attention_heads }
    }

    /// Hidden states of the last layer, `[batch, tokens, hidden]`.
    pub fn forward(&self, batch: &TokenBatch) -> Tensor<3> {
        let [n, t] = batch.ids.dims();
        let device = batch.ids.device();
        let positions = Tensor::<1, Int>::arange(0..t as i64, &device).reshape([1, t]).repeat_dim(0, n);
        let e = &self.embeddings;
        let x = e.word_embeddings.forward(batch.ids.clone())
            + e.position_embeddings.forward(positions)
            + e.token_type_embeddings.forward(batch.type_ids.clone());
        let mut x = e.layer_norm.forward(x);
        // Padding gets a large negative score before the softmax.
        let bias = (batch.mask.clone() - 1.0).mul_scalar(1e9).reshape([n, 1, 1, t]);
        for layer in &self.encoder.layer {
            x = layer.forward(x, bias.clone(), self.heads, &batch.lengths);
        }
        x
    }
}

impl BurnLayer {
    /// `lengths`: real tokens per sequence (see [`TokenBatch::lengths`]).
    fn forward(&self, x: Tensor<3>, bias: Tensor<4>, heads: usize, lengths: &[usize]) -> Tensor<3> {
        let [n, t, h] = x.dims();
        let d = h / heads;
        let split = |y: Tensor<3>| y.reshape([n, t, heads, d]).swap_dims(1, 2);
        let a = &self.attention.self_attention;
        let q = split(dense::linear(&a.query, x.clone(), lengths));
        let k = split(dense::linear(&a.key, x.clone(), lengths));
        let v = split(dense::linear(&a.value, x.clone(), lengths));
        let context = attention::attention(q, k, v, bias, lengths);
        let context = context.swap_dims(1, 2).reshape([n, t, h]);
        let out = &self.attention.output;
        let x = out.layer_norm.forward(dense::linear(&out.dense, context, lengths) + x);
        let inner = gelu_exact(dense::linear(&self.intermediate.dense, x.clone(), lengths));
        self.output.layer_norm.forward(dense::linear(&self.output.dense, inner, lengths) + x)
    }
}

impl Pooler {
    pub fn new(config: &BertConfig, device: &Device) -> Pooler {
        Pooler { dense: linear(config.hidden_size, config.hidden_size, device) }
    }

    /// `tanh(W · h[CLS] + b)`, `[batch, hidden]`.
    pub fn forward(&self, hidden: Tensor<3>) -> Tensor<2> {
        let [n, _, h] = hidden.dims();
        let cls = hidden.slice([0..n, 0..1]).reshape([n, h]);
        self.dense.forward(cls).tanh()
    }
}

/// Exact (erf) GELU, `x/2 · (1 + erf(x/√2))`. burn's CPU backend calls
/// libm's scalar `erff` for every element (a tenth of CPU embedding time
/// in `perf`); on the CPU the values are mapped here in one loop the
/// compiler vectorises. Other backends keep their own kernel.
fn gelu_exact(x: Tensor<3>) -> Tensor<3> {
    let device = x.device();
    if device != Device::flex() {
        return gelu(x);
    }
    let mut data: TensorData = x.into_data();
    match data.as_mut_slice::<f32>() {
        Ok(values) => values.iter_mut().for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2))),
        // Another float type (f16 weights): the backend's kernel.
        Err(_) => return gelu(Tensor::from_data(data, &device)),
    }
    Tensor::from_data(data, &device)
}

/// erf as a rational function of x² on [-4, 4] (Eigen's and XLA's f32
/// approximation: within a few ulp of the true value; beyond ±4 erf is
/// ±1 in f32). Branch-free, so a loop over it vectorises.
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_6e-3;
    p = p * x2 + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329e-3;
    q = q * x2 + -1.426_474e-2;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against tabulated values of erf (Abramowitz and Stegun, table 7.1,
    /// and its limits).
    #[test]
    fn erf_matches_its_table() {
        let table: [(f32, f64); 8] = [
            (0.0, 0.0),
            (0.1, 0.112_462_916),
            (0.5, 0.520_499_878),
            (1.0, 0.842_700_793),
            (1.5, 0.966_105_146),
            (2.0, 0.995_322_265),
            (3.0, 0.999_977_910),
            (6.0, 1.0),
        ];
        for (x, expected) in table {
            assert!((f64::from(erf(x)) - expected).abs() < 2e-7, "erf({x}) = {} not {expected}", erf(x));
            assert!((f64::from(erf(-x)) + expected).abs() < 2e-7, "erf is odd at {x}");
        }
    }

    #[test]
    fn gelu_on_the_cpu_is_burns_exact_gelu() {
        let device = Device::flex();
        let values: Vec<f32> = (-80..=80).map(|i| i as f32 / 10.0).collect();
        let x = Tensor::<3>::from_data(TensorData::new(values.clone(), [1, values.len(), 1]), &device);
        let ours: Vec<f32> = gelu_exact(x.clone()).into_data().try_to_vec::<f32>().unwrap();
        let burns: Vec<f32> = gelu(x).into_data().try_to_vec::<f32>().unwrap();
        for ((v, a), b) in values.iter().zip(ours).zip(burns) {
            assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "gelu({v}): {a} vs burn's {b}");
        }
    }
}
