//! GGUF models against llama.cpp: the reader and every block type against
//! gguf-py, damaged files, and models as F32 and Q8_0 GGUF run by our
//! kernels and by llama.cpp (node-llama-cpp, qmd 2.8.3's runtime): MiniLM
//! (BERT, WordPiece) and an EmbeddingGemma-architecture model with random
//! weights (Gemma 3 blocks, SentencePiece vocabulary) as embedders; a
//! Qwen3-Reranker-architecture model with random weights (Qwen3 blocks,
//! byte-level BPE, the rank template) as a reranker; SmolLM2-135M (real
//! weights, Q4_1, Llama blocks) as a language model.

use std::path::Path;
use std::sync::Arc;

use qmd_core::arch::backend::now;
use qmd_core::arch::{Backend, Decoder, ModelBytes};
use qmd_core::generate::Session;
use qmd_core::gguf::{BpeTokenizer, GgmlType, GgufFile, Value, dequantize};
use qmd_core::model::{KernelDevice, KernelEmbedder, KernelRanker, ModelDevice, quantized_weights};
use qmd_tests::anchor::{AnchoredRun, QWEN3_PROMPTS, anchored_to_f32, read, softmax, texts};
use qmd_tests::gguf::fixtures;
use qmd_tests::models::{cosine, gpu_device};

/// A repository quantized at load holds exactly the tensors llama.cpp's
/// converter writes for it in a Q8_0 file: names, types, shapes, bytes.
#[test]
fn a_repository_quantized_at_load_is_the_converters_q8_0_file() {
    let bytes = read(&fixtures().file("minilm-q8_0.gguf"));
    let file = GgufFile::parse("minilm-q8_0.gguf", &bytes).unwrap();
    let checkpoint = read(&qmd_tests::models::test_model_dir().join("model.safetensors"));
    let ours = quantized_weights(6, &checkpoint).unwrap();
    let mut quantized = 0;
    for tensor in &file.tensors {
        let (info, data) = ours.tensor(&tensor.name).unwrap_or_else(|| panic!("{} is not converted", tensor.name));
        assert_eq!((info.kind, &info.dims), (tensor.kind, &tensor.dims), "{}", tensor.name);
        assert!(data == &bytes[tensor.range.clone()], "{}: bytes differ from the converter's", tensor.name);
        quantized += usize::from(tensor.kind == GgmlType::Q8_0);
    }
    assert_eq!(quantized, 6 * 6 + 1, "every layer's six matrices and the token table are Q8_0");
}

/// Every metadata value type reads back as gguf-py wrote it, and every
/// tensor type dequantizes to gguf-py's values.
#[test]
fn reader_and_dequantization_match_gguf_py() {
    let f = fixtures();
    let bytes = read(&f.file("blocks.gguf"));
    let file = GgufFile::parse("blocks.gguf", &bytes).unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&read(&f.file("blocks.json"))).unwrap();
    let metadata = summary["metadata"].as_object().unwrap();
    assert!(metadata.len() >= 12, "every value type is covered");
    for (key, expected) in metadata {
        let got = file.get(key).unwrap_or_else(|| panic!("{key} missing"));
        assert_eq!(json_of(got), *expected, "{key}");
    }
    let expected: Vec<f32> = read(&f.file("blocks-expected.bin"))
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let tensors = summary["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 9);
    let mut at = 0;
    for t in tensors {
        let name = t["name"].as_str().unwrap();
        let info = file.tensor(name).unwrap();
        assert_eq!(format!("{}", info.kind), t["type"].as_str().unwrap(), "{name}");
        let mut values = vec![0f32; info.values()];
        dequantize(info.kind, &bytes[info.range.clone()], &mut values);
        for (i, (got, want)) in values.iter().zip(&expected[at..]).enumerate() {
            assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{name}[{i}]: {got} vs gguf-py {want}");
        }
        at += values.len();
    }
    assert_eq!(at, expected.len());
}

fn json_of(value: &Value) -> serde_json::Value {
    match value {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::F32(v) => f64::from(*v).into(),
        Value::F64(v) => (*v).into(),
        Value::Array(items) => items.iter().map(json_of).collect(),
        Value::I8(v) => (*v).into(),
        Value::I16(v) => (*v).into(),
        Value::I32(v) => (*v).into(),
        Value::I64(v) => (*v).into(),
        other => other.as_u64().unwrap().into(),
    }
}

