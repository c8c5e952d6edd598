//! `qmd-gguf-fixtures`: prints the folder of the GGUF test files (random
//! Gemma3-embedding- and Qwen3-reranker-shaped models as F32, Q8_0 and
//! llama.cpp's Q4_K_M, MiniLM converted), making them first if needed, for
//! the browser tests; `scripts/llama-ref.sh` gives the llama.cpp they are
//! checked against.

fn main() {
    let fixtures = qmd_tests::gguf::fixtures();
    for model in ["gemma", "qwen3-reranker"] {
        fixtures.quantized(model, "q4_k_m");
    }
    println!("{}", fixtures.dir.display());
}
