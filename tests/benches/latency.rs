//! Query latency at the tldr corpus's 38k documents: `vsearch` and
//! `query --no-rerank`, in-process (the engine, native) and through the
//! `qmd` CLI (process start, wasm component, model load, index open),
//! each against `search` (BM25 alone) measured in the same run.
//! `cargo bench -p qmd-tests --bench latency` (corpus: `scripts/bench.sh`
//! unpacks it once, or `BENCH_CORPUS`; CLI: `QMD_BIN` or the release build).
//!
//! Queries are embedded by the real all-MiniLM-L6-v2. Document chunks are
//! cut by the real embed job with the real tokenizer's counts, but their
//! vectors are seeded pseudo-random unit vectors: embedding 38k documents
//! takes about an hour on two cores, and the exact scan costs the same
//! whatever the vectors hold. Result lists are therefore not meaningful,
//! their cost is.

use std::cell::Cell;
use std::path::Path;
use std::process::Command;
use std::rc::Rc;
use std::time::Instant;

use qmd_core::inference::{EmbedderInfo, Embedding, Inference};
use qmd_core::{Directory, EmbedOptions, Engine, MemorySource, RamDirectory, Result};
use qmd_core::{QueryRequest, SearchOptions};
use qmd_tests::bench::{markdown_files, qmd_bin, tldr_corpus_dir};
use qmd_tests::models::{NativeEmbedder, test_model_dir};

const QUERIES: [&str; 12] = [
    "extract a tar archive",
    "list running docker containers",
    "change file permissions recursively",
    "show disk usage of a directory",
    "find files modified in the last day",
    "kill a process by name",
    "compress a video with ffmpeg",
    "undo the last git commit",
    "download a file over http",
    "show the network interfaces",
    "convert an image to png",
    "count lines in a file",
];

/// The real model for queries; seeded unit vectors (and real token
/// counts) for documents while `documents` is set.
struct BenchModels {
    real: NativeEmbedder,
    documents: Cell<bool>,
}