/// Truncated at every length, bytes overwritten anywhere in the header,
/// a tensor type ggml has that we do not run: an error naming the file,
/// never a panic.
#[test]
fn damaged_files_are_errors() {
    let bytes = read(&fixtures().file("blocks.gguf"));
    let tensors = GgufFile::parse("x", &bytes).unwrap().tensors;
    let data_start = tensors.iter().map(|t| t.range.start).min().unwrap();
    let data_end = tensors.iter().map(|t| t.range.end).max().unwrap();
    for len in (0..data_end).step_by(7).chain([data_end - 1]) {
        let error = GgufFile::parse("cut.gguf", &bytes[..len]).err().unwrap_or_else(|| panic!("cut at {len} parsed"));
        assert!(error.message.starts_with("cut.gguf: "), "{}", error.message);
    }
    for at in 0..data_start {
        for byte in [0x00, 0xff, 0x7f] {
            let mut damaged = bytes.clone();
            damaged[at] = byte;
            if let Err(e) = GgufFile::parse("bad.gguf", &damaged) {
                assert!(e.message.starts_with("bad.gguf: "), "{}", e.message);
            }
        }
    }
    // The first tensor's type becomes IQ2_XXS (16).
    let file = GgufFile::parse("x", &bytes).unwrap();
    let name = file.tensors[0].name.as_bytes();
    // The tensor table's entry: the name's u64 length, then the name.
    let key = [&(name.len() as u64).to_le_bytes()[..], name].concat();
    let entry = bytes.windows(key.len()).rposition(|w| w == key).unwrap() + key.len();
    let type_at = entry + 4 + 8 * file.tensors[0].dims.len();
    let mut unknown = bytes.clone();
    unknown[type_at..type_at + 4].copy_from_slice(&16u32.to_le_bytes());
    let error = GgufFile::parse("iq.gguf", &unknown).err().unwrap();
    assert!(error.message.contains("IQ2_XXS") && error.message.contains("iq.gguf"), "{}", error.message);
}

/// Texts for the embedding comparison: the qmd eval docs' paragraphs, cut
/// to fit llama.cpp's 512-token context, and a few edge cases.
/// Our tokens and vectors against llama.cpp's on the same GGUF file, on
/// the CPU.
fn compare_with_llama(file: &str, min_cosine: f64) {
    compare_with_llama_on(file, min_cosine, &ModelDevice::cpu(), 1);
}

/// The same on `device` (its GPU kernels when it has one), over every
/// `step`-th text.
fn compare_with_llama_on(file: &str, min_cosine: f64, device: &ModelDevice, step: usize) -> f64 {
    let f = fixtures();
    let path = f.file(file);
    let encoder = KernelEmbedder::load_on(file, Arc::new(read(&path)), device).unwrap();
    let texts: Vec<String> = texts().into_iter().step_by(step).collect();
    let reference = f.llama("embed", &path, &serde_json::json!(texts));
    let ours = encoder.embed_counted(&texts).unwrap();
    let mut worst = 1.0f64;
    for (i, text) in texts.iter().enumerate() {
        let tokens: Vec<u32> = serde_json::from_value(reference["input_tokens"][i].clone()).unwrap();
        let encoding = encoder.tokenizer().encode_counted(&[text]).unwrap().remove(0).0;
        assert_eq!(encoding.get_ids(), tokens, "tokens of {text:?}");
        let theirs: Vec<f32> = serde_json::from_value(reference["embeddings"][i].clone()).unwrap();
        worst = worst.min(cosine(&ours[i].vector, &theirs));
    }
    eprintln!("{file} on {device:?}: worst cosine vs llama.cpp over {} texts: {worst:.7}", texts.len());
    assert!(worst >= min_cosine, "{file} on {device:?}: worst cosine {worst} < {min_cosine}");
    worst
}

#[test]
fn minilm_f32_gguf_matches_llama_cpp() {
    compare_with_llama("minilm-f32.gguf", 0.9999);
}

/// Both sides quantize the activations to Q8_0 per block of 32; the worst
/// cosine measured over these texts is 0.99974 (F32: ≥ 0.99999).
#[test]
fn minilm_q8_0_gguf_matches_llama_cpp() {
    let bytes = read(&fixtures().file("minilm-q8_0.gguf"));
    let file = GgufFile::parse("q8", &bytes).unwrap();
    assert_eq!(file.tensor("blk.0.ffn_up.weight").unwrap().kind, GgmlType::Q8_0, "the fixture is quantized");
    compare_with_llama("minilm-q8_0.gguf", 0.9995);
}

/// A call's texts are cut into passes that run side by side on the
/// cores, several passes here (over 2 × 512 tokens): each text still gets
/// the vector it gets alone, in the call's order. (Alone a text is a pass
/// of its own, whose products may take another kernel: the same to the
/// last bits or nearly, never another text's vector.)
#[test]
fn passes_side_by_side_give_each_text_its_own_vector_in_order() {
    let path = fixtures().file("minilm-q8_0.gguf");
    let encoder = KernelEmbedder::load("minilm-q8_0.gguf", Arc::new(read(&path))).unwrap();
    let base = texts();
    let texts: Vec<String> = (0..24).map(|i| base[i % base.len()].repeat(1 + i % 6)).collect();
    let counts = encoder.embed_counted(&texts).unwrap();
    let tokens: usize = counts.iter().map(|e| (e.tokens as usize).min(encoder.tokenizer().max_tokens())).sum();
    assert!(tokens > 2 * 512, "{tokens} tokens make one pass");
    for (i, text) in texts.iter().enumerate() {
        let alone = encoder.embed_counted(std::slice::from_ref(text)).unwrap().remove(0);
        let similarity = cosine(&counts[i].vector, &alone.vector);
        assert!(similarity > 0.99999, "text {i}: cosine {similarity} to its vector alone");
    }
}

/// EmbeddingGemma's architecture (windowed and global layers, grouped-query
/// attention over 256-wide heads, dense projections) and Gemma's
/// SentencePiece tokenizer, on random weights. Measured: F32 1.0000000,
/// Q8_0 0.99994; a window one token wider than llama.cpp's gives 0.99967.
#[test]
fn gemma_embedding_f32_gguf_matches_llama_cpp() {
    compare_with_llama("gemma-f32.gguf", 0.9999);
}

