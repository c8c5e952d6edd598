//! `qmd-embed MODEL_DIR < texts.json > vectors.json`: unit vectors of a
//! JSON array of texts, computed natively on burn's CPU backend: the
//! reference the browser's WebGPU and CPU embeddings are held to.

use std::io::Read;
use std::path::Path;

use qmd_tests::models::NativeEmbedder;

fn main() {
    let dir = std::env::args().nth(1).expect("usage: qmd-embed MODEL_DIR < texts.json");
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("read texts from stdin");
    let texts: Vec<String> = serde_json::from_str(&input).expect("stdin is a JSON array of strings");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = NativeEmbedder::load(Path::new(&dir)).encoder.embed(&refs).expect("embed");
    println!("{}", serde_json::to_string(&vectors).expect("JSON"));
}
