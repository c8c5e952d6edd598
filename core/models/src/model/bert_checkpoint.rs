//! A Hugging Face BERT repository on the engine's own kernels: its
//! safetensors checkpoint converted in memory as llama.cpp's converter
//! writes a Q8_0 GGUF file (the same tensor names, types and bytes), then
//! run by [`crate::arch::bert`]. Quantizing costs nothing measurable in
//! retrieval and makes the default model the fastest path (README,
//! "Models").

use safetensors::{Dtype, SafeTensors};

use super::config::{BertConfig, Pooling};
use crate::arch::bert::{Bert, BertShape};
use crate::arch::{Weights, WeightsBuilder};
use crate::error::{Error, Result};
use crate::gguf::{GgmlType, dequantize};

/// What the fingerprint records for vectors from a quantized repository
/// ([`qmd_base::embedding::EmbedderInfo::weights`]).
pub const QUANTIZED_AT_LOAD: &str = "q8_0";

/// Whether the kernels run this configuration: their BERT needs rows of
/// whole Q8_0 blocks (burn runs the rest in f32).
pub fn runs_on_kernels(config: &BertConfig) -> bool {
    config.hidden_size.is_multiple_of(32) && config.intermediate_size.is_multiple_of(32)
}

/// The checkpoint `weights` (`model.safetensors`) of a model configured
/// by `config`, quantized to Q8_0 as llama.cpp's converter would.
pub fn quantized_bert(config: &BertConfig, pooling: Pooling, weights: &[u8]) -> Result<Bert> {
    let shape = BertShape {
        width: config.hidden_size,
        layers: config.num_hidden_layers,
        heads: config.num_attention_heads,
        ffn: config.intermediate_size,
        context: config.max_position_embeddings,
        eps: config.layer_norm_eps as f32,
        pooling,
    };
    Bert::from_weights(shape, quantized_weights(config.num_hidden_layers, weights)?)
}

/// The tensors a `layers`-layer BERT checkpoint converts to, named and
/// typed as in a Q8_0 GGUF file of it.
pub fn quantized_weights(layers: usize, weights: &[u8]) -> Result<Weights> {
    let checkpoint = SafeTensors::deserialize(weights).map_err(|e| damaged(format!("{e}")))?;
    let prefix = match checkpoint.tensor("embeddings.word_embeddings.weight") {
        Ok(_) => "",
        Err(_) => "bert.", // BertForMaskedLM-style checkpoints
    };
    // config.json's count sizes the name list: checked against the
    // tensors present first (16 per layer), never trusted.
    if layers > checkpoint.len() / 16 {
        return Err(damaged(format!(
            "config.json says {layers} layers; the checkpoint's {} tensors hold at most {}",
            checkpoint.len(),
            checkpoint.len() / 16
        )));
    }
    let mut builder = WeightsBuilder::default();
    for (gguf, hf) in tensor_names(layers) {
        let name = format!("{prefix}{hf}");
        let tensor = checkpoint.tensor(&name).map_err(|_| damaged(format!("tensor {name} is missing")))?;
        let values = floats(&name, tensor.dtype(), tensor.data())?;
        // GGUF lists dimensions innermost first.
        let dims: Vec<usize> = tensor.shape().iter().rev().copied().collect();
        let kind = converter_type(&gguf, dims.len());
        if builder.push(&gguf, kind, dims.clone(), &values).is_none() {
            // Rows that are not whole blocks stay f32, as the converter
            // falls back to a float type.
            builder.push(&gguf, GgmlType::F32, dims, &values).expect("f32 holds any tensor");
        }
    }
    Ok(builder.finish("model.safetensors"))
}

