//! GGUF embedding throughput next to llama.cpp (node-llama-cpp 3.20.0,
//! qmd 2.8.3's runtime) on the same files, texts and cores, in one run;
//! the safetensors path (burn) as the project's baseline.
//! `scripts/bench-gguf.sh` (unpacks the tldr corpus, then
//! `cargo bench -p qmd-tests --bench gguf`).
//!
//! Texts: 400 English tldr pages, each cut after its 254th word piece (256
//! tokens with [CLS] and [SEP]), the set the GGUF issue measured. The
//! EmbeddingGemma-shaped model (random weights, 768 wide, 24 layers, Q8_0)
//! embeds the first 100 of them, each cut to 256 of its own tokens.
//!
//! Reranking: a Qwen3-Reranker-0.6B-shaped model (random weights, 1,024
//! wide, 28 layers, Q8_0) scores one query against documents of qmd's
//! rerank sizes: 8 chunks of about 900 tokens (qmd's largest, 3,600
//! characters at qmd's 4 characters a token; the fixture's small
//! vocabulary needs fewer characters for that: tldr pages joined and cut
//! by its own tokens) and 16 tldr pages as they are; llama.cpp ranks the
//! same with qmd's ranking contexts (4,096 tokens, `rankAll`).
//!
//! Generation: SmolLM2-135M-Instruct Q4_1 (the real model) and a
//! Qwen3-1.7B-shaped Q4_K_M (qmd's expansion model's shape, random
//! weights), a short chat prompt and a tldr page as a long one, 64 greedy
//! tokens each: prompt tokens/s (time to the first token) and decoding
//! tokens/s (the rest), next to llama.cpp's on 2 threads, each after a
//! warm-up run, and each side's peak memory.
//! `BENCH_OURS_ONLY=1` skips llama.cpp (to profile this project's side).
//! `BENCH_PYTORCH=1` adds PyTorch fp32 (sentence-transformers, every core;
//! `tests/models/torch_bench.py` in the venv `scripts/python-env.sh torch` makes,
//! about 7 GB) on the MiniLM texts, with its worst cosine against ours.

use std::sync::Arc;
use std::time::Instant;

use qmd_core::model::{KernelEmbedder, KernelRanker};
use qmd_tests::bench::{markdown_files, tldr_corpus_dir, tldr_embedding_texts};
use qmd_tests::gguf::fixtures;
use qmd_tests::models::{NativeEmbedder, cosine, script_path_with, test_model_dir};

const TEXTS: usize = 400;
const WORD_PIECES: usize = 254;
const GEMMA_TEXTS: usize = 100;
const GEMMA_TOKENS: usize = 256;

/// The longest prefix of each text (at a char boundary) that the encoder
/// turns into at most `GEMMA_TOKENS` tokens, BOS and EOS included.
fn cut_to_tokens(encoder: &KernelEmbedder, texts: &[String]) -> Vec<String> {
    let tokens = |t: &str| encoder.tokenizer().encode_counted(&[t]).unwrap()[0].1 + 2;
    texts
        .iter()
        .map(|text| {
            let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            let fits = bounds.partition_point(|&end| tokens(&text[..end]) <= GEMMA_TOKENS);
            text[..bounds[fits.saturating_sub(1)]].to_string()
        })
        .collect()
}

/// Texts per second of `embed` over all texts, after a warm-up.
fn throughput(embed: impl Fn(&[String])) -> f64 {
    throughput_on(TEXT_SET.get().unwrap(), embed)
}

fn throughput_on(texts: &[String], embed: impl Fn(&[String])) -> f64 {
    embed(&texts[..16]);
    let start = Instant::now();
    embed(texts);
    texts.len() as f64 / start.elapsed().as_secs_f64()
}

static TEXT_SET: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