#[test]
fn gemma_embedding_q8_0_gguf_matches_llama_cpp() {
    compare_with_llama("gemma-q8_0.gguf", 0.9995);
}

/// Q4_K_M as llama.cpp's own quantizer writes it (Q4_K, with Q6_K for the
/// token embeddings, attn_v and half the ffn_down): both sides multiply
/// K-quant weights with activations quantized to Q8_K. Measured: 0.99986.
#[test]
fn gemma_embedding_q4_k_m_gguf_matches_llama_cpp() {
    let path = fixtures().quantized("gemma", "q4_k_m");
    let bytes = read(&path);
    let file = GgufFile::parse("q4_k_m", &bytes).unwrap();
    let kinds: Vec<GgmlType> = file.tensors.iter().map(|t| t.kind).collect();
    assert!(kinds.contains(&GgmlType::Q4_K) && kinds.contains(&GgmlType::Q6_K), "a Q4_K_M mix: {kinds:?}");
    compare_with_llama("gemma-q4_k_m.gguf", 0.9995);
}

/// Texts for the tokenizer comparison: the embedding texts, and text in
/// many scripts, spacing and punctuation runs, digits, code, and special
/// tokens written out (parsed only when asked).
fn tokenizer_texts() -> Vec<String> {
    let mut out = texts();
    out.extend(
        [
            "Привет, мир! Ёжик в тумане — 1999 год.",
            "Ελληνικά: καλημέρα κόσμε; αύριο.",
            "עברית ועוד טקסט. العربية: مرحبا بالعالم ١٢٣",
            "हिन्दी पाठ, বাংলা লেখা, தமிழ் உரை",
            "中文搜索引擎：笔记不会离开你的电脑。한국어 문장입니다.",
            "ภาษาไทยไม่มีช่องว่าง และ tiếng Việt có dấu.",
            "Türkçe İstanbul ığüşöç; Polski: zażółć gęślą jaźń",
            "fn main() {\n    let x = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
            "I'm sure it's fine, they'll say we've 'RE DONE' and I'd agree; DON'T.",
            "3.14159 12345678 1,000,000 v2.8.3 0x7fff",
            "    four spaces\n\n\n   \t mixed\r\nwindows\r\n",
            "trailing spaces   ",
            "<|im_start|>user\nWrite <think>one</think> line<|im_end|>\n<|im_start|>assistant\n",
            "<|endoftext|><|endoftext|>x<|im_end|>",
            "emoji 👩‍👩‍👧‍👦 flags 🇯🇵🇫🇷 keycap 1️⃣ 🦙🦙",
            "\u{0} control \u{1b}[0m bytes \u{7f} and \u{200b} zero width",
            "",
            " ",
            "\n",
        ]
        .map(String::from),
    );
    out
}

/// Our byte-level BPE against llama.cpp's tokens on the same file, special
/// tokens as text and parsed.
fn compare_bpe_tokens(path: &Path) {
    let bytes = read(path);
    let file = GgufFile::parse("model", &bytes).unwrap();
    let tokenizer = BpeTokenizer::from_gguf(&file).unwrap();
    let texts = tokenizer_texts();
    let reference = fixtures().llama("tokenize", path, &serde_json::json!(texts));
    for (i, text) in texts.iter().enumerate() {
        for (mode, special) in [("plain", false), ("special", true)] {
            let theirs: Vec<u32> = serde_json::from_value(reference[mode][i].clone()).unwrap();
            assert_eq!(tokenizer.encode(text, special), theirs, "{} {mode} tokens of {text:?}", path.display());
        }
    }
}

#[test]
fn bpe_tokenizers_match_llama_cpp() {
    let f = fixtures();
    compare_bpe_tokens(&f.file("qwen3-reranker-f32.gguf"));
    // A real vocabulary (49,152 tokens, SmolLM2's pre-tokenizer).
    compare_bpe_tokens(&f.smollm2());
}

/// (query, documents) pairs for the rank comparison: qmd-sized chunks of
/// the eval docs (up to 3,600 characters), short and odd documents.
fn rank_inputs() -> Vec<(String, Vec<String>)> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qmd-eval/docs");
    let mut paths: Vec<_> = std::fs::read_dir(docs).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut documents: Vec<String> = paths
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let chars: Vec<char> = text.chars().collect();
            chars.chunks(3600).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>()
        })
        .collect();
    documents.extend(
        ["a", " leading space", "<think>not a control token</think> <|im_end|> written out", "Ответ: да"]
            .map(String::from),
    );
    ["how do raft leaders get elected", "CAP theorem trade-offs", "Wie funktioniert die Suche?"]
        .iter()
        .map(|q| (q.to_string(), documents.clone()))
        .collect()
}

/// Which of [`rank_inputs`] a comparison scores: the first `queries`
/// queries and, of their documents, those of at most `max_chars`
/// characters. llama.cpp's answer is always the whole query's (one
/// recording); a document's score does not depend on the others'.
#[derive(Clone, Copy)]
struct RankSelection {
    queries: usize,
    max_chars: usize,
}

