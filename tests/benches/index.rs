//! In-process indexing benchmark: the tldr corpus (unpacked by
//! `scripts/bench.sh` into `~/.cache/qmd/bench-corpus`, or `BENCH_CORPUS`)
//! held in memory, indexed by the core with no component or filesystem in
//! between. Reports the time to index against a baseline measured in the
//! same run: one pass that only hashes every file (the least any indexer
//! must do). `cargo bench -p qmd-tests --bench index`.

use std::rc::Rc;
use std::time::Instant;

use qmd_core::{Engine, MemorySource, RamDirectory};
use qmd_tests::bench::{markdown_files, tldr_corpus_dir};

fn main() {
    let root = tldr_corpus_dir();
    let files = markdown_files(&root);
    if files.is_empty() {
        eprintln!("index bench: no corpus at {} (run scripts/bench.sh once, or set BENCH_CORPUS)", root.display());
        return;
    }
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);

    let mut hash_times = Vec::new();
    let mut index_times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let digest =
            files.iter().map(|(_, b)| qmd_core::document::content_hash(b)).filter(|h| h.ends_with('0')).count();
        std::hint::black_box(digest);
        hash_times.push(start.elapsed().as_secs_f64());

        let mut source = MemorySource::new();
        for (rel, text) in &files {
            source.insert("/tldr", rel, text.clone(), 0);
        }
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source));
        engine.collection_add("/tldr", Some("tldr"), Some("**/*.md")).expect("collection add");
        let start = Instant::now();
        engine.update(&[], 0, &mut |_, _, _| {}).expect("update");
        index_times.push(start.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (hash, index) = (median(&mut hash_times), median(&mut index_times));
    println!("corpus: {} files, {:.1} MiB", files.len(), bytes as f64 / 1048576.0);
    println!("hash every file (baseline): {:.3} s", hash);
    println!(
        "index (core, in memory):    {:.3} s = {:.1}x baseline, {:.0} docs/s",
        index,
        index / hash,
        files.len() as f64 / index
    );
}