fn main() {
    // `cargo bench --bench gguf -- rerank` runs one section (embed, rerank,
    // generate).
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |section: &str| filters.is_empty() || filters.iter().any(|f| f == section);
    if wanted("embed") {
        embed();
    }
    if wanted("rerank") {
        rerank();
    }
    if wanted("generate") {
        generate();
    }
}

/// Generation next to llama.cpp, each model in a process of its own
/// (`qmd-gguf-bench generate`, so its peak memory is its own): prompt and
/// decoding tokens/s for each prompt, then peak memory against the file
/// and the KV cache.
fn generate() {
    let f = fixtures();
    let page = markdown_files(&tldr_corpus_dir())
        .into_iter()
        .find(|(p, _)| p.ends_with("pages/common/tar.md"))
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .expect("tldr's tar page");
    let chat = |text: &str| format!("<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n");
    let prompts = [chat("List three uses of a search index."), chat(&format!("Summarise this page:\n\n{page}"))];
    let models = [
        ("SmolLM2-135M-Instruct Q4_1", f.smollm2()),
        ("Qwen3-1.7B-shaped Q4_K_M (qmd's expansion model's shape, random weights)", f.qwen3_lm_full_q4_k_m()),
    ];
    let mib = |bytes: f64| bytes / (1024.0 * 1024.0);
    for (name, path) in models {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("prompts.json");
        std::fs::write(&input, serde_json::to_vec(&prompts).unwrap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_qmd-gguf-bench"))
            .args(["generate".as_ref(), path.as_os_str(), input.as_os_str()])
            .output()
            .expect("run qmd-gguf-bench");
        assert!(out.status.success(), "qmd-gguf-bench: {}", String::from_utf8_lossy(&out.stderr));
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).expect("qmd-gguf-bench prints JSON");
        let generated = ours["runs"][0]["generated"].as_u64().unwrap();
        println!("\n{name}, {generated} greedy tokens a prompt, 2 threads each\n");
        println!("| prompt | runtime | prompt tokens/s | decoding tokens/s | this project = (prompt, decoding) |");
        println!("|---|---|---:|---:|---:|");
        let mut their_peak: (f64, f64) = (0.0, 0.0);
        for (prompt, run) in prompts.iter().zip(ours["runs"].as_array().unwrap()) {
            let rate = |v: &serde_json::Value, key: &str| v[key].as_f64().unwrap();
            let label = format!("{} tokens", run["prompt_tokens"]);
            let (prompt_rate, decode_rate) = (rate(run, "prompt_per_s"), rate(run, "decode_per_s"));
            println!("| {label} | this project | {prompt_rate:.0} | {decode_rate:.1} | |");
            if std::env::var_os("BENCH_OURS_ONLY").is_none() {
                let theirs = f.llama(
                    "bench-generate",
                    &path,
                    &serde_json::json!({"prompt": prompt, "tokens": generated, "threads": 2}),
                );
                let (p, d) = (rate(&theirs, "prompt_per_s"), rate(&theirs, "decode_per_s"));
                println!(
                    "| {label} | llama.cpp, 2 threads | {p:.0} | {d:.1} | {:.2}×, {:.2}× |",
                    prompt_rate / p,
                    decode_rate / d
                );
                let (start, peak) = (rate(&theirs, "start_rss_bytes"), rate(&theirs, "peak_rss_bytes"));
                if peak - start > their_peak.1 - their_peak.0 {
                    their_peak = (start, peak);
                }
            }
        }
        let file = std::fs::metadata(&path).unwrap().len() as f64;
        let kv = ours["kv_cache_bytes"].as_f64().unwrap();
        let (start, peak) = (ours["start_rss_bytes"].as_f64().unwrap(), ours["peak_rss_bytes"].as_f64().unwrap());
        println!(
            "\nPeak resident memory over the runtime's own, file {:.0} MiB, this project's KV cache {:.0} MiB (f16):\n",
            mib(file),
            mib(kv)
        );
        println!("| runtime | model and passes (MiB) | = (file + KV cache) × |");
        println!("|---|---:|---:|");
        println!("| this project | {:.0} | {:.2}× |", mib(peak - start), (peak - start) / (file + kv));
        if their_peak.1 > 0.0 {
            let theirs = their_peak.1 - their_peak.0;
            println!("| llama.cpp (node-llama-cpp) | {:.0} | {:.2}× |", mib(theirs), theirs / (file + kv));
        }
    }
}