const EVERY_RANK_INPUT: RankSelection = RankSelection { queries: usize::MAX, max_chars: usize::MAX };

/// On lavapipe (the GPU kernels run on the CPU, some 50 times slower than
/// the CPU kernels): the first query's three shortest notes (1,500 tokens
/// in all) and the four short texts. The whole first query, 3,900 tokens,
/// took 150 s a file, the largest part of the engine tests' time.
const RANK_INPUTS_ON_LAVAPIPE: RankSelection = RankSelection { queries: 1, max_chars: 2600 };

/// Our rank scores and llama.cpp's ranking context's (qmd's `rankAll`) for
/// every (query, document) of [`rank_inputs`], in order; the tokens each
/// side evaluates must be the same.
fn rank_scores(file: &str) -> (Vec<f32>, Vec<f32>) {
    rank_scores_on(file, &ModelDevice::cpu(), EVERY_RANK_INPUT)
}

/// The same on `device`, for the `selection`.
fn rank_scores_on(file: &str, device: &ModelDevice, selection: RankSelection) -> (Vec<f32>, Vec<f32>) {
    let f = fixtures();
    let path = f.file(file);
    let ranker = KernelRanker::load_on(file, Arc::new(read(&path)), device).unwrap();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for (query, documents) in rank_inputs().into_iter().take(selection.queries) {
        let reference = f.llama("rank", &path, &serde_json::json!({"query": query, "documents": documents}));
        let inputs: Vec<Vec<u32>> = serde_json::from_value(reference["inputs"].clone()).unwrap();
        let scores: Vec<f32> = serde_json::from_value(reference["scores"].clone()).unwrap();
        let kept = selected_documents(&documents, selection);
        let refs: Vec<&str> = kept.iter().map(|&i| documents[i].as_str()).collect();
        let kept_inputs: Vec<Vec<u32>> = kept.iter().map(|&i| inputs[i].clone()).collect();
        assert_eq!(ranker.inputs(&query, &refs).unwrap(), kept_inputs, "{file}: the evaluated tokens of {query:?}");
        ours.extend(ranker.score(&query, &refs).unwrap());
        theirs.extend(kept.iter().map(|&i| scores[i]));
    }
    assert_eq!(ours.len(), theirs.len());
    let (low, high) = theirs.iter().fold((1f32, 0f32), |(l, h), &t| (l.min(t), h.max(t)));
    assert!(high - low > 0.1, "the fixture's scores spread out ({low}..{high}), so the comparison means something");
    (ours, theirs)
}

/// The indexes of the `documents` a `selection` keeps.
fn selected_documents(documents: &[String], selection: RankSelection) -> Vec<usize> {
    (0..documents.len()).filter(|&i| documents[i].chars().count() <= selection.max_chars).collect()
}

/// llama.cpp's rank scores alone, for the `selection` (the F32 answer a
/// quantized file is held to).
fn llama_rank_scores(file: &str, selection: RankSelection) -> Vec<f32> {
    let f = fixtures();
    let path = f.file(file);
    let mut kept_scores = Vec::new();
    for (query, documents) in rank_inputs().into_iter().take(selection.queries) {
        let reference = f.llama("rank", &path, &serde_json::json!({"query": query, "documents": documents}));
        let scores: Vec<f32> = serde_json::from_value(reference["scores"].clone()).unwrap();
        kept_scores.extend(selected_documents(&documents, selection).into_iter().map(|i| scores[i]));
    }
    kept_scores
}

/// Our rank scores on a quantized `file` against llama.cpp's on it:
/// (worst, mean) difference, and the mean by which llama.cpp's own scores
/// on it move from its F32 file's.
fn quantized_rank_scores(file: &str) -> (f32, f32, f32) {
    let (ours, theirs) = rank_scores(file);
    let theirs_f32 = llama_rank_scores("qwen3-reranker-f32.gguf", EVERY_RANK_INPUT);
    let (worst, mean) = differences(&ours, &theirs);
    let (_, shift) = differences(&theirs, &theirs_f32);
    eprintln!(
        "{file}: rank scores vs llama.cpp: worst {worst:.1e}, mean {mean:.1e}; llama.cpp's on it vs its F32: \
         mean {shift:.1e}"
    );
    (worst, mean, shift)
}

/// (largest, mean) absolute difference.
fn differences(a: &[f32], b: &[f32]) -> (f32, f32) {
    let d: Vec<f32> = a.iter().zip(b).map(|(x, y)| (x - y).abs()).collect();
    (d.iter().fold(0f32, |m, &x| m.max(x)), d.iter().sum::<f32>() / d.len() as f32)
}

/// Qwen3 blocks (causal grouped-query attention, q/k norms, NEOX rope,
/// SwiGLU), the rank template's tokens and the yes/no head. Measured over
/// 30 pairs: within 1e-5 of llama.cpp, but 4e-4 for a 569-token input:
/// llama.cpp evaluates 512 tokens per batch, and a batch of fewer than 64
/// queries takes its flash attention's f16 path (f16 queries, an f16
/// accumulator), which we do not copy.
#[test]
fn qwen3_reranker_f32_gguf_matches_llama_cpp() {
    let (ours, theirs) = rank_scores("qwen3-reranker-f32.gguf");
    let (worst, mean) = differences(&ours, &theirs);
    eprintln!("qwen3-reranker F32: rank scores vs llama.cpp: worst {worst:.1e}, mean {mean:.1e}");
    assert!(worst <= 1e-3, "worst difference {worst}");
}

