//! Embedding throughput on burn's CPU backend at 1, 2, 4 … all threads, each next to the f32
//! matrix-multiply peak measured in the same run (a large square matmul on
//! the same backend), and the exact vector scan at growing sizes.
//! `cargo bench -p qmd-tests --bench models`.
//!
//! FLOPs per token count the encoder's matrix multiplies (2 × weights per
//! token, attention's QKᵀ and AV at the batch's length); embeddings,
//! GELU, softmax and layer norms are not counted, so the percentage is a
//! lower bound of how busy the multiply units are.

use std::time::Instant;

use qmd_core::model::Device;
use qmd_core::model::burn::tensor::{Distribution, Tensor};
use qmd_core::vector::{ChunkVector, VectorManifest, VectorSegmentBuilder, VectorSet, search};
use qmd_core::{Directory, RamDirectory};
use qmd_tests::models::{NativeEmbedder, test_model_dir};

/// Best GFLOP/s of an n×n×n f32 matmul over a few runs.
fn matmul_peak(n: usize) -> f64 {
    let device = Device::flex();
    let a = Tensor::<2>::random([n, n], Distribution::Default, &device);
    let b = Tensor::<2>::random([n, n], Distribution::Default, &device);
    let _ = a.clone().matmul(b.clone()).into_data(); // warm-up
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let _ = a.clone().matmul(b.clone()).into_data();
        best = best.min(start.elapsed().as_secs_f64());
    }
    2.0 * (n as f64).powi(3) / best / 1e9
}

fn texts(count: usize) -> Vec<String> {
    let words = [
        "consensus",
        "replica",
        "leader",
        "log",
        "term",
        "vote",
        "snapshot",
        "quorum",
        "network",
        "partition",
        "latency",
        "the",
        "and",
        "of",
        "a",
        "is",
        "with",
        "for",
        "storage",
        "commit",
    ];
    (0..count)
        .map(|i| {
            // 40 to 240 words: a spread of chunk lengths, as real notes have.
            let length = 40 + (i * 37) % 200;
            (0..length).map(|j| words[(i * 31 + j * 17 + j * j) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// Thread counts to measure: 1, 2, 4, … and the machine's count.
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2)).take_while(|&n| n < cores).collect();
    counts.push(cores);
    counts
}

fn main() {
    let embedder = NativeEmbedder::load(&test_model_dir());
    let encoder = &embedder.encoder;
    let texts = texts(192);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = encoder.tokenizer().encode_counted(&refs).unwrap().iter().map(|(e, _)| e.len()).sum();
    // MiniLM-L6: 6 layers, hidden 384, FFN 1536.
    let (layers, hidden, ffn) = (6.0, 384.0, 1536.0);
    let per_token = 2.0 * layers * (4.0 * hidden * hidden + 2.0 * hidden * ffn);
    let seq = tokens as f64 / texts.len() as f64;
    let attention = 2.0 * layers * 2.0 * seq * hidden;

    println!("| threads | f32 matmul peak, 1024³ | embedding | tokens/s | matmul work | of the peak | vs 1 thread |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut one_thread = None;
    let mut vectors = Vec::new();
    for threads in thread_counts() {
        // burn's CPU backend and the encoder's passes both run on the
        // current rayon pool: a pool of `threads` is that many cores.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
        let (peak, secs) = pool.install(|| {
            let peak = matmul_peak(1024);
            let _ = encoder.embed(&refs[..8]).unwrap(); // warm-up
            let start = Instant::now();
            vectors = encoder.embed(&refs).unwrap();
            (peak, start.elapsed().as_secs_f64())
        });
        assert_eq!(vectors.len(), texts.len());
        let rate = texts.len() as f64 / secs;
        let base = *one_thread.get_or_insert(rate);
        let gflops = tokens as f64 * (per_token + attention) / secs / 1e9;
        println!(
            "| {threads} | {peak:.1} GFLOP/s | {rate:.1} chunks/s | {:.0} | {gflops:.1} GFLOP/s | {:.0}% | {:.2}× |",
            tokens as f64 / secs,
            100.0 * gflops / peak,
            rate / base
        );
    }
    println!("\n({} texts of {seq:.0} tokens on average, all-MiniLM-L6-v2)\n", texts.len());

    // Exact vector scan: int8 pass + f32 rescoring, per query.
    let dim = 384;
    let query: Vec<f32> = vectors[0].clone();
    for rows in [10_000usize, 100_000, 1_000_000] {
        let dir: std::rc::Rc<dyn Directory> = std::rc::Rc::new(RamDirectory::new());
        let mut builder = VectorSegmentBuilder::new(dim);
        for r in 0..rows {
            let base = &vectors[r % vectors.len()];
            let vector: Vec<f32> = base.iter().enumerate().map(|(i, x)| x + ((r * 7 + i) % 13) as f32 * 1e-3).collect();
            builder.add(&format!("{r:064x}"), &[ChunkVector { pos: 0, vector }]).unwrap();
        }
        let (bytes, meta) = builder.finish("vec-000001.qvec");
        dir.write(&meta.file, &bytes).unwrap();
        let manifest = VectorManifest {
            model: "bench".into(),
            dimension: dim as u32,
            fingerprint: String::new(),
            chunk_strategy: Default::default(),
            collection_chunk_strategies: Default::default(),
            segments: vec![meta],
        };
        let set = VectorSet::open(&dir, &manifest).unwrap();
        let _ = search(&set, &query, &|_| true, 20).unwrap();
        let runs = 5;
        let start = Instant::now();
        for _ in 0..runs {
            let hits = search(&set, &query, &|_| true, 20).unwrap();
            assert_eq!(hits.len(), 20);
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / runs as f64;
        let scanned_gb = (rows * dim) as f64 / ms / 1e6;
        println!("vector search over {rows} chunks: {ms:.1} ms per query ({scanned_gb:.1} GB/s of int8 codes)");
    }
}