/// Each tensor the kernels' BERT reads, by its GGUF name, with its name
/// in a `BertModel` checkpoint (llama.cpp's tensor map for BERT).
fn tensor_names(layers: usize) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let mut both = |gguf: &str, hf: &str| {
        for part in ["weight", "bias"] {
            names.push((format!("{gguf}.{part}"), format!("{hf}.{part}")));
        }
    };
    both("token_embd_norm", "embeddings.LayerNorm");
    for i in 0..layers {
        let (blk, layer) = (format!("blk.{i}"), format!("encoder.layer.{i}"));
        both(&format!("{blk}.attn_q"), &format!("{layer}.attention.self.query"));
        both(&format!("{blk}.attn_k"), &format!("{layer}.attention.self.key"));
        both(&format!("{blk}.attn_v"), &format!("{layer}.attention.self.value"));
        both(&format!("{blk}.attn_output"), &format!("{layer}.attention.output.dense"));
        both(&format!("{blk}.attn_output_norm"), &format!("{layer}.attention.output.LayerNorm"));
        both(&format!("{blk}.ffn_up"), &format!("{layer}.intermediate.dense"));
        both(&format!("{blk}.ffn_down"), &format!("{layer}.output.dense"));
        both(&format!("{blk}.layer_output_norm"), &format!("{layer}.output.LayerNorm"));
    }
    for (gguf, hf) in [
        ("token_embd", "word_embeddings"),
        ("position_embd", "position_embeddings"),
        ("token_types", "token_type_embeddings"),
    ] {
        names.push((format!("{gguf}.weight"), format!("embeddings.{hf}.weight")));
    }
    names
}

/// The type llama.cpp's converter gives a tensor in a Q8_0 file: vectors,
/// norms and the position and token-type tables f32, other matrices Q8_0.
fn converter_type(gguf: &str, dims: usize) -> GgmlType {
    let float = dims <= 1
        || gguf.ends_with("_norm.weight")
        || !gguf.ends_with(".weight")
        || gguf == "position_embd.weight"
        || gguf == "token_types.weight";
    if float { GgmlType::F32 } else { GgmlType::Q8_0 }
}

/// A tensor's values as f32, refused when one is NaN or infinite (a
/// damaged checkpoint must not become an index of NaN vectors).
fn floats(name: &str, dtype: Dtype, data: &[u8]) -> Result<Vec<f32>> {
    // The same float types as GGUF's, read by its dequantization (the
    // crate checked that the data is the shape's size).
    let kind = match dtype {
        Dtype::F32 => GgmlType::F32,
        Dtype::F16 => GgmlType::F16,
        Dtype::BF16 => GgmlType::BF16,
        other => return Err(damaged(format!("tensor {name} is {other:?}; F32, F16 or BF16 load"))),
    };
    let mut values = vec![0f32; data.len() / kind.block_bytes()];
    dequantize(kind, data, &mut values);
    match values.iter().position(|v| !v.is_finite()) {
        Some(at) => Err(damaged(format!("tensor {name} holds {} at value {at}: the file is damaged", values[at]))),
        None => Ok(values),
    }
}

