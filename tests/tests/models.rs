//! The burn models against an independent NumPy reference
//! (`tests/models/reference.py`): all-MiniLM-L6-v2 embeddings (real
//! weights from `scripts/test-weights.sh`) and a small random
//! cross-encoder the reference writes, on burn's CPU backend and on its
//! wgpu backend (Mesa's software Vulkan, lavapipe, where no GPU is:
//! `scripts/setup-system.sh` installs it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use qmd_core::model::{BurnEmbedder, BurnRanker, Device, Loadable, ModelDevice, TextEmbedder};
use qmd_tests::models::{gpu_device, model_files, script_path, test_model_dir};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn reference(args: &[&str], input: &serde_json::Value) -> serde_json::Value {
    let python = script_path("python-env.sh").join("bin/python");
    let mut child = Command::new(python)
        .arg(repo().join("tests/models/reference.py"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "reference.py {args:?} failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y.powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Varied on purpose: empty-ish, unicode (accents, CJK, emoji, RTL),
/// markdown, code, numbers, and texts past the 256-token window.
fn texts() -> Vec<String> {
    let long = "Consensus protocols such as Raft elect a leader, replicate a log and commit entries once a majority \
                acknowledges them. "
        .repeat(30);
    vec![
        "".into(),
        " ".into(),
        ".".into(),
        "a".into(),
        "How do I configure rate limiting in an API gateway?".into(),
        "The CAP theorem says a distributed store cannot be consistent, available and partition tolerant at once."
            .into(),
        "# Project Launch Memo\n\n- budget: $2.4M\n- owner: Dana\n\n## Risks\nSupply chain delays.".into(),
        "fn main() {\n    println!(\"{}\", (1..=10).map(|x| x * x).sum::<u32>());\n}".into(),
        "Café crème brûlée à la façon de Zoë — naïve résumé".into(),
        "分布式系统中的一致性协议，例如 Paxos 和 Raft。".into(),
        "東京の天気は明日晴れるでしょう".into(),
        "Привет, как дела? Это тест на кириллице.".into(),
        "مرحبا بالعالم، هذا اختبار".into(),
        "🚀🔥 shipping the release today 🎉✅".into(),
        "ALL CAPS SHOUTING ABOUT KUBERNETES POD EVICTIONS!!!".into(),
        "pH 7.4, 37 °C, 5% CO2, 1e-9 M, p < 0.001".into(),
        "SELECT name FROM users WHERE id IN (SELECT user_id FROM orders);".into(),
        "vitamin D deficiency and bone density in older adults".into(),
        "Microsoft's Q3 revenue grew 17% year-over-year to $56.5 billion.".into(),
        "  leading and trailing whitespace   \n\n\t".into(),
        "word ".repeat(600),
        long,
        "supercalifragilisticexpialidocious antidisestablishmentarianism".into(),
        "https://example.com/path?query=1&x=y#fragment user@example.org".into(),
    ]
}

#[test]
fn minilm_embeddings_match_numpy_reference_on_cpu() {
    minilm_embeddings_match_numpy_reference(&Device::flex(), 1);
}

/// Every third text on the GPU (12 of 24, a window-long one among them):
/// in CI it is lavapipe, the GPU's work on two CPU cores, minutes for
/// them all; the CPU takes every one.
#[test]
fn minilm_embeddings_match_numpy_reference_on_wgpu() {
    minilm_embeddings_match_numpy_reference(&gpu_device().device, 3);
}

#[test]
fn cross_encoder_matches_numpy_reference_on_cpu() {
    cross_encoder_matches_numpy_reference(&Device::flex());
}

#[test]
fn cross_encoder_matches_numpy_reference_on_wgpu() {
    cross_encoder_matches_numpy_reference(&gpu_device().device);
}

/// [`texts`]: the first six (the checks below name two of them), then
/// every `step`-th.
fn minilm_embeddings_match_numpy_reference(device: &Device, step: usize) {
    let dir = test_model_dir();
    let encoder = BurnEmbedder::load(model_files(&dir), device).unwrap();
    assert_eq!(encoder.dimension(), 384);
    assert_eq!(encoder.tokenizer().max_tokens(), 256, "max_seq_length from sentence_bert_config.json");
    let texts: Vec<String> =
        texts().into_iter().enumerate().filter(|(i, _)| *i < 6 || i % step == 0).map(|(_, t)| t).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ours = encoder.embed(&refs).unwrap();
    let expected = reference(&["embed", dir.to_str().unwrap()], &serde_json::json!(texts));
    let expected: Vec<Vec<f64>> = serde_json::from_value(expected).unwrap();
    assert_eq!(ours.len(), texts.len());
    let mut worst = (1.0f64, 0usize);
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        assert_eq!(a.len(), 384);
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "text {i} is not unit length ({norm})");
        let c = cosine(a, b);
        if c < worst.0 {
            worst = (c, i);
        }
    }
    eprintln!("{device:?}: worst cosine {:.7} (text {})", worst.0, worst.1);
    assert!(worst.0 >= 0.9999, "text {} cosine {} < 0.9999: {:?}", worst.1, worst.0, texts[worst.1]);
    // Batched and alone give the same vector (padding must not leak).
    let alone = encoder.embed(&[refs[5]]).unwrap();
    assert!(cosine(&alone[0], &expected[5]) >= 0.9999);
    // Meaning, not just numbers: the paraphrase is nearer than the unrelated text.
    let v = encoder.embed(&["How do I limit API request rates?", "chocolate cake recipe"]).unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(dot(&v[0], &ours[4]) > dot(&v[1], &ours[4]) + 0.3);
}

fn cross_encoder_matches_numpy_reference(device: &Device) {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = test_model_dir().join("tokenizer.json");
    reference(&["write-reranker", dir.path().to_str().unwrap(), tokenizer.to_str().unwrap()], &serde_json::json!(null));
    let reranker = BurnRanker::load(model_files(dir.path()), device).unwrap();
    let query = "how does raft elect a leader";
    let documents = texts();
    let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
    let ours = reranker.score(query, &refs).unwrap();
    let expected = reference(
        &["rerank", dir.path().to_str().unwrap()],
        &serde_json::json!({"query": query, "documents": documents}),
    );
    let expected: Vec<f64> = serde_json::from_value(expected).unwrap();
    let spread = expected.iter().cloned().fold(f64::MIN, f64::max) - expected.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 0.05, "the random reranker should tell documents apart (spread {spread})");
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        assert!((*a as f64 - b).abs() < 1e-4, "document {i}: ours {a}, reference {b}");
    }
}

