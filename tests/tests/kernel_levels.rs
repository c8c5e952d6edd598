//! The CPU kernels at every instruction-set level this machine runs: the
//! x86 dispatch capped at AVX2 and at the portable loops (what
//! `QMD_KERNELS` does), so the paths of an AVX2-only and of a no-SIMD
//! machine are checked wherever the suite runs, without running it three
//! times. At each level, quantized models of every kernel family (Q8_0,
//! Q4_1, the K-quants; the activation quantizer, the attention and the
//! element-wise loops with them) are held to the exact answer, their F32
//! originals' as llama.cpp recorded them, by the distance llama.cpp's own
//! quantized run keeps; and every level to the widest one.
//!
//! One test in its own binary: the cap is process-wide.

use std::path::Path;
use std::sync::Arc;

use qmd_core::kernels::dispatch::Level;
use qmd_core::model::{KernelDevice, KernelEmbedder, KernelRanker, ModelDevice};
use qmd_tests::anchor::{QWEN3_PROMPTS, anchored_to_f32, read, texts};
use qmd_tests::gguf::fixtures;
use qmd_tests::models::cosine;

/// What one level gives: per embedder its vectors, per decoder its first
/// steps' probabilities, and the reranker's scores.
#[derive(Default)]
struct Answers {
    vectors: Vec<Vec<Vec<f32>>>,
    first_steps: Vec<Vec<Vec<f32>>>,
    scores: Vec<f32>,
}

#[test]
fn every_kernel_level_holds_to_the_exact_answer() {
    let levels: Vec<Level> = Level::ALL.into_iter().filter(|&l| l <= Level::detected()).collect();
    eprintln!("this CPU's widest level: {}; checking {:?}", Level::detected().name(), levels);
    let answers: Vec<Answers> = levels
        .iter()
        .map(|&level| {
            level.cap();
            assert_eq!(Level::current(), level);
            let answers = answers_at(level);
            Level::uncap();
            answers
        })
        .collect();
    // Each level against the widest: only the float summation order and
    // the 8-bit roundings it flips differ.
    let (widest, narrower) = answers.split_last().unwrap();
    for (level, ours) in levels.iter().zip(narrower) {
        for (a, b) in ours.vectors.iter().flatten().zip(widest.vectors.iter().flatten()) {
            let c = cosine(a, b);
            assert!(c >= 0.9995, "{}: a vector's cosine to the widest level's is {c}", level.name());
        }
        for (a, b) in ours.first_steps.iter().flatten().zip(widest.first_steps.iter().flatten()) {
            let gap = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
            assert!(gap <= 3e-2, "{}: first-step probabilities {gap} from the widest level's", level.name());
        }
        let gap = ours.scores.iter().zip(&widest.scores).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(gap <= 2e-2, "{}: rank scores {gap} from the widest level's", level.name());
    }
}

fn answers_at(level: Level) -> Answers {
    let f = fixtures();
    let name = level.name();
    let mut answers = Answers::default();
    // Embedders: Q8_0 (MiniLM) and the K-quants (Gemma, Q4_K_M).
    let texts: Vec<String> = texts().into_iter().step_by(6).collect();
    f.quantized("gemma", "q4_k_m");
    for (quantized, original) in [("minilm-q8_0.gguf", "minilm-f32.gguf"), ("gemma-q4_k_m.gguf", "gemma-f32.gguf")] {
        let path = f.file(quantized);
        let encoder = KernelEmbedder::load_on(quantized, Arc::new(read(&path)), &ModelDevice::cpu()).unwrap();
        let ours: Vec<Vec<f32>> = encoder.embed_counted(&texts).unwrap().into_iter().map(|e| e.vector).collect();
        let exact = llama_vectors(&f.file(original), &texts);
        let theirs = llama_vectors(&path, &texts);
        let worst = |vectors: &[Vec<f32>]| vectors.iter().zip(&exact).map(|(a, b)| cosine(a, b)).fold(1f64, f64::min);
        let (ours_worst, llama_worst) = (worst(&ours), worst(&theirs));
        eprintln!("{name}: {quantized}: worst cosine to F32 {ours_worst:.6} (llama.cpp's {llama_worst:.6})");
        assert!(
            ours_worst >= llama_worst - 5e-4,
            "{name}: {quantized}'s worst cosine to F32 is {ours_worst}, llama.cpp's {llama_worst}"
        );
        answers.vectors.push(ours);
    }
    // Decoders: the K-quants (Q4_K_M) and Q4_1 (Q8_1 activations).
    let original = f.qwen3_lm();
    for ftype in ["q4_k_m", "q4_1"] {
        let quantized = f.quantized("qwen3", ftype);
        let runs = anchored_to_f32(&quantized, &original, &QWEN3_PROMPTS[..1], &KernelDevice::Cpu);
        for run in &runs {
            eprintln!(
                "{name}: qwen3 {ftype}: first step {:.1e} from F32 (llama.cpp's {:.1e})",
                run.first_ours, run.first_llama
            );
            assert!(
                run.first_ours <= run.first_llama + 3e-2,
                "{name}: qwen3 {ftype}'s first step is {} from F32's, llama.cpp's {}",
                run.first_ours,
                run.first_llama
            );
        }
        answers.first_steps.push(runs.into_iter().map(|r| r.probabilities).collect());
    }
    // The reranker as Q8_0.
    answers.scores = rank_anchored(level);
    answers
}

/// llama.cpp's embeddings of `texts` by the model at `path`.
fn llama_vectors(path: &Path, texts: &[String]) -> Vec<Vec<f32>> {
    let reference = fixtures().llama("embed", path, &serde_json::json!(texts));
    serde_json::from_value(reference["embeddings"].clone()).unwrap()
}

/// The Q8_0 reranker's scores for one query over a few documents, their
/// mean distance from the F32 reranker's (llama.cpp's) held to twice
/// llama.cpp's own Q8_0's plus 2e-3.
fn rank_anchored(level: Level) -> Vec<f32> {
    let f = fixtures();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qmd-eval/docs");
    let mut paths: Vec<_> = std::fs::read_dir(docs).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let documents: Vec<String> =
        paths.iter().take(8).map(|p| std::fs::read_to_string(p).unwrap().chars().take(1500).collect()).collect();
    let query = "how do raft leaders get elected";
    let input = serde_json::json!({"query": query, "documents": documents});
    let scores = |file: &str| -> Vec<f32> {
        serde_json::from_value(f.llama("rank", &f.file(file), &input)["scores"].clone()).unwrap()
    };
    let (exact, theirs) = (scores("qwen3-reranker-f32.gguf"), scores("qwen3-reranker-q8_0.gguf"));
    let path = f.file("qwen3-reranker-q8_0.gguf");
    let ranker = KernelRanker::load_on("q8_0", Arc::new(read(&path)), &ModelDevice::cpu()).unwrap();
    let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
    let ours = ranker.score(query, &refs).unwrap();
    let mean = |a: &[f32]| a.iter().zip(&exact).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
    let (ours_shift, llama_shift) = (mean(&ours), mean(&theirs));
    eprintln!("{}: reranker Q8_0: mean {ours_shift:.1e} from F32 (llama.cpp's {llama_shift:.1e})", level.name());
    assert!(
        ours_shift <= 2.0 * llama_shift + 2e-3,
        "{}: the Q8_0 reranker's scores are {ours_shift} from F32's on average, llama.cpp's {llama_shift}",
        level.name()
    );
    ours
}