fn damaged(problem: String) -> Error {
    Error::invalid(format!("model.safetensors: {problem}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{Cpu, EmbeddingModel};

    const CONFIG: &str = r#"{"vocab_size": 12, "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 16}"#;

    /// A checkpoint of `tensors` (name, dtype, shape, raw bytes), as
    /// safetensors lays it out.
    fn checkpoint(tensors: &[(String, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            let offsets = [data.len(), data.len() + bytes.len()];
            header.insert(name.clone(), serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": offsets}));
            data.extend_from_slice(bytes);
        }
        let header = serde_json::to_vec(&header).unwrap();
        [&(header.len() as u64).to_le_bytes()[..], &header, &data].concat()
    }

    /// Every tensor of a [`CONFIG`] model with deterministic values, as
    /// `dtype` (F32 or F16), with `edit` applied to each tensor's values.
    fn tensors(dtype: &str, edit: impl Fn(&str, &mut Vec<f32>)) -> Vec<(String, &str, Vec<usize>, Vec<u8>)> {
        let config = BertConfig::parse(CONFIG.as_bytes()).unwrap();
        let (w, ffn) = (config.hidden_size, config.intermediate_size);
        tensor_names(config.num_hidden_layers)
            .into_iter()
            .enumerate()
            .map(|(n, (gguf, hf))| {
                let shape = match gguf.as_str() {
                    "token_embd.weight" => vec![12, w],
                    "position_embd.weight" => vec![16, w],
                    "token_types.weight" => vec![2, w],
                    g if g.ends_with("ffn_up.weight") => vec![ffn, w],
                    g if g.ends_with("ffn_up.bias") => vec![ffn],
                    g if g.ends_with("ffn_down.weight") => vec![w, ffn],
                    g if g.ends_with("norm.weight") => return (hf, dtype, vec![w], floats_as(dtype, &[1.0; 32])),
                    g if g.ends_with(".weight") => vec![w, w],
                    _ => vec![w],
                };
                let count = shape.iter().product();
                let mut values: Vec<f32> = (0..count).map(|i| (((i * 31 + n * 7) % 17) as f32 - 8.0) / 40.0).collect();
                edit(&hf, &mut values);
                (hf, dtype, shape, floats_as(dtype, &values))
            })
            .collect()
    }

    fn floats_as(dtype: &str, values: &[f32]) -> Vec<u8> {
        match dtype {
            "F16" => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
            _ => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn load(bytes: &[u8]) -> Result<Bert> {
        quantized_bert(&BertConfig::parse(CONFIG.as_bytes()).unwrap(), Pooling::Mean, bytes)
    }

    fn embed(bert: Bert) -> Vec<Vec<f32>> {
        EmbeddingModel::Bert(bert).embed(&Cpu, &[vec![1, 5, 3, 2], vec![4, 11]]).unwrap()
    }

    #[test]
    fn a_small_checkpoint_runs_in_f32_f16_and_with_a_prefix() {
        let plain = embed(load(&checkpoint(&tensors("F32", |_, _| {}))).unwrap());
        assert!(plain.iter().flatten().all(|v| v.is_finite()));
        // F16 values are the same numbers here (multiples of 1/40 in f16
        // round-trip closely), so the vectors nearly agree.
        let f16 = embed(load(&checkpoint(&tensors("F16", |_, _| {}))).unwrap());
        let cos: f32 = plain[0].iter().zip(&f16[0]).map(|(a, b)| a * b).sum();
        assert!(cos > 0.999, "F16 checkpoint: cosine {cos}");
        let prefixed: Vec<_> =
            tensors("F32", |_, _| {}).into_iter().map(|(n, d, s, b)| (format!("bert.{n}"), d, s, b)).collect();
        assert_eq!(embed(load(&checkpoint(&prefixed)).unwrap()), plain);
    }

    #[test]
    fn damaged_checkpoints_are_errors_naming_the_problem() {
        let nan = checkpoint(&tensors("F32", |name, v| {
            if name == "encoder.layer.1.output.dense.weight" {
                v[100] = f32::NAN;
            }
        }));
        let message = load(&nan).err().unwrap().message;
        assert!(message.contains("encoder.layer.1.output.dense.weight") && message.contains("NaN"), "{message}");

        let mut missing = tensors("F32", |_, _| {});
        missing.retain(|(name, ..)| name != "encoder.layer.0.attention.self.key.bias");
        let message = load(&checkpoint(&missing)).err().unwrap().message;
        assert!(message.contains("encoder.layer.0.attention.self.key.bias is missing"), "{message}");

        let full = checkpoint(&tensors("F32", |_, _| {}));
        let message = load(&full[..full.len() - 3]).err().unwrap().message;
        assert!(message.starts_with("model.safetensors: "), "{message}");
        assert!(load(&full[..5]).is_err() && load(b"").is_err());

        let mut integers = tensors("F32", |_, _| {});
        integers[0].1 = "I32";
        let message = load(&checkpoint(&integers)).err().unwrap().message;
        assert!(message.contains("I32"), "{message}");

        // A layer count from config.json that the checkpoint cannot hold
        // is refused before it sizes anything.
        let message = quantized_weights(u32::MAX as usize, &full).err().unwrap().message;
        assert!(message.contains("says 4294967295 layers"), "{message}");

        let mut reshaped = tensors("F32", |_, _| {});
        let at = reshaped.iter().position(|(name, ..)| name == "encoder.layer.0.intermediate.dense.weight").unwrap();
        reshaped[at].2 = vec![32, 64];
        let message = load(&checkpoint(&reshaped)).err().unwrap().message;
        assert!(message.contains("blk.0.ffn_up.weight") && message.contains("shape"), "{message}");
    }

    #[test]
    fn widths_the_kernels_cannot_block_are_left_to_burn() {
        let config = |hidden: usize, ffn: usize| {
            let json = CONFIG.replace("\"hidden_size\": 32", &format!("\"hidden_size\": {hidden}"));
            BertConfig::parse(json.replace("64", &ffn.to_string()).as_bytes()).unwrap()
        };
        assert!(runs_on_kernels(&config(32, 64)));
        assert!(!runs_on_kernels(&config(48, 64)) && !runs_on_kernels(&config(32, 80)));
    }
}
