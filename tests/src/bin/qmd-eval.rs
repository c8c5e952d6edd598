//! Retrieval eval of the engine: BM25, vector and hybrid (`query
//! --no-rerank`) retrieval.
//!
//! ```text
//! cargo run --release -p qmd-tests --bin qmd-eval -- [scifact|nfcorpus|qmd-eval|all|code]
//!     [--mode bm25|vector|hybrid|all] [--model DIR|FILE.gguf]
//!     [--split test|train|dev] [--k1 X] [--b Y] [--prefix-weight Z]
//!     [--min-prefix-len N] [--max-expansions N]
//! ```
//!
//! Vector and hybrid modes embed the corpus first with the model in `--model`
//! (default: the test model of `scripts/test-weights.sh`, all-MiniLM-L6-v2),
//! on burn's CPU backend, or on the quantized CPU kernels for a GGUF file.
//!
//! Each parameter also takes a comma list (`--k1 0.9,1.2 --b 0.4,0.75`):
//! the grid of all combinations is evaluated on one index per data set,
//! one line per combination. Unset parameters keep `Bm25Params::default()`.
//!
//! `code` is retrieval on Go's standard library (`qmd_tests::code_eval`):
//! Hit@1/Hit@3 of each mode with code chunked by `--chunk-strategy regex`
//! and by `auto`.

use std::time::Instant;

use qmd_core::chunk::ChunkStrategy;
use qmd_core::inference::Inference;
use qmd_core::search::lex::Bm25Params;
use qmd_tests::eval::{BeirDataset, Mode, QmdEval, beir_table, embed_all};
use qmd_tests::models::{NativeEmbedder, test_model_dir};

const USAGE: &str = "usage: qmd-eval [scifact|nfcorpus|qmd-eval|all|code] [--mode bm25|vector|hybrid|all] [--model DIR|FILE.gguf] [--split test|train|dev] \
[--k1 X[,X..]] [--b Y[,Y..]] [--prefix-weight Z[,Z..]] [--min-prefix-len N[,N..]] [--max-expansions N[,N..]]";

fn list<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Vec<T> {
    let value = value.unwrap_or_else(|| fail(&format!("{flag} needs a value")));
    value.split(',').map(|v| v.trim().parse().unwrap_or_else(|_| fail(&format!("{flag}: bad value {v:?}")))).collect()
}

fn fail(message: &str) -> ! {
    eprintln!("{message}\n{USAGE}");
    std::process::exit(2)
}