/// Both sides quantize every product's inputs to Q8_0; rounding is
/// discontinuous, so last-bit differences in sums flip single values and
/// the two runs drift apart by about the size of the quantization noise
/// itself. Measured over 30 pairs: worst 7.4e-3, mean 2.3e-3, where
/// llama.cpp's own Q8_0 file moves its F32 scores by a mean of 4.4e-3: our
/// Q8_0 is nearer llama.cpp's Q8_0 than llama.cpp's Q8_0 is to its F32.
#[test]
fn qwen3_reranker_q8_0_gguf_matches_llama_cpp() {
    let (worst, mean, shift) = quantized_rank_scores("qwen3-reranker-q8_0.gguf");
    assert!(worst <= 1e-2, "worst difference {worst}");
    assert!(mean <= shift, "mean difference {mean} exceeds llama.cpp's own F32 → Q8_0 shift {shift}");
}

/// The reranker as Q4_K_M from llama.cpp's quantizer. Measured over 30
/// pairs: worst 1.3e-2, mean 3.2e-3 from llama.cpp's scores on the same
/// file, where llama.cpp's Q4_K_M moves its own F32 scores by a mean of
/// 1.1e-1 (the rounding drift of the Q8_0 case, on coarser weights).
#[test]
fn qwen3_reranker_q4_k_m_gguf_matches_llama_cpp() {
    fixtures().quantized("qwen3-reranker", "q4_k_m");
    let (worst, mean, shift) = quantized_rank_scores("qwen3-reranker-q4_k_m.gguf");
    assert!(worst <= 2e-2, "worst difference {worst}");
    assert!(
        mean <= shift / 10.0,
        "mean difference {mean} is not a tenth of llama.cpp's own F32 → Q4_K_M shift {shift}"
    );
}

/// The same files on the GPU kernels (wgpu; Mesa's lavapipe where the
/// machine has no GPU, so over fewer texts: lavapipe runs the kernels on
/// the CPU, slowly). The GPU multiplies f32 activations by the dequantized
/// weights where llama.cpp's CPU path quantizes the activations to Q8_0
/// first, so Q8_0 results differ by that quantization noise and F32 ones
/// match. Measured: MiniLM Q8_0 0.99948; Gemma F32 1.0000000, Q8_0
/// 0.99995, Q4_K_M (the K-quants decoded from their own blocks) 0.99991;
/// Qwen3 reranker ([`RANK_INPUTS_ON_LAVAPIPE`]) F32 worst 2.1e-4, Q8_0
/// worst 2.4e-2, mean 7.8e-3 where llama.cpp's own Q8_0 moves its F32
/// scores by 4.2e-3 (the first query's every document: 6.0e-3 against
/// 3.1e-3; all three queries': 4.0e-3 against 4.4e-3).
#[test]
fn gguf_models_on_wgpu_match_llama_cpp() {
    let device = gpu_device();
    assert!(device.gpu.is_some(), "a wgpu device for the GGUF kernels");
    fixtures().quantized("gemma", "q4_k_m");
    let files = [
        ("minilm-q8_0.gguf", 0.999, 12),
        ("gemma-f32.gguf", 0.9999, 4),
        ("gemma-q8_0.gguf", 0.999, 4),
        ("gemma-q4_k_m.gguf", 0.999, 4),
    ];
    for (file, min_cosine, step) in files {
        compare_with_llama_on(file, min_cosine, device, step);
    }
    let (ours, theirs) = rank_scores_on("qwen3-reranker-f32.gguf", device, RANK_INPUTS_ON_LAVAPIPE);
    let (worst, mean) = differences(&ours, &theirs);
    eprintln!("Qwen3 reranker F32 on {device:?}: rank scores vs llama.cpp: worst {worst:.1e}, mean {mean:.1e}");
    assert!(worst <= 1e-3, "F32: worst difference {worst}");
    let (ours, theirs) = rank_scores_on("qwen3-reranker-q8_0.gguf", device, RANK_INPUTS_ON_LAVAPIPE);
    let theirs_f32 = llama_rank_scores("qwen3-reranker-f32.gguf", RANK_INPUTS_ON_LAVAPIPE);
    let (worst, mean) = differences(&ours, &theirs);
    let (_, shift) = differences(&theirs, &theirs_f32);
    eprintln!(
        "Qwen3 reranker Q8_0 on {device:?}: worst {worst:.1e}, mean {mean:.1e}; llama.cpp's F32 → Q8_0 {shift:.1e}"
    );
    assert!(worst <= 3e-2, "Q8_0: worst difference {worst}");
    assert!(mean <= 2.0 * shift, "Q8_0: mean difference {mean} exceeds twice llama.cpp's own F32 → Q8_0 shift {shift}");
}

