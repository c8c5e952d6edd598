//! `qmd-gguf-bench embed|rank MODEL.gguf TEXTS.json`: a GGUF model's
//! throughput on the CPU kernels (every core) and on the GPU kernels
//! (wgpu), in one process over the same texts, and how far the GPU's
//! results are from the CPU's. Prints one JSON object. What
//! `scripts/bench-gpu-gguf.sh` runs on the GPU machine.
//!
//! `qmd-gguf-bench generate MODEL.gguf PROMPTS.json`: a language model's
//! prompt processing and decoding on the CPU kernels, as llama.cpp's
//! `bench-generate` (`tests/models/llama_ref.mjs`) measures them: each
//! prompt (special tokens parsed, BOS where the vocabulary adds one) in
//! one pass, then greedy tokens one at a time over the KV cache, after a
//! warm-up run; prompt tokens/s is the time to the first token. With
//! `BENCH_DEVICES=cpu,gpu` (or `gpu`) the same runs on the GPU kernels too
//! (the KV cache on the GPU), as `gpu_runs`.
//!
//! On Linux the object also holds the process's resident memory before the
//! model was read (`start_rss_bytes`) and its peak (`peak_rss_bytes`).
//!
//! `BENCH_DEVICES=gpu` (or `cpu`) runs one side only. `QMD_KERNELS`
//! caps the CPU kernels' instruction set, as it does for `qmd`. With
//! `QMD_GPU_PROFILE` set, the GPU runs each kernel alone and the object
//! holds the seconds each kernel took (`gpu_profile`).

use std::sync::Arc;
use std::time::Instant;

use qmd_core::arch::{Decoder, ModelBytes};
use qmd_core::generate::Session;
use qmd_core::gguf::{BpeTokenizer, GgufFile};
use qmd_core::model::{DeviceChoice, KernelDevice, KernelEmbedder, KernelRanker, ModelDevice};
use serde_json::json;

/// Tokens generated after each prompt (`generate`).
const GENERATED: usize = 64;

/// The query every document is ranked against.
const QUERY: &str = "how do I list the files in a directory, sorted by size?";

enum Model {
    Embed(KernelEmbedder),
    Rank(KernelRanker),
}