fn embed() {
    let safetensors = NativeEmbedder::load(&test_model_dir());
    TEXT_SET.set(tldr_embedding_texts(safetensors.encoder.tokenizer(), TEXTS, WORD_PIECES)).unwrap();
    let texts = TEXT_SET.get().unwrap();
    let f = fixtures();
    let mut rows: Vec<(String, f64)> = Vec::new();
    let ours = |file: &str| {
        let encoder = KernelEmbedder::load(file, Arc::new(std::fs::read(f.file(file)).unwrap())).unwrap();
        throughput(|t| {
            encoder.embed_counted(t).unwrap();
        })
    };
    rows.push((
        "this project, safetensors f32 (burn CPU)".into(),
        throughput(|t| {
            safetensors.encoder.embed_counted(t).unwrap();
        }),
    ));
    rows.push(("this project, GGUF F32".into(), ours("minilm-f32.gguf")));
    rows.push(("this project, GGUF Q8_0".into(), ours("minilm-q8_0.gguf")));
    if std::env::var_os("BENCH_PYTORCH").is_some() {
        let (rate, vectors, version) = pytorch(texts);
        let q8 = KernelEmbedder::load("q8", Arc::new(std::fs::read(f.file("minilm-q8_0.gguf")).unwrap())).unwrap();
        let worst = |ours: Vec<Vec<f32>>| ours.iter().zip(&vectors).map(|(a, b)| cosine(a, b)).fold(1.0, f64::min);
        let f32_worst =
            worst(safetensors.encoder.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>()).unwrap());
        let q8_worst = worst(q8.embed_counted(texts).unwrap().into_iter().map(|e| e.vector).collect());
        println!(
            "PyTorch {version} vs this project: worst cosine {f32_worst:.5} (safetensors), {q8_worst:.5} (GGUF Q8_0)"
        );
        rows.push((format!("PyTorch {version} fp32 (sentence-transformers, batches of 32)"), rate));
    }
    for file in ["minilm-f32.gguf", "minilm-q8_0.gguf"] {
        let answer = f.llama("bench-embed", &f.file(file), &serde_json::json!(texts));
        for (layout, result) in answer["layouts"].as_object().unwrap() {
            let rate = result["texts_per_s"].as_f64().unwrap();
            rows.push((format!("llama.cpp, {file}, {layout} (contexts × threads)"), rate));
        }
    }
    let tokens: usize = texts.iter().map(|t| safetensors.encoder.tokenizer().encode_counted(&[t]).unwrap()[0].1).sum();
    println!("{} tldr pages, {tokens} word pieces, {} threads\n", texts.len(), rayon::current_num_threads());
    println!("| runtime | texts/s | vs safetensors |");
    println!("|---|---:|---:|");
    let baseline = rows[0].1;
    for (name, rate) in &rows {
        println!("| {name} | {rate:.1} | {:.2}× |", rate / baseline);
    }

    // EmbeddingGemma-shaped, Q8_0: ours against llama.cpp's best layout.
    let path = f.gemma_full();
    let gemma = KernelEmbedder::load("gemma-full-q8_0.gguf", Arc::new(std::fs::read(&path).unwrap())).unwrap();
    let gemma_texts = cut_to_tokens(&gemma, &texts[..GEMMA_TEXTS]);
    let mut rows = vec![(
        "this project".to_string(),
        throughput_on(&gemma_texts, |t| {
            gemma.embed_counted(t).unwrap();
        }),
    )];
    let answer = f.llama("bench-embed", &path, &serde_json::json!(gemma_texts));
    for (layout, result) in answer["layouts"].as_object().unwrap() {
        rows.push((format!("llama.cpp, {layout} (contexts × threads)"), result["texts_per_s"].as_f64().unwrap()));
    }
    let best_llama = rows[1..].iter().map(|r| r.1).fold(0.0, f64::max);
    println!("\nEmbeddingGemma-300M-shaped Q8_0 (random weights), {GEMMA_TEXTS} pages cut to {GEMMA_TOKENS} tokens\n");
    println!("| runtime | texts/s | this project = |");
    println!("|---|---:|---:|");
    for (name, rate) in &rows {
        println!("| {name} | {rate:.2} | {:.2}× |", rows[0].1 / rate.max(f64::MIN_POSITIVE));
    }
    println!("\nthis project / llama.cpp's best layout: {:.2}×", rows[0].1 / best_llama);
    memory_table("embed", &path, &gemma_texts, &answer);
}