#[test]
fn a_checkpoint_missing_parameters_is_refused() {
    let dir = test_model_dir();
    let mut broken = model_files(&dir);
    // A reranker needs a classifier head, which a plain encoder lacks.
    broken.config = br#"{"model_type":"bert","hidden_size":384,"num_hidden_layers":6,"num_attention_heads":12,
        "intermediate_size":1536,"max_position_embeddings":512,"vocab_size":30522}"#
        .to_vec();
    let err = BurnRanker::load(broken, &Device::flex()).err().expect("must fail");
    assert!(err.to_string().contains("missing"), "{err}");
}

/// The default path for a repository: its matrices quantized to Q8_0 at
/// load, on the engine's kernels. Close to the f32 reference, with the
/// repository's tokenizer, window and pooling kept.
#[test]
fn minilm_quantized_at_load_stays_near_numpy_reference() {
    let dir = test_model_dir();
    let embedder = TextEmbedder::load(model_files(&dir), &ModelDevice::cpu()).unwrap();
    assert!(matches!(embedder, TextEmbedder::Kernels(_)), "a BERT repository runs on the kernels by default");
    let info = embedder.describe("minilm");
    assert_eq!((info.dimension, info.max_tokens, info.weights.as_str()), (384, 256, "q8_0"));
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ours = embedder.embed(&refs).unwrap();
    let expected = reference(&["embed", dir.to_str().unwrap()], &serde_json::json!(texts));
    let expected: Vec<Vec<f64>> = serde_json::from_value(expected).unwrap();
    let worst = ours
        .iter()
        .zip(&expected)
        .map(|(a, b)| cosine(a, b))
        .enumerate()
        .fold((1.0, 0), |w, (i, c)| if c < w.0 { (c, i) } else { w });
    eprintln!("quantized at load: worst cosine {:.5} (text {})", worst.0, worst.1);
    assert!(worst.0 >= QUANTIZED_MIN_COSINE, "text {} cosine {} < {QUANTIZED_MIN_COSINE}", worst.1, worst.0);
    // Batched and alone give the same vector: padding never leaks.
    let alone = embedder.embed(&[refs[5]]).unwrap();
    assert_eq!(alone[0], ours[5]);
    let v = embedder.embed(&["How do I limit API request rates?", "chocolate cake recipe"]).unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(dot(&v[0], &ours[4]) > dot(&v[1], &ours[4]) + 0.3);
}

/// Q8_0 weights and activations (and ggml's tanh GELU) against f32: the
/// worst text of [`texts`] measured 0.99835 with the AVX-512 VNNI, AVX2
/// and portable kernels alike; every kernel level gives the same products
/// (`kernel_levels`), so the bound holds on every CPU.
const QUANTIZED_MIN_COSINE: f64 = 0.997;
