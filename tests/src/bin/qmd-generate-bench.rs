//! `qmd-generate-bench MODEL.gguf [PROMPT_TOKENS] [DECODE_TOKENS]`: a GGUF
//! language model's prompt processing and decoding speed on the CPU
//! kernels (every core), as llama.cpp's `llama-bench` measures them: a
//! prompt of `PROMPT_TOKENS` (default 128) in one pass, then
//! `DECODE_TOKENS` (default 64) generated one at a time over the KV cache
//! (greedy). Then, where the file is a chat model, one query expansion
//! as `qmd query` runs it. Prints one JSON object, with the process's
//! resident memory before the model was read and its peak (Linux).

use std::sync::Arc;
use std::time::Instant;

use qmd_core::arch::{Decoder, ModelBytes};
use qmd_core::generate::{QueryExpander, Session};
use qmd_core::gguf::GgufFile;
use serde_json::json;

fn memory(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 =
        line.trim_start_matches(field).trim_start_matches(':').trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

fn main() {
    let start_rss = memory("VmRSS");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("usage: qmd-generate-bench MODEL.gguf [PROMPT_TOKENS] [DECODE_TOKENS]");
    let count = |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse().expect("a token count"));
    let (prompt_tokens, decode_tokens) = (count(1, 128), count(2, 64));
    let bytes: ModelBytes = Arc::new(std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")));
    let file = GgufFile::parse(path, (*bytes).as_ref()).unwrap_or_else(|e| panic!("{}", e.message));
    let model = Decoder::load(&file, bytes.clone()).unwrap_or_else(|e| panic!("{}", e.message));
    // Tokens spread over the vocabulary, as llama-bench's random prompt.
    let vocab = model.shape.vocab as u64;
    let prompt: Vec<u32> = (0..prompt_tokens as u64).map(|i| ((i * 7919 + 13) % vocab) as u32).collect();
    // Warm-up: the first pass touches every weight page.
    Session::new(&model).feed(&prompt[..prompt.len().min(8)]).expect("warm-up");
    let started = Instant::now();
    let mut session = Session::new(&model);
    let mut logits = session.feed(&prompt).expect("prompt");
    let prompt_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for _ in 0..decode_tokens {
        let next = qmd_core::generate::session::most_probable(&logits);
        logits = session.feed(&[next]).expect("decode");
    }
    let decode_seconds = started.elapsed().as_secs_f64();
    let mut report = json!({
        "model": path,
        "file_bytes": bytes.as_ref().as_ref().len(),
        "cpu_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "prompt_tokens": prompt_tokens,
        "prompt_per_s": prompt_tokens as f64 / prompt_seconds,
        "decode_tokens": decode_tokens,
        "decode_per_s": decode_tokens as f64 / decode_seconds,
    });
    drop(session);
    if let Ok(expander) = QueryExpander::load(path, bytes.clone()) {
        let started = Instant::now();
        let output = expander.expand("how do teams handle remote work").expect("expand");
        report["expansion_seconds"] = json!(started.elapsed().as_secs_f64());
        report["expansion"] = json!(output);
    }
    report["start_rss_bytes"] = json!(start_rss);
    report["peak_rss_bytes"] = json!(memory("VmHWM"));
    println!("{report}");
}
