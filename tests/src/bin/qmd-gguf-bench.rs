//! `qmd-gguf-bench embed|rank MODEL.gguf TEXTS.json`: a GGUF model's
//! throughput on the CPU kernels (every core) and on the GPU kernels
//! (wgpu), in one process over the same texts, and how far the GPU's
//! results are from the CPU's. Prints one JSON object. What
//! `scripts/bench-gpu-gguf.sh` runs on the GPU machine.

use std::sync::Arc;
use std::time::Instant;

use qmd_core::arch::ModelBytes;
use qmd_core::model::{DeviceChoice, GgufEncoder, GgufRanker, ModelDevice};
use serde_json::json;

/// The query every document is ranked against.
const QUERY: &str = "how do I list the files in a directory, sorted by size?";

enum Model {
    Embed(GgufEncoder),
    Rank(GgufRanker),
}

impl Model {
    fn load(task: &str, name: &str, bytes: ModelBytes, device: &ModelDevice) -> Model {
        let failed = |e: qmd_core::Error| -> ! { panic!("{name}: {}", e.message) };
        match task {
            "embed" => Model::Embed(GgufEncoder::load_on(name, bytes, device).unwrap_or_else(|e| failed(e))),
            "rank" => Model::Rank(GgufRanker::load_on(name, bytes, device).unwrap_or_else(|e| failed(e))),
            other => panic!("unknown task {other:?}: embed or rank"),
        }
    }

    /// Each text's vector (embed) or its score as a one-value vector (rank).
    fn run(&self, texts: &[String]) -> Vec<Vec<f32>> {
        match self {
            Model::Embed(e) => e.embed_counted(texts).expect("embed").into_iter().map(|e| e.vector).collect(),
            Model::Rank(r) => {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                r.score(QUERY, &refs).expect("rank").into_iter().map(|s| vec![s]).collect()
            }
        }
    }
}

/// Texts per second over `texts` after a warm-up pass (shader
/// compilation, weights copied to the GPU), and the outputs.
fn measure(model: &Model, texts: &[String]) -> (f64, Vec<Vec<f32>>) {
    model.run(&texts[..texts.len().min(8)]);
    let start = Instant::now();
    let out = model.run(texts);
    (texts.len() as f64 / start.elapsed().as_secs_f64(), out)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [task, path, texts] = &args[..] else {
        panic!("usage: qmd-gguf-bench embed|rank MODEL.gguf TEXTS.json");
    };
    let texts: Vec<String> =
        serde_json::from_slice(&std::fs::read(texts).expect("read the texts")).expect("a JSON array of strings");
    let bytes: ModelBytes = Arc::new(std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")));
    let gpu = ModelDevice::select(DeviceChoice::Gpu).unwrap_or_else(|e| panic!("{}", e.message));
    let cpu = ModelDevice::cpu();
    let (cpu_rate, cpu_out) = measure(&Model::load(task, path, bytes.clone(), &cpu), &texts);
    let (gpu_rate, gpu_out) = measure(&Model::load(task, path, bytes, &gpu), &texts);
    let agreement = match task.as_str() {
        "embed" => {
            json!({ "worst_cosine": cpu_out.iter().zip(&gpu_out).map(|(a, b)| qmd_tests::models::cosine(a, b)).fold(1.0, f64::min) })
        }
        _ => {
            json!({ "worst_difference": cpu_out.iter().zip(&gpu_out).map(|(a, b)| (a[0] - b[0]).abs()).fold(0f32, f32::max) })
        }
    };
    let report = json!({
        "task": task,
        "model": path,
        "texts": texts.len(),
        "gpu": gpu.description,
        "cpu_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu_per_s": cpu_rate,
        "gpu_per_s": gpu_rate,
        "gpu_vs_cpu": agreement,
    });
    println!("{report}");
}
