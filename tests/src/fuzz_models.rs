//! Fuzz targets for model files: a fuzzed input is a recipe that
//! [`model_file`] turns into a small GGUF model of every architecture the
//! engine runs (BERT, EmbeddingGemma, Llama, Qwen3, with their tokenizers
//! and a ranking head), with metadata counts past the tensors, shapes that
//! disagree with the metadata, missing tensors and NaN or infinite values
//! drawn from the recipe's bytes. Each is loaded and, when it loads, run:
//! an error is fine, a panic or an abort on a huge allocation is a crash,
//! and an output that is not finite is a failure (models refuse them).

use std::sync::Arc;

use qmd_core::generate::QueryExpander;
use qmd_core::gguf::{GgmlType, GgufFile, Value};
use qmd_core::model::{KernelEmbedder, KernelRanker, ModelDevice};

use crate::gguf_file::{GgufParts, Tensor, f32_bytes};

/// Bytes of the recipe, read in turn; zeros once they run out.
struct Draw<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Draw<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.byte() as usize % items.len()]
    }
}

const ARCHES: [&str; 4] = ["bert", "gemma-embedding", "llama", "qwen3"];
/// Counts a file may claim: the real one, and ones no file holds.
const COUNTS: [u64; 6] = [0, 1, 2, 1_000_000_000, u32::MAX as u64, u64::MAX];
const FLOATS: [f32; 6] = [1e-5, 1e-6, 0.0, -1.0, f32::NAN, f32::INFINITY];