const SMOLLM2_PROMPTS: [&str; 3] = [
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nList three uses of a search index.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful assistant. Answer in one short sentence, and do not add any \
     explanation, greeting or list: the user reads answers on a small screen while travelling, so every \
     extra word costs them time.<|im_end|>\n<|im_start|>user\nWhat is the largest planet in the solar \
     system, and roughly how many times wider than the Earth is it?<|im_end|>\n<|im_start|>assistant\n",
];

/// The generation loop over the blocks' key/value caches (the prompt in
/// one pass, then a token at a time) against llama.cpp's 32 greedy tokens
/// on each prompt; its first logits must be the whole-sequence pass's.
/// SmolLM2's prompts on the CPU.
fn greedy_with_the_kv_cache(path: &Path) -> Vec<GreedyRun> {
    greedy_with_the_kv_cache_on(path, &SMOLLM2_PROMPTS, &KernelDevice::Cpu)
}

/// One prompt's greedy run against llama.cpp's.
struct GreedyRun {
    /// Tokens as llama.cpp's before the first that differs.
    agreed: usize,
    /// Where the two parted: llama.cpp's token's logit below ours.
    gap: f32,
    /// The first step's largest probability difference (llama.cpp's 20
    /// most probable tokens), from the cache (f16 keys and values, as
    /// llama.cpp's).
    first_step: f32,
    tokens: Vec<u32>,
}

/// One prompt's greedy run against llama.cpp's, on `device` (its caches
/// there).
fn greedy_with_the_kv_cache_on(path: &Path, prompts: &[&str], device: &KernelDevice) -> Vec<GreedyRun> {
    let f = fixtures();
    let bytes: ModelBytes = Arc::new(read(path));
    let file = GgufFile::parse("decoder", (*bytes).as_ref()).unwrap();
    let tokenizer = BpeTokenizer::from_gguf(&file).unwrap();
    let model = Decoder::load(&file, bytes.clone()).unwrap();
    let mut out = Vec::new();
    for prompt in prompts {
        let reference = f.llama("greedy", path, &serde_json::json!({"prompt": prompt, "tokens": 32}));
        let tokens: Vec<u32> = serde_json::from_value(reference["prompt"].clone()).unwrap();
        let ours = tokenizer.encode_prompt(prompt);
        assert_eq!(ours, tokens, "prompt tokens of {prompt:?}");
        let theirs: Vec<u32> = serde_json::from_value(reference["generated"].clone()).unwrap();
        assert_eq!(theirs.len(), 32, "llama.cpp's 32 tokens after {prompt:?}");
        let mut session = Session::on(&model, device);
        let mut logits = session.feed(&tokens).unwrap();
        // The whole pass's states through the session's LM head.
        let states = now(device.last_states_async(&model, std::slice::from_ref(&tokens))).unwrap();
        let whole = match device {
            KernelDevice::Cpu => model.logits(&states),
            KernelDevice::Gpu(gpu) => gpu.read(model.logits_on(gpu, &gpu.upload(states))).unwrap(),
        };
        let largest = whole.iter().fold(0f32, |m, l| m.max(l.abs()));
        let (worst, _) = differences(&logits, &whole);
        assert!(worst <= 1e-4 * largest, "first logits: cached pass vs whole pass differ by {worst}");
        let first: Vec<(u32, f32)> = serde_json::from_value(reference["first"].clone()).unwrap();
        let probabilities = softmax(&logits);
        let first_step = first.iter().fold(0f32, |m, &(id, p)| m.max((probabilities[id as usize] - p).abs()));
        let ours = Session::on(&model, device).greedy(&tokens, 32).unwrap();
        let agreed = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
        let mut gap = 0.0;
        if agreed < theirs.len() {
            for &t in &ours[..agreed] {
                logits = session.feed(&[t]).unwrap();
            }
            gap = logits[ours[agreed] as usize] - logits[theirs[agreed] as usize];
        }
        let text = |t: &[u32]| String::from_utf8_lossy(&tokenizer.decode(t, true)).into_owned();
        eprintln!(
            "{}: {agreed} of 32 greedy tokens as llama.cpp's ({:?}); gap {gap:.3}; first step {first_step:.1e}",
            path.display(),
            text(&ours)
        );
        out.push(GreedyRun { agreed, gap, first_step, tokens: ours });
    }
    out
}

/// Greedy tokens of F32 on both sides within the last bits: the summation
/// orders differ (llama.cpp's with the CPU that runs it), so a step where
/// two tokens are tied to within this in our logits may go either way.
/// (Quantized weights: 0.1, as each side rounds activations to 8 bits.)
const F32_TIE: f32 = 0.01;

/// A greedy run of F32 weights is llama.cpp's, token for token, or parts
/// only where llama.cpp's token is tied with ours to within [`F32_TIE`].
fn assert_f32_greedy_agrees(run: &GreedyRun) {
    assert!(run.agreed == 32 || run.gap <= F32_TIE, "parted at token {} by {} (F32)", run.agreed, run.gap);
}

/// SmolLM2-135M-Instruct (real weights, Llama blocks with adjacent-pair
/// rope, a 49,152-token byte-level BPE) dequantized to F32: no activation
/// rounding on either side, so the forward pass itself is compared: each
/// prompt's tokens, the first step's 20 most probable tokens and all 32
/// greedy tokens, through the key/value caches (whose first logits are
/// the whole-sequence pass's). Measured: the first step within 4.4e-4 of
/// llama.cpp's (summation order moves the last digits).
#[test]
fn smollm2_f32_matches_llama_cpp() {
    for run in greedy_with_the_kv_cache(&fixtures().smollm2_f32()) {
        assert_f32_greedy_agrees(&run);
        assert!(run.first_step <= 1e-3, "first-step probabilities differ by {}", run.first_step);
    }
}

