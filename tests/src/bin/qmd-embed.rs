//! `qmd-embed MODEL_DIR|MODEL.gguf [cpu|gpu] [f32] < texts.json > vectors.json`:
//! unit vectors of a JSON array of texts, computed natively as `qmd`
//! computes them: a GGUF file, or a repository quantized at load, on the
//! engine's kernels (the CPU by default: the reference the browser's
//! WebGPU and CPU embeddings are held to; a GPU through wgpu for the GPU
//! bench). `f32` runs a repository on burn in f32 instead, as
//! sentence-transformers computes it.

use std::sync::Arc;

use qmd_core::model::{DeviceChoice, Loadable, ModelDevice, TextEmbedder};
use qmd_tests::models::model_files;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: qmd-embed MODEL_DIR|MODEL.gguf [cpu|gpu] [f32] < texts.json";
    let path = args.first().expect(usage);
    let choice =
        DeviceChoice::parse(args.get(1).map_or("cpu", String::as_str)).unwrap_or_else(|e| panic!("{}", e.message));
    let f32 = args.get(2).is_some_and(|a| a == "f32");
    if let Ok(name) = std::env::var("QMD_KERNELS") {
        qmd_core::kernels::dispatch::Level::parse(&name).unwrap_or_else(|e| panic!("QMD_KERNELS: {e}")).cap();
    }
    let device = ModelDevice::select(choice).unwrap_or_else(|e| panic!("{}", e.message));
    let texts: Vec<String> = serde_json::from_reader(std::io::stdin()).expect("stdin is a JSON array of strings");
    let embedder = if path.ends_with(".gguf") {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        TextEmbedder::load_gguf(path, Arc::new(bytes), &device)
    } else if f32 {
        TextEmbedder::load_f32(model_files(std::path::Path::new(path)), &device)
    } else {
        TextEmbedder::load(model_files(std::path::Path::new(path)), &device)
    }
    .unwrap_or_else(|e| panic!("{}", e.message));
    eprintln!("qmd-embed: {}", device.kernels_description());
    let vectors: Vec<Vec<f32>> = embedder.embed_counted(&texts).expect("embed").into_iter().map(|e| e.vector).collect();
    println!("{}", serde_json::to_string(&vectors).expect("JSON"));
}