/// The model file a recipe describes.
pub fn model_file(recipe: &[u8]) -> Vec<u8> {
    let mut d = Draw { bytes: recipe, at: 0 };
    let arch = d.pick(&ARCHES);
    let width = 32 * (1 + d.byte() as usize % 2);
    let heads = d.pick(&[1usize, 2, 4]);
    let kv_heads = if arch == "bert" { heads } else { d.pick(&[1usize, heads]) };
    let head_dim = width / heads;
    let ffn = 32 * (1 + d.byte() as usize % 2);
    let layers = 1 + d.byte() as usize % 2;
    let context = 16;
    let mut parts = GgufParts::default();
    let meta = |parts: &mut GgufParts, key: &str, value: Value| parts.set(&format!("{arch}.{key}"), value);
    parts.set("general.architecture", Value::String(arch.into()));
    meta(&mut parts, "embedding_length", Value::U32(width as u32));
    meta(&mut parts, "attention.head_count", Value::U32(heads as u32));
    meta(&mut parts, "attention.head_count_kv", Value::U32(kv_heads as u32));
    meta(&mut parts, "feed_forward_length", Value::U32(ffn as u32));
    meta(&mut parts, "context_length", Value::U32(context as u32));
    meta(&mut parts, "block_count", Value::U64(layers as u64));
    meta(&mut parts, "attention.layer_norm_epsilon", Value::F32(1e-12));
    meta(&mut parts, "attention.layer_norm_rms_epsilon", Value::F32(1e-6));
    meta(&mut parts, "attention.sliding_window", Value::U32(8));
    meta(&mut parts, "rope.freq_base", Value::F32(10_000.0));
    meta(&mut parts, "pooling_type", Value::U32(1));
    vocabulary(&mut parts, arch);
    let vocab = parts
        .metadata
        .iter()
        .find(|(k, _)| k == "tokenizer.ggml.tokens")
        .map_or(0, |(_, v)| v.as_array().map_or(0, <[Value]>::len));

    let tensor = |name: String, dims: Vec<usize>| Tensor {
        name,
        kind: GgmlType::F32,
        dims: dims.iter().map(|&d| d as u64).collect(),
        data: f32_bytes(
            &(0..dims.iter().product::<usize>()).map(|i| ((i * 7919) % 97) as f32 / 97.0 - 0.5).collect::<Vec<_>>(),
        ),
    };
    let (q_width, kv_width) = (heads * head_dim, kv_heads * head_dim);
    parts.tensors.push(tensor("token_embd.weight".into(), vec![width, vocab.max(1)]));
    if arch == "bert" {
        parts.tensors.push(tensor("token_types.weight".into(), vec![width, 2]));
        parts.tensors.push(tensor("position_embd.weight".into(), vec![width, context]));
        parts.tensors.push(tensor("token_embd_norm.weight".into(), vec![width]));
        parts.tensors.push(tensor("token_embd_norm.bias".into(), vec![width]));
    } else {
        parts.tensors.push(tensor("output_norm.weight".into(), vec![width]));
        parts.tensors.push(tensor("cls.output.weight".into(), vec![width, 2]));
    }
    for i in 0..layers {
        let t = |name: &str| format!("blk.{i}.{name}");
        let block: Vec<(String, Vec<usize>)> = if arch == "bert" {
            vec![
                (t("attn_q.weight"), vec![width, width]),
                (t("attn_q.bias"), vec![width]),
                (t("attn_k.weight"), vec![width, width]),
                (t("attn_k.bias"), vec![width]),
                (t("attn_v.weight"), vec![width, width]),
                (t("attn_v.bias"), vec![width]),
                (t("attn_output.weight"), vec![width, width]),
                (t("attn_output.bias"), vec![width]),
                (t("attn_output_norm.weight"), vec![width]),
                (t("attn_output_norm.bias"), vec![width]),
                (t("ffn_up.weight"), vec![width, ffn]),
                (t("ffn_up.bias"), vec![ffn]),
                (t("ffn_down.weight"), vec![ffn, width]),
                (t("ffn_down.bias"), vec![width]),
                (t("layer_output_norm.weight"), vec![width]),
                (t("layer_output_norm.bias"), vec![width]),
            ]
        } else {
            vec![
                (t("attn_norm.weight"), vec![width]),
                (t("attn_q.weight"), vec![width, q_width]),
                (t("attn_k.weight"), vec![width, kv_width]),
                (t("attn_v.weight"), vec![width, kv_width]),
                (t("attn_q_norm.weight"), vec![head_dim]),
                (t("attn_k_norm.weight"), vec![head_dim]),
                (t("attn_output.weight"), vec![q_width, width]),
                (t("post_attention_norm.weight"), vec![width]),
                (t("ffn_norm.weight"), vec![width]),
                (t("ffn_gate.weight"), vec![width, ffn]),
                (t("ffn_up.weight"), vec![width, ffn]),
                (t("ffn_down.weight"), vec![ffn, width]),
                (t("post_ffw_norm.weight"), vec![width]),
            ]
        };
        parts.tensors.extend(block.into_iter().map(|(name, dims)| tensor(name, dims)));
    }

    // The damage, drawn from the rest of the recipe.
    for _ in 0..d.byte() % 6 {
        match d.byte() % 8 {
            0 => meta(&mut parts, "block_count", Value::U64(d.pick(&COUNTS))),
            1 => {
                let key = d.pick(&[
                    "embedding_length",
                    "attention.head_count",
                    "attention.head_count_kv",
                    "feed_forward_length",
                    "context_length",
                    "attention.key_length",
                    "attention.sliding_window",
                ]);
                meta(&mut parts, key, Value::U64(d.pick(&COUNTS)));
            }
            2 => {
                let key =
                    d.pick(&["attention.layer_norm_epsilon", "attention.layer_norm_rms_epsilon", "rope.freq_base"]);
                meta(&mut parts, key, Value::F32(d.pick(&FLOATS)));
            }
            3 | 4 if !parts.tensors.is_empty() => {
                // A NaN or infinity in a tensor's values.
                let at = d.byte() as usize % parts.tensors.len();
                let t = &mut parts.tensors[at];
                let value = d.pick(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
                let slot = (d.byte() as usize % (t.data.len() / 4).max(1)) * 4;
                if t.data.len() >= slot + 4 {
                    t.data[slot..slot + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
            5 if !parts.tensors.is_empty() => {
                let at = d.byte() as usize % parts.tensors.len();
                parts.tensors.remove(at);
            }
            6 if !parts.tensors.is_empty() => {
                // A shape that disagrees with the metadata (its bytes follow the shape).
                let at = d.byte() as usize % parts.tensors.len();
                let t = &mut parts.tensors[at];
                t.dims[0] = 32 * (1 + d.byte() as u64 % 3);
                t.data = f32_bytes(&vec![0.25; t.dims.iter().product::<u64>() as usize]);
            }
            _ => {
                let key = d.pick(&[
                    "tokenizer.ggml.bos_token_id",
                    "tokenizer.ggml.unknown_token_id",
                    "tokenizer.ggml.eos_token_id",
                ]);
                parts.set(key, Value::U64(d.pick(&COUNTS)));
            }
        }
    }
    parts.write()
}

/// A small vocabulary of the architecture's tokenizer kind.
fn vocabulary(parts: &mut GgufParts, arch: &str) {
    let strings = |items: Vec<String>| Value::Array(items.into_iter().map(Value::String).collect());
    match arch {
        "bert" => {
            let mut tokens: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"].map(String::from).to_vec();
            tokens.extend(["hello", "world", "qmd", "probe", "search"].iter().map(|w| format!("\u{2581}{w}")));
            tokens.extend(('a'..='z').map(|c| format!("\u{2581}{c}")));
            tokens.extend(('a'..='z').map(String::from));
            parts.set("tokenizer.ggml.model", Value::String("bert".into()));
            parts.set("tokenizer.ggml.tokens", strings(tokens));
            parts.set("tokenizer.ggml.bos_token_id", Value::U32(2));
            parts.set("tokenizer.ggml.seperator_token_id", Value::U32(3));
            parts.set("tokenizer.ggml.unknown_token_id", Value::U32(1));
        }
        "gemma-embedding" => {
            let mut tokens: Vec<String> = ["<pad>", "<eos>", "<bos>", "<unk>"].map(String::from).to_vec();
            tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
            tokens.extend(["\u{2581}hello", "\u{2581}world", "\u{2581}"].map(String::from));
            let types: Vec<Value> = (0..tokens.len())
                .map(|i| {
                    Value::I32(if i < 4 {
                        3
                    } else if i < 260 {
                        6
                    } else {
                        1
                    })
                })
                .collect();
            parts.set("tokenizer.ggml.model", Value::String("llama".into()));
            parts.set(
                "tokenizer.ggml.scores",
                Value::Array((0..tokens.len()).map(|i| Value::F32(-(i as f32))).collect()),
            );
            parts.set("tokenizer.ggml.token_type", Value::Array(types));
            parts.set("tokenizer.ggml.tokens", strings(tokens));
            parts.set("tokenizer.ggml.bos_token_id", Value::U32(2));
            parts.set("tokenizer.ggml.eos_token_id", Value::U32(1));
            parts.set("tokenizer.ggml.unknown_token_id", Value::U32(3));
        }
        _ => {
            // Byte-level BPE: the 256 byte pieces, then the chat template's tokens.
            let bytes: Vec<String> = (0..=255u8).map(byte_piece).collect();
            let specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"];
            let types: Vec<Value> =
                (0..bytes.len() + specials.len()).map(|i| Value::I32(if i < 256 { 1 } else { 3 })).collect();
            let tokens: Vec<String> = bytes.into_iter().chain(specials.map(String::from)).collect();
            parts.set("tokenizer.ggml.model", Value::String("gpt2".into()));
            parts.set("tokenizer.ggml.pre", Value::String("qwen2".into()));
            parts.set("tokenizer.ggml.tokens", strings(tokens));
            parts.set("tokenizer.ggml.token_type", Value::Array(types));
            parts.set("tokenizer.ggml.merges", Value::Array(Vec::new()));
            parts.set("tokenizer.ggml.eos_token_id", Value::U32(257));
            parts.set("tokenizer.chat_template", Value::String("{{ '<|im_start|>' }}".into()));
            parts.set(
                "tokenizer.chat_template.rerank",
                Value::String("<|im_start|>{query}\n{document}<|im_end|>".into()),
            );
        }
    }
}

/// GPT-2's byte-to-character map (printable bytes as themselves).
fn byte_piece(b: u8) -> String {
    let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable {
        return char::from(b).to_string();
    }
    let rank = (0..b).filter(|&x| !matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)).count() as u32;
    char::from_u32(256 + rank).expect("a character").to_string()
}

/// Loads the recipe's model every way it can be used, and runs what loads.
pub fn load_and_run(recipe: &[u8]) {
    let bytes = model_file(recipe);
    let Ok(file) = GgufFile::parse("fuzz.gguf", &bytes) else { return };
    let _ = file.non_finite_tensors();
    let shared: qmd_core::arch::ModelBytes = Arc::new(bytes.clone());
    let cpu = ModelDevice::cpu();
    let texts = ["hello world".to_string(), "qmd <|im_end|> probe \u{1F9EA}".to_string()];
    if let Ok(encoder) = KernelEmbedder::load_on("fuzz.gguf", shared.clone(), &cpu)
        && let Ok(embeddings) = encoder.embed_counted(&texts)
    {
        // The encoder may return NaN; the layer above refuses it (TextEmbedder).
        assert_eq!(embeddings.len(), texts.len());
    }
    if let Ok(ranker) = KernelRanker::load_on("fuzz.gguf", shared.clone(), &cpu)
        && let Ok(scores) = ranker.score("hello", &["world", "qmd probe"])
    {
        assert_eq!(scores.len(), 2);
    }
    if let Ok(expander) = QueryExpander::load_on("fuzz.gguf", shared, &cpu)
        && let Ok(mut run) = expander.start("hello <|im_end|>")
    {
        for _ in 0..3 {
            if !matches!(run.step(), Ok(true)) {
                break;
            }
        }
    }
}

/// Recipes for each architecture, undamaged and with one kind of damage.
pub fn recipes() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for arch in 0..ARCHES.len() as u8 {
        out.push(vec![arch, 0, 1, 0, 0, 2, 0]);
        for damage in 0..8u8 {
            out.push(vec![arch, 1, 2, 1, 1, 2, 1, damage, 3, 1, 2]);
        }
    }
    out
}

/// Real-looking model files, for the byte-level target over the reader.
pub fn files() -> Vec<Vec<u8>> {
    (0..ARCHES.len() as u8).map(|arch| model_file(&[arch, 0, 0, 0, 0, 1, 0])).collect()
}