/// Q4_1 blocks multiplied in integers against Q8_1 activations, as
/// llama.cpp does (the float path of dequantized weights lost a near tie
/// at the ninth greedy token of the second prompt). Both sides round every
/// product's inputs to 8 bits, and on this model that rounding alone moves
/// the top probability by 0.05 (the float path's 0.573 against the integer
/// path's 0.621 on the first prompt), so last-bit differences that flip
/// single roundings move the first step by that order (measured: 3.7e-2
/// to 4.3e-2 across summation orders), and greedy runs agree token for
/// token until, at most, a step where llama.cpp's token and ours are tied
/// to within 0.1 in our logits (measured: the first and third prompts part
/// at their 31st and 22nd tokens, past the end of the answers; the second
/// agrees throughout). The strict check of the forward pass is the F32
/// twin's above.
#[test]
fn smollm2_q4_1_matches_llama_cpp() {
    let runs = greedy_with_the_kv_cache(&fixtures().smollm2());
    for run in &runs {
        assert!(run.first_step <= 8e-2, "first-step probabilities differ by {}", run.first_step);
        assert!(run.agreed == 32 || run.gap <= 0.1, "parted at token {} by {}", run.agreed, run.gap);
    }
    // Where a run parts depends on where a tie falls, which moves with the
    // CPU; that all part early would not.
    assert!(
        runs.iter().any(|run| run.agreed >= 16),
        "no run agrees for 16 tokens: {:?}",
        runs.iter().map(|r| r.agreed).collect::<Vec<_>>()
    );
}

/// A random Qwen3-1.7B-architecture causal LM (qmd's expansion model's
/// shape): F32 gives llama.cpp's prompt tokens, its first-step
/// probabilities (within 1e-3) and its 32 greedy tokens; Q4_K_M, made by
/// llama.cpp's own quantizer, the first step within 2e-2.
#[test]
fn qwen3_lm_greedy_matches_llama_cpp() {
    let f = fixtures();
    for run in greedy_with_the_kv_cache_on(&f.qwen3_lm(), &QWEN3_PROMPTS, &KernelDevice::Cpu) {
        assert_f32_greedy_agrees(&run);
        // Measured: 2.5e-4 on both prompts, since short passes sum the
        // attention's values in f16 as llama.cpp's flash attention does
        // (1.8e-4 and 1.3e-3 before).
        assert!(run.first_step <= 1e-3, "first-step probabilities differ by {}", run.first_step);
        // The comparison means something only if the run varies.
        let distinct: std::collections::BTreeSet<u32> = run.tokens.iter().copied().collect();
        assert!(distinct.len() >= 4, "a greedy run of {} distinct tokens: {:?}", distinct.len(), run.tokens);
    }
    // Q4_K_M: each side rounds every product's activations to 8 bits, and
    // random weights make near ties common, so greedy runs part before the
    // end: as SmolLM2 Q4_1's, a run agrees for 16 tokens or parts where
    // llama.cpp's token is within 0.1 of ours in our logits (measured: at
    // token 8 by 0.003, a tie, and at token 24 by 0.33; at tokens 20 and
    // 24 before the prompt's products ran on packed panels and the short
    // passes summed values in f16, at token 4 before they read queries as
    // f16); the first step is within 2.1e-3 and 1.7e-2 (SmolLM2 Q4_1:
    // 1.0e-2 to 3.0e-2).
    for run in anchored_to_f32(&f.quantized("qwen3", "q4_k_m"), &f.qwen3_lm(), &QWEN3_PROMPTS, &KernelDevice::Cpu) {
        assert_q4_k_m_near_f32(&run);
    }
}

/// Q4_K_M against the exact (F32) answer: its first step no further from
/// F32's than llama.cpp's own Q4_K_M is, plus 3e-2 (measured here, AVX-512:
/// ours 2.8e-2 and 1.0e-1 from F32, llama.cpp's 3.3e-2 and 8.8e-2; the two
/// quantized runs differ by 2e-2 directly, and llama.cpp's by about 3e-3
/// between AVX2 and AVX-512). Its greedy run (teacher-forced along F32's)
/// is printed, not held:
/// with random weights, 4-bit rounding alone changes most of F32's choices
/// (ours and llama.cpp's alike: near ties everywhere), so the greedy
/// comparison of quantized weights is SmolLM2's (real weights) above.
fn assert_q4_k_m_near_f32(run: &AnchoredRun) {
    assert!(
        run.first_ours <= run.first_llama + 3e-2,
        "Q4_K_M's first step is {} from F32's, llama.cpp's Q4_K_M {}",
        run.first_ours,
        run.first_llama
    );
}