impl Model {
    fn load(task: &str, name: &str, bytes: ModelBytes, device: &ModelDevice) -> Model {
        let failed = |e: qmd_core::Error| -> ! { panic!("{name}: {}", e.message) };
        match task {
            "embed" => Model::Embed(KernelEmbedder::load_on(name, bytes, device).unwrap_or_else(|e| failed(e))),
            "rank" => Model::Rank(KernelRanker::load_on(name, bytes, device).unwrap_or_else(|e| failed(e))),
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

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`), where there
/// is one.
fn memory(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 =
        line.trim_start_matches(field).trim_start_matches(':').trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

fn main() {
    let start_rss = memory("VmRSS");
    if let Ok(name) = std::env::var("QMD_KERNELS") {
        qmd_core::kernels::dispatch::Level::parse(&name).unwrap_or_else(|e| panic!("QMD_KERNELS: {e}")).cap();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [task, path, texts] = &args[..] else {
        panic!("usage: qmd-gguf-bench embed|rank|generate MODEL.gguf TEXTS.json");
    };
    let texts: Vec<String> =
        serde_json::from_slice(&std::fs::read(texts).expect("read the texts")).expect("a JSON array of strings");
    let bytes: ModelBytes = Arc::new(std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")));
    if task == "generate" {
        let mut report = generate(path, bytes, &texts);
        report["start_rss_bytes"] = json!(start_rss);
        report["peak_rss_bytes"] = json!(memory("VmHWM"));
        println!("{report}");
        return;
    }
    let devices = std::env::var("BENCH_DEVICES").unwrap_or_else(|_| "cpu,gpu".into());
    let mut report = json!({
        "task": task,
        "model": path,
        "texts": texts.len(),
        "cpu_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
    });
    let mut outputs = Vec::new();
    if devices.contains("cpu") {
        let (rate, out) = measure(&Model::load(task, path, bytes.clone(), &ModelDevice::cpu()), &texts);
        report["cpu_per_s"] = json!(rate);
        outputs.push(out);
    }
    if devices.contains("gpu") {
        let gpu = ModelDevice::select(DeviceChoice::Gpu).unwrap_or_else(|e| panic!("{}", e.message));
        let (rate, out) = measure(&Model::load(task, path, bytes, &gpu), &texts);
        report["gpu"] = json!(gpu.description);
        report["gpu_per_s"] = json!(rate);
        if let Some(profile) = gpu.gpu.as_ref().and_then(|g| g.profile()) {
            report["gpu_profile"] = profile_json(&profile);
        }
        outputs.push(out);
    }
    if let [cpu_out, gpu_out] = &outputs[..] {
        report["gpu_vs_cpu"] = match task.as_str() {
            "embed" => {
                json!({ "worst_cosine": cpu_out.iter().zip(gpu_out).map(|(a, b)| qmd_tests::models::cosine(a, b)).fold(1.0, f64::min) })
            }
            _ => {
                json!({ "worst_difference": cpu_out.iter().zip(gpu_out).map(|(a, b)| (a[0] - b[0]).abs()).fold(0f32, f32::max) })
            }
        };
    }
    report["start_rss_bytes"] = json!(start_rss);
    report["peak_rss_bytes"] = json!(memory("VmHWM"));
    println!("{report}");
}

/// Each kernel's seconds, dispatches and share of the total, the
/// slowest first.
fn profile_json(profile: &qmd_core::gpu::Profile) -> serde_json::Value {
    let total: f64 = profile.values().map(|(seconds, _)| seconds).sum();
    let mut rows: Vec<_> = profile.iter().collect();
    rows.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    let rows: Vec<_> = rows
        .into_iter()
        .map(|(kernel, (seconds, count))| json!({ "kernel": kernel, "seconds": seconds, "dispatches": count, "share": seconds / total }))
        .collect();
    json!({ "total_seconds": total, "kernels": rows })
}

/// `generate`: each prompt's rates on each device `BENCH_DEVICES` names
/// (the CPU alone by default), and the KV cache the longest one held.
fn generate(path: &str, bytes: ModelBytes, prompts: &[String]) -> serde_json::Value {
    let failed = |e: qmd_core::Error| -> ! { panic!("{path}: {}", e.message) };
    let file = GgufFile::parse(path, (*bytes).as_ref()).unwrap_or_else(|e| failed(e));
    let tokenizer = BpeTokenizer::from_gguf(&file).unwrap_or_else(|e| failed(e));
    let model = Decoder::load(&file, bytes.clone()).unwrap_or_else(|e| failed(e));
    let devices = std::env::var("BENCH_DEVICES").unwrap_or_else(|_| "cpu".into());
    let prompts: Vec<Vec<u32>> = prompts.iter().map(|p| tokenizer.encode_prompt(p)).collect();
    let mut report = json!({ "task": "generate", "model": path });
    if devices.contains("cpu") {
        report["runs"] = json!(decode_runs(&model, &KernelDevice::Cpu, &prompts));
    }
    if devices.contains("gpu") {
        let gpu = ModelDevice::select(DeviceChoice::Gpu).unwrap_or_else(|e| panic!("{}", e.message));
        report["gpu"] = json!(gpu.description);
        report["gpu_runs"] = json!(decode_runs(&model, &KernelDevice::on(&gpu), &prompts));
        if let Some(profile) = gpu.gpu.as_ref().and_then(|g| g.profile()) {
            report["gpu_profile"] = profile_json(&profile);
        }
    }
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0) + GENERATED;
    let s = &model.shape.block;
    // f16 keys and values, as llama.cpp's.
    report["kv_cache_bytes"] = json!(s.layers * 2 * s.kv_heads * s.head_dim * longest * 2);
    report
}

/// Each prompt in one pass on `device`, then greedy tokens one at a time,
/// after a warm-up run: its prompt and decode tokens/s.
fn decode_runs(model: &Decoder, device: &KernelDevice, prompts: &[Vec<u32>]) -> Vec<serde_json::Value> {
    let most_probable = qmd_core::generate::sampler::most_probable;
    let run = |tokens: &[u32]| {
        let mut session = Session::on(model, device);
        let start = Instant::now();
        let mut logits = session.feed(tokens).expect("prompt");
        let first = start.elapsed().as_secs_f64();
        for _ in 1..GENERATED {
            logits = session.feed(&[most_probable(&logits)]).expect("decode");
        }
        (first, start.elapsed().as_secs_f64() - first)
    };
    prompts
        .iter()
        .map(|tokens| {
            run(tokens);
            let (first, rest) = run(tokens);
            json!({
                "prompt_tokens": tokens.len(),
                "prompt_per_s": tokens.len() as f64 / first,
                "generated": GENERATED,
                "decode_per_s": (GENERATED - 1) as f64 / rest,
            })
        })
        .collect()
}
