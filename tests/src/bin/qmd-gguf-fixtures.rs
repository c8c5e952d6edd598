//! `qmd-gguf-fixtures`: prints the folder of the GGUF test files (random
//! Gemma3-embedding- and Qwen3-reranker-shaped models, MiniLM converted),
//! making them first if needed, for the browser tests; `scripts/llama-ref.sh`
//! gives the llama.cpp they are checked against.

fn main() {
    println!("{}", qmd_tests::gguf::fixtures().dir.display());
}