fn main() {
    let defaults = Bm25Params::default();
    let mut target = "all".to_string();
    let mut split = "test".to_string();
    let (mut k1s, mut bs, mut pws) = (vec![defaults.k1], vec![defaults.b], vec![defaults.prefix_weight]);
    let (mut mpls, mut mxs) = (vec![defaults.min_prefix_len], vec![defaults.max_expansions]);
    let mut modes = vec![Mode::Bm25];
    let mut model_dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mode" => {
                modes = match args.next().as_deref() {
                    Some("bm25") => vec![Mode::Bm25],
                    Some("vector") => vec![Mode::Vector],
                    Some("hybrid") => vec![Mode::Hybrid],
                    Some("all") => vec![Mode::Bm25, Mode::Vector, Mode::Hybrid],
                    _ => fail("--mode needs bm25, vector, hybrid or all"),
                }
            }
            "--model" => {
                model_dir = Some(args.next().unwrap_or_else(|| fail("--model needs a directory or a GGUF file")))
            }
            "--split" => split = args.next().unwrap_or_else(|| fail("--split needs a value")),
            "--k1" => k1s = list(&arg, args.next()),
            "--b" => bs = list(&arg, args.next()),
            "--prefix-weight" => pws = list(&arg, args.next()),
            "--min-prefix-len" => mpls = list(&arg, args.next()),
            "--max-expansions" => mxs = list(&arg, args.next()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            a if !a.starts_with('-') => target = a.to_string(),
            a => fail(&format!("unknown option {a}")),
        }
    }
    let datasets: Vec<&str> = match target.as_str() {
        "all" => vec!["scifact", "nfcorpus", "qmd-eval"],
        "scifact" | "nfcorpus" | "qmd-eval" => vec![target.as_str()],
        "code" => Vec::new(),
        other => fail(&format!("unknown data set {other}")),
    };

    let mut grid = Vec::new();
    for &k1 in &k1s {
        for &b in &bs {
            for &prefix_weight in &pws {
                for &min_prefix_len in &mpls {
                    for &max_expansions in &mxs {
                        grid.push(Bm25Params { k1, b, prefix_weight, min_prefix_len, max_expansions });
                    }
                }
            }
        }
    }
    let describe = |p: &Bm25Params| {
        format!(
            "k1={} b={} prefix_weight={} min_prefix_len={} max_expansions={}",
            p.k1, p.b, p.prefix_weight, p.min_prefix_len, p.max_expansions
        )
    };
    if grid.len() == 1 {
        println!("BM25 params: {}\n", describe(&grid[0]));
    }

    let needs_models = modes.iter().any(|m| *m != Mode::Bm25);
    let embedder = needs_models.then(|| {
        let dir = model_dir.map_or_else(test_model_dir, std::path::PathBuf::from);
        eprintln!("model: {}", dir.display());
        NativeEmbedder::load(&dir)
    });
    let models = embedder.as_ref().map(|e| e as &dyn Inference);

    if target == "code" {
        return code(&modes, models);
    }
    let mut rows = Vec::new();
    for name in datasets {
        if name == "qmd-eval" {
            let mut set = QmdEval::default_set();
            if let Some(models) = models {
                embed_all(&set.engine, models);
            }
            for (params, &mode) in grid.iter().flat_map(|p| modes.iter().map(move |m| (p, m))) {
                set.engine.bm25 = params.clone();
                let m = set.evaluate(mode, models);
                if grid.len() == 1 {
                    println!("{}", m.table());
                    for miss in &m.misses {
                        println!("  miss {miss}");
                    }
                    println!();
                } else {
                    println!(
                        "{}  qmd-eval {} Hit@3 easy={:.3} overall={:.3}",
                        describe(params),
                        mode.name(),
                        m.hit3("easy"),
                        m.hit3("overall")
                    );
                }
            }
            continue;
        }
        let start = Instant::now();
        let data = BeirDataset::named(name);
        if !data.has_split(&split) {
            eprintln!("{name}: no {split} split, skipped");
            continue;
        }
        let qrels = data.qrels(&split);
        let mut engine = data.engine();
        let load = start.elapsed();
        eprintln!("{name}: {} docs loaded and indexed in {:.2}s", data.corpus.len(), load.as_secs_f64());
        if let Some(models) = models {
            embed_all(&engine, models);
        }
        for (params, &mode) in grid.iter().flat_map(|p| modes.iter().map(move |m| (p, m))) {
            engine.bm25 = params.clone();
            let m = qmd_tests::eval::evaluate_beir(&engine, mode, models, &data.queries, &qrels);
            if grid.len() == 1 {
                rows.push((mode, name.to_string(), split.clone(), m));
            } else {
                println!(
                    "{}  {name}/{split} {} nDCG@10={:.4} R@100={:.4} ({:.1}s)",
                    describe(params),
                    mode.name(),
                    m.ndcg10,
                    m.recall100,
                    m.elapsed.as_secs_f64()
                );
            }
        }
    }
    for mode in modes {
        let rows: Vec<_> = rows
            .iter()
            .filter(|r| r.0 == mode)
            .map(|(_, name, split, m)| (name.clone(), split.clone(), m.clone()))
            .collect();
        if !rows.is_empty() {
            println!("BEIR ({}; published numbers are BM25's, for the test split)", mode.name());
            print!("{}", beir_table(&rows));
        }
    }
}

/// Hit@1/Hit@3 on Go's standard library, code chunked each way.
fn code(modes: &[Mode], models: Option<&dyn Inference>) {
    let eval = qmd_tests::code_eval::CodeEval::load(&qmd_tests::code_eval::chunk_parity_parts()["go"]);
    println!("code: {} Go files, {} queries\n", eval.files, eval.queries.len());
    println!("| mode | chunking | chunks | Hit@1 | Hit@3 |\n|---|---|---:|---:|---:|");
    for strategy in [ChunkStrategy::Regex, ChunkStrategy::Auto] {
        let chunks = models.map(|m| eval.embed(m, strategy)).unwrap_or(0);
        for &mode in modes {
            let (at1, at3) = eval.hits(mode, models);
            println!("| {} | {} | {chunks} | {at1:.3} | {at3:.3} |", mode.name(), strategy.name());
        }
    }
}