/// Decoding on the GPU kernels (wgpu; Mesa's lavapipe where the machine
/// has no GPU), the keys and values in caches on the GPU and the LM head
/// there too: the F32 Qwen3 LM gives llama.cpp's 32 greedy tokens and its
/// first step within 1e-3 (measured: 1.1e-4 and 3.7e-4). The GPU
/// multiplies f32 activations where llama.cpp rounds them to 8 bits, so
/// its Q4_K_M twin is held to SmolLM2 Q4_1's first-step bound, where that
/// rounding alone moves probabilities by 0.05 (measured: 3.2e-3 and
/// 4.4e-2; the CPU's 8-bit path: 2.1e-3 and 1.1e-2), and parts from
/// llama.cpp's greedy run only on near ties (measured: token 4 by 0.001,
/// token 24 by 0.21). (SmolLM2 Q4_1 on the GPU,
/// measured once: 32, 8 and 32 tokens agree, the second prompt parting
/// on a 0.039 tie; at ~2 s a token on lavapipe it is left out of CI.)
#[test]
fn decoding_on_wgpu_matches_llama_cpp() {
    // A `KernelDevice` holds one model's weights on the GPU.
    let on_gpu = || KernelDevice::on(gpu_device());
    assert!(matches!(on_gpu(), KernelDevice::Gpu(_)), "a wgpu device for the GGUF kernels");
    let f = fixtures();
    for run in greedy_with_the_kv_cache_on(&f.qwen3_lm(), &QWEN3_PROMPTS, &on_gpu()) {
        assert_f32_greedy_agrees(&run);
        assert!(run.first_step <= 1e-3, "first-step probabilities differ by {}", run.first_step);
    }
    // Q4_K_M on its first prompt: the F32 run above holds the decoding
    // loop on the GPU to llama.cpp; this one its K-quant kernels.
    for run in greedy_with_the_kv_cache_on(&f.quantized("qwen3", "q4_k_m"), &QWEN3_PROMPTS[..1], &on_gpu()) {
        assert!(run.first_step <= 8e-2, "Q4_K_M first-step probabilities differ by {}", run.first_step);
        assert!(run.agreed >= 16 || run.gap <= 0.1, "Q4_K_M parted at token {} by {}", run.agreed, run.gap);
    }
}

/// qmd's expansion, sampled as qmd configures it (seeded), on SmolLM2
/// Q4_1 with qmd's grammar: every output is lines of `lex|vec|hyde: text`,
/// a seed repeats its output, and greedy generation equals `greedy`.
#[test]
fn smollm2_sampling_under_qmds_grammar() {
    use qmd_core::generate::grammar::TokenMask;
    use qmd_core::generate::{Limits, Sampler, Sampling};
    let path = fixtures().smollm2();
    let bytes: ModelBytes = Arc::new(read(&path));
    let file = GgufFile::parse("smollm2", (*bytes).as_ref()).unwrap();
    let tokenizer = BpeTokenizer::from_gguf(&file).unwrap();
    let model = Decoder::load(&file, bytes.clone()).unwrap();
    let end: Vec<u32> = ["<|im_end|>", "<|endoftext|>"].iter().filter_map(|t| tokenizer.id(t)).collect();
    assert_eq!(end.len(), 2, "SmolLM2's end tokens");
    let mask = TokenMask::new(&tokenizer.token_bytes(), end.clone());
    let newline = tokenizer.encode("\n", false);
    let prompt = tokenizer.encode(
        "<|im_start|>user\n/no_think Expand this search query: rotate api keys<|im_end|>\n<|im_start|>assistant\n",
        true,
    );
    let limits = Limits { max_tokens: 48, end: &end, unpunished: &newline, grammar: Some(&mask) };
    let line = |l: &str| ["lex: ", "vec: ", "hyde: "].iter().any(|t| l.strip_prefix(t).is_some_and(|c| !c.is_empty()));
    for seed in 1..=4 {
        let run = || {
            let sampler = Sampler::new(Sampling::QMD_EXPANSION.with_seed(seed));
            Session::new(&model).generate(&prompt, sampler, limits).unwrap()
        };
        let tokens = run();
        assert_eq!(run(), tokens, "seed {seed} repeats");
        let text = String::from_utf8_lossy(&tokenizer.decode(&tokens, false)).into_owned();
        eprintln!("seed {seed}: {text:?}");
        let finished = tokens.len() < 48;
        let lines: Vec<&str> = text.split('\n').collect();
        let (last, whole) = lines.split_last().unwrap();
        assert!(!whole.is_empty() || !finished, "at least one line: {text:?}");
        assert!(whole.iter().all(|l| line(l)), "every line follows the grammar: {text:?}");
        if finished {
            assert!(last.is_empty(), "a finished output ends after a whole line: {text:?}");
        } else {
            let partial = ["lex: ", "vec: ", "hyde: "].iter().any(|t| last.starts_with(t) || t.starts_with(last));
            assert!(partial, "a cut-off line is a prefix of one: {last:?}");
        }
    }
    // Greedy generation is the argmax of each step's logits.
    let mut session = Session::new(&model);
    let mut logits = session.feed(&prompt).unwrap();
    let mut stepped = Vec::new();
    while stepped.len() < 16 {
        stepped.push(qmd_core::generate::sampler::most_probable(&logits));
        logits = session.feed(&stepped[stepped.len() - 1..]).unwrap();
    }
    assert_eq!(Session::new(&model).greedy(&prompt, 16).unwrap(), stepped);
}
