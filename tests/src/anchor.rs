//! Comparisons held to the exact answer: a quantized model's outputs
//! against its F32 original's (llama.cpp's recorded answers), as far as
//! llama.cpp's own quantized run is from them. Shared by the GGUF tests and
//! the kernel-level test.

use std::path::Path;
use std::sync::Arc;

use qmd_core::arch::{Decoder, ModelBytes};
use qmd_core::generate::Session;
use qmd_core::gguf::GgufFile;
use qmd_core::model::KernelDevice;

use crate::gguf::fixtures;

/// A file's bytes (the test fails naming the file).
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Texts for the embedding comparisons: paragraphs of the eval docs, and
/// short, long, spaced and multi-script text.
pub fn texts() -> Vec<String> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qmd-eval/docs");
    let mut paths: Vec<_> = std::fs::read_dir(docs).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut texts: Vec<String> = paths
        .iter()
        .flat_map(|p| std::fs::read_to_string(p).unwrap().split("\n\n").map(str::to_string).collect::<Vec<_>>())
        .filter(|p| p.trim().len() > 20)
        .map(|p| p.chars().take(1200).collect())
        .take(60)
        .collect();
    texts.extend(
        [
            "a",
            "Hello world, this is a TEST of café naïve 日本語",
            "x".repeat(300).as_str(),
            // user-defined pieces, runs of spaces and tabs, byte fallback
            "  two leading spaces, <mark>marked</mark>\t\tand [[a link]] ",
            "emoji 🦙 and 検索エンジンの文章, \n\nnew lines\n",
            "task: search result | query: how do I rotate keys?",
        ]
        .map(String::from),
    );
    texts
}

/// qmd's expansion prompt in Qwen3's chat form, as the expansion model sees it.
pub const QWEN3_PROMPTS: [&str; 2] = [
    "<|im_start|>user\n/no_think Expand this search query: rotate api keys<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\n/no_think Expand this search query: CAP theorem tradeoffs<|im_end|>\n<|im_start|>assistant\n",
];

/// A quantized model held to the exact answer: its F32 original's greedy
/// run (llama.cpp's; ours gives the same 32 tokens), fed token by token
/// (teacher-forced), with our quantized model's logits at each step, and
/// the first step's probabilities of ours and of llama.cpp's quantized
/// run, each against the F32 run's (a token missing from llama.cpp's
/// quantized top 20 counts as probability 0 there). Both quantized runtimes round every
/// product's activations to 8 bits in their own order, and llama.cpp's
/// order differs by instruction set (AVX2, AVX-512): comparing the two
/// quantized runs token by token made the test pass or fail by the CPU
/// (issue 43). Against the F32 answer, ours is the same on every machine.
pub struct AnchoredRun {
    /// The first step's largest probability difference from the F32 run
    /// (over its 20 most probable tokens): ours, and llama.cpp's quantized.
    pub first_ours: f32,
    pub first_llama: f32,
    /// Our first step's probabilities, every token.
    pub probabilities: Vec<f32>,
}

pub fn anchored_to_f32(quantized: &Path, original: &Path, prompts: &[&str], device: &KernelDevice) -> Vec<AnchoredRun> {
    let f = fixtures();
    let bytes: ModelBytes = Arc::new(read(quantized));
    let file = GgufFile::parse("decoder", (*bytes).as_ref()).unwrap();
    let model = Decoder::load(&file, bytes.clone()).unwrap();
    let probability_gap = |first: &serde_json::Value, of: &dyn Fn(u32) -> f32| -> f32 {
        let first: Vec<(u32, f32)> = serde_json::from_value(first.clone()).unwrap();
        first.iter().fold(0f32, |m, &(id, p)| m.max((of(id) - p).abs()))
    };
    let mut out = Vec::new();
    for prompt in prompts {
        let exact = f.llama("greedy", original, &serde_json::json!({"prompt": prompt, "tokens": 32}));
        let theirs = f.llama("greedy", quantized, &serde_json::json!({"prompt": prompt, "tokens": 32}));
        let tokens: Vec<u32> = serde_json::from_value(exact["prompt"].clone()).unwrap();
        let path: Vec<u32> = serde_json::from_value(exact["generated"].clone()).unwrap();
        let mut session = Session::on(&model, device);
        let mut logits = session.feed(&tokens).unwrap();
        let ours_first = softmax(&logits);
        let first_ours = probability_gap(&exact["first"], &|id| ours_first[id as usize]);
        let theirs_first: Vec<(u32, f32)> = serde_json::from_value(theirs["first"].clone()).unwrap();
        let llama_q = |id: u32| theirs_first.iter().find(|(t, _)| *t == id).map_or(0.0, |(_, p)| *p);
        let first_llama = probability_gap(&exact["first"], &llama_q);
        let mut gaps = Vec::with_capacity(path.len());
        for (step, &token) in path.iter().enumerate() {
            let top = logits.iter().fold(f32::NEG_INFINITY, |m, &l| m.max(l));
            gaps.push(top - logits[token as usize]);
            if step + 1 < path.len() {
                logits = session.feed(&[token]).unwrap();
            }
        }
        let worst = gaps.iter().fold(0f32, |m, &g| m.max(g));
        let parted = gaps.iter().filter(|&&g| g > 0.0).count();
        eprintln!(
            "{} along its F32 original's greedy run: ours parts at {parted} of 32 steps, by {worst:.3} at most; \
             first step {first_ours:.1e} from F32 (llama.cpp's quantized run: {first_llama:.1e})",
            quantized.display()
        );
        out.push(AnchoredRun { first_ours, first_llama, probabilities: ours_first });
    }
    out
}

/// Probabilities of `logits`.
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let exps: Vec<f32> = logits.iter().map(|v| (v - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}