fn seeded_unit_vector(text: &str, dimension: usize) -> Vec<f32> {
    let hash = qmd_core::document::content_hash(text.as_bytes());
    let mut state = u64::from_str_radix(&hash[..16], 16).unwrap() | 1;
    let mut v: Vec<f32> = (0..dimension)
        .map(|_| {
            // xorshift64*: cheap, deterministic, spread enough for a scan.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

impl Inference for BenchModels {
    fn embedder(&self) -> Result<EmbedderInfo> {
        self.real.embedder()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        if !self.documents.get() {
            return self.real.embed(texts);
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let counts = self.real.encoder.tokenizer().encode_counted(&refs)?.into_iter().map(|(_, count)| count);
        let dimension = self.real.encoder.dimension();
        Ok(texts
            .iter()
            .zip(counts)
            .map(|(t, tokens)| Embedding { vector: seeded_unit_vector(t, dimension), tokens: tokens as u32 })
            .collect())
    }

    fn reranker(&self) -> Option<String> {
        None
    }

    fn rerank(&self, _: &str, _: &[String]) -> Result<Vec<f32>> {
        unreachable!("--no-rerank")
    }
}

/// Median milliseconds of `f` over `runs` runs of every query (one
/// warm-up run of each first).
fn median_ms(runs: usize, mut f: impl FnMut(&str)) -> f64 {
    let mut times = Vec::new();
    for q in QUERIES {
        f(q);
        for _ in 0..runs {
            let start = Instant::now();
            f(q);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn dump(dir: &RamDirectory, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in dir.list().unwrap() {
        std::fs::write(to.join(&name), dir.read(&name).unwrap()).unwrap();
    }
}

fn main() {
    let root = tldr_corpus_dir();
    let files = markdown_files(&root);
    if files.is_empty() {
        eprintln!("latency bench: no corpus at {} (run scripts/bench.sh once, or set BENCH_CORPUS)", root.display());
        return;
    }
    let model_dir = test_model_dir();
    let models = BenchModels { real: NativeEmbedder::load(&model_dir), documents: Cell::new(true) };

    let mut source = MemorySource::new();
    for (rel, text) in &files {
        source.insert("/tldr", rel, text.clone(), 0);
    }
    let (index_dir, config_dir) = (Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()));
    let engine = Engine::new(index_dir.clone(), config_dir.clone(), "index.yml", Rc::new(source));
    engine.collection_add("/tldr", Some("tldr"), Some("**/*.md")).expect("collection add");
    let start = Instant::now();
    engine.update(&[], 0, &mut |_, _, _| {}).expect("update");
    let indexed = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let report = engine.embed_with(&models, &EmbedOptions::default(), &mut |_, _, _| {}).expect("embed");
    println!(
        "corpus: {} documents; indexed in {indexed:.1} s; {} chunks cut and stored in {:.1} s (seeded vectors)",
        files.len(),
        report.chunks,
        start.elapsed().as_secs_f64()
    );
    models.documents.set(false);

    let runs = std::env::var("BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let options = SearchOptions { limit: 10, ..SearchOptions::default() };
    let bm25 = median_ms(runs, |q| {
        engine.search(q, &options).unwrap();
    });
    let embed = median_ms(runs, |q| {
        models.real.encoder.embed(&[q]).unwrap();
    });
    let index = engine.index().unwrap();
    let set = index.vectors().unwrap().expect("vectors");
    let probe = models.real.encoder.embed(&["extract a tar archive"]).unwrap().remove(0);
    let scan = median_ms(runs, |_| {
        qmd_core::vector::search(set, &probe, &|_| true, 40).unwrap();
    });
    let vsearch = median_ms(runs, |q| {
        engine.vsearch_with(q, &options, &models).unwrap();
    });
    let query = median_ms(runs, |q| {
        let request =
            QueryRequest { query: Some(q.into()), rerank: false, options: options.clone(), ..Default::default() };
        engine.query_with(&request, Some(&models)).unwrap();
    });
    println!("\nin-process (native engine), median over {} queries × {runs}:", QUERIES.len());
    println!("| command | ms | × search |\n|---|---:|---:|");
    println!("| search (BM25, baseline) | {bm25:.1} | 1.0 |");
    println!("| embed one query (MiniLM, CPU) | {embed:.1} | {:.1} |", embed / bm25);
    println!("| exact scan of {} chunks (one query vector) | {scan:.1} | {:.1} |", report.chunks, scan / bm25);
    println!("| vsearch | {vsearch:.1} | {:.1} |", vsearch / bm25);
    println!("| query --no-rerank | {query:.1} | {:.1} |", query / bm25);

    // The same index on disk, through the CLI.
    let qmd = qmd_bin();
    if !qmd.is_file() {
        eprintln!("latency bench: no qmd binary at {} (bash scripts/qmd-bin.sh)", qmd.display());
        return;
    }
    let tmp = std::env::temp_dir().join(format!("qmd-latency-{}", std::process::id()));
    dump(&index_dir, &tmp.join("index"));
    dump(&config_dir, &tmp.join("config"));
    let cli = |args: &[&str]| {
        let out = Command::new(&qmd)
            .args(args)
            .env("INDEX_PATH", tmp.join("index"))
            .env("QMD_CONFIG_DIR", tmp.join("config"))
            .env("XDG_CACHE_HOME", tmp.join("cache"))
            .env("QMD_EMBED_MODEL", &model_dir)
            .env("QMD_DEVICE", "cpu")
            .output()
            .unwrap();
        assert!(out.status.success(), "qmd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    cli(&["status"]); // compiles and caches the component once
    let search = median_ms(runs, |q| cli(&["search", q]));
    let vsearch = median_ms(runs, |q| cli(&["vsearch", q]));
    let query = median_ms(runs, |q| cli(&["query", "--no-rerank", q]));
    println!(
        "\nCLI (process, wasm component, model load, index open), median over {} queries × {runs}:",
        QUERIES.len()
    );
    println!("| command | ms | × search |\n|---|---:|---:|");
    println!("| qmd search (baseline) | {search:.0} | 1.0 |");
    println!("| qmd vsearch | {vsearch:.0} | {:.1} |", vsearch / search);
    println!("| qmd query --no-rerank | {query:.0} | {:.1} |", query / search);
    let _ = std::fs::remove_dir_all(&tmp);
}