/// PyTorch fp32 on `texts` through sentence-transformers: texts/s, its
/// unit vectors and torch's version.
fn pytorch(texts: &[String]) -> (f64, Vec<Vec<f32>>, String) {
    use std::io::Write;
    let python = script_path_with("python-env.sh", &["torch"]).join("bin/python");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/torch_bench.py");
    let mut child = std::process::Command::new(python)
        .arg(script)
        .arg(test_model_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run torch_bench.py");
    child.stdin.take().unwrap().write_all(serde_json::to_string(texts).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().expect("torch_bench.py");
    assert!(out.status.success(), "torch_bench.py failed");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("torch_bench.py prints JSON");
    let vectors = serde_json::from_value(answer["embeddings"].clone()).unwrap();
    (answer["texts_per_s"].as_f64().unwrap(), vectors, answer["torch"].as_str().unwrap_or("?").to_string())
}

const RANK_QUERY: &str = "how do I list the files in a directory sorted by size";
/// qmd's largest rerank chunk: 3,600 characters at its 4 characters a token.
const CHUNK_TOKENS: usize = 900;

fn rerank() {
    let mut pages: Vec<(String, Vec<u8>)> =
        markdown_files(&tldr_corpus_dir()).into_iter().filter(|(path, _)| path.contains("pages/common/")).collect();
    pages.sort();
    let pages: Vec<String> =
        pages.into_iter().take(64).map(|(_, b)| String::from_utf8_lossy(&b).into_owned()).collect();
    let f = fixtures();
    let path = f.qwen3_reranker_full();
    let ranker = KernelRanker::load("qwen3-reranker-full-q8_0.gguf", Arc::new(std::fs::read(&path).unwrap())).unwrap();
    let joined = pages.join("\n\n");
    let chars: Vec<char> = joined.chars().collect();
    // Characters per token of this vocabulary, from a 3,600-character
    // sample, then chunks of that many characters for 900 tokens.
    let sample: String = chars[..3600].iter().collect();
    let template = ranker.inputs(RANK_QUERY, &[""]).unwrap()[0].len();
    let sample_tokens = ranker.inputs(RANK_QUERY, &[&sample]).unwrap()[0].len() - template;
    let chunk_chars = 3600 * CHUNK_TOKENS / sample_tokens;
    let chunks: Vec<String> = chars.chunks(chunk_chars).take(8).map(|c| c.iter().collect()).collect();
    let singles: Vec<String> = pages[..16].to_vec();
    let tokens = |docs: &[String]| {
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        ranker.inputs(RANK_QUERY, &refs).unwrap().iter().map(Vec::len).sum::<usize>() / docs.len()
    };
    let labels = [
        format!("8 chunks of about {CHUNK_TOKENS} tokens ({} with the template)", tokens(&chunks)),
        format!("16 tldr pages ({} tokens each with the template, on average)", tokens(&singles)),
    ];
    for (i, (label, documents)) in labels.iter().zip([chunks, singles]).enumerate() {
        let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
        ranker.score(RANK_QUERY, &refs[..1]).unwrap();
        let start = Instant::now();
        ranker.score(RANK_QUERY, &refs).unwrap();
        let ours = documents.len() as f64 / start.elapsed().as_secs_f64();
        let mut rows = vec![("this project".to_string(), ours)];
        if std::env::var_os("BENCH_OURS_ONLY").is_some() {
            println!("{label}: this project {ours:.3} documents/s (llama.cpp skipped: BENCH_OURS_ONLY)");
            continue;
        }
        let answer = f.llama("bench-rank", &path, &serde_json::json!({"query": RANK_QUERY, "documents": documents}));
        for (layout, result) in answer["layouts"].as_object().unwrap() {
            rows.push((
                format!("llama.cpp, {layout} (contexts × threads)"),
                result["documents_per_s"].as_f64().unwrap(),
            ));
        }
        let best_llama = rows[1..].iter().map(|r| r.1).fold(0.0, f64::max);
        println!("\nQwen3-Reranker-0.6B-shaped Q8_0 (random weights), one query, {label}\n");
        println!("| runtime | documents/s | this project = |");
        println!("|---|---:|---:|");
        for (name, rate) in &rows {
            println!("| {name} | {rate:.3} | {:.2}× |", rows[0].1 / rate.max(f64::MIN_POSITIVE));
        }
        println!("\nthis project / llama.cpp's best layout: {:.2}×", rows[0].1 / best_llama);
        if i == 0 {
            memory_table("rank", &path, &documents, &answer);
        }
    }
}

/// Peak resident memory of each side on the same file and texts, less
/// what its process held before the model (the runtime itself): ours
/// in a process of its own (`qmd-gguf-bench`, CPU kernels), once with the
/// texts and once with one short text (the weights with next to no
/// activations); llama.cpp's over both its layouts (`llama_ref.mjs`).
fn memory_table(task: &str, model: &std::path::Path, texts: &[String], llama: &serde_json::Value) {
    let file = std::fs::metadata(model).unwrap().len() as f64;
    let mib = |bytes: f64| bytes / (1024.0 * 1024.0);
    let ours = |texts: &[String]| -> (f64, f64) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("texts.json");
        std::fs::write(&input, serde_json::to_vec(texts).unwrap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_qmd-gguf-bench"))
            .args([task.as_ref(), model.as_os_str(), input.as_os_str()])
            .env("BENCH_DEVICES", "cpu")
            .output()
            .expect("run qmd-gguf-bench");
        assert!(out.status.success(), "qmd-gguf-bench: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("qmd-gguf-bench prints JSON");
        (report["start_rss_bytes"].as_f64().unwrap_or(0.0), report["peak_rss_bytes"].as_f64().unwrap_or(0.0))
    };
    let short = ours(&["list files".to_string()]);
    let full = ours(texts);
    let theirs = (llama["start_rss_bytes"].as_f64().unwrap_or(0.0), llama["peak_rss_bytes"].as_f64().unwrap_or(0.0));
    println!("\nPeak resident memory, the same {:.0} MiB file ({task}):\n", mib(file));
    println!("| runtime | peak RSS (MiB) | before the model (MiB) | model and passes (MiB) | = file × |");
    println!("|---|---:|---:|---:|---:|");
    let rows = [
        ("this project, one short text (the weights)", short),
        ("this project, these texts", full),
        ("llama.cpp (node-llama-cpp), these texts, both layouts", theirs),
    ];
    for (name, (start, peak)) in rows {
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.2}× |",
            mib(peak),
            mib(start),
            mib(peak - start),
            (peak - start) / file
        );
    }
    println!("\nthis project's activations and their heap: {:.0} MiB", mib(full.1 - short.1));
}
