//! `qmd-embed MODEL_DIR [cpu|gpu] < texts.json > vectors.json`: unit
//! vectors of a JSON array of texts, computed natively with burn: on its
//! CPU backend (the default; the reference the browser's WebGPU and CPU
//! embeddings are held to) or on a GPU through wgpu (what the GPU bench
//! compares with the CPU path). `qmd-embed MODEL.gguf < texts.json`: the
//! same through the GGUF path (quantized kernels, CPU), e.g. to profile it.

use std::io::Read;
use std::path::Path;

use std::sync::Arc;

use qmd_core::model::{DeviceChoice, GgufEncoder, ModelDevice, SentenceEncoder};
use qmd_tests::models::model_files;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: qmd-embed MODEL_DIR|MODEL.gguf [cpu|gpu] < texts.json");
    if dir.ends_with(".gguf") {
        let texts: Vec<String> = serde_json::from_reader(std::io::stdin()).expect("stdin is a JSON array of strings");
        let bytes = std::fs::read(&dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let encoder = GgufEncoder::load(&dir, Arc::new(bytes)).unwrap_or_else(|e| panic!("{}", e.message));
        let vectors: Vec<Vec<f32>> =
            encoder.embed_counted(&texts).expect("embed").into_iter().map(|e| e.vector).collect();
        println!("{}", serde_json::to_string(&vectors).expect("JSON"));
        return;
    }
    let choice =
        DeviceChoice::parse(&args.next().unwrap_or_else(|| "cpu".into())).unwrap_or_else(|e| panic!("{}", e.message));
    let device = ModelDevice::select(choice).unwrap_or_else(|e| panic!("{}", e.message));
    eprintln!("qmd-embed: {}", device.description);
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("read texts from stdin");
    let texts: Vec<String> = serde_json::from_str(&input).expect("stdin is a JSON array of strings");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoder = SentenceEncoder::load(model_files(Path::new(&dir)), &device.device).expect("load the model");
    let vectors = encoder.embed(&refs).expect("embed");
    println!("{}", serde_json::to_string(&vectors).expect("JSON"));
}
