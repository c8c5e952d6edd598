//! Retrieval quality of BM25 search against published baselines.
//!
//! qmd's eval set ships with the repository. The BEIR tests need the data
//! sets of `scripts/data.sh` (or `$QMD_DATA_DIR`); without them they are
//! reported as ignored, and under `CI=true` they fail (see `tests/build.rs`).
//! Run with `cargo test --release -p qmd-tests --test engine retrieval:: -- --nocapture`
//! to see the tables; `qmd-eval` (the binary) prints the same numbers.

use qmd_tests::data::{DATA_HINT, beir_dir, beir_present};
use qmd_tests::eval::{BeirDataset, Mode, QmdEval, beir_table, embed_all, evaluate_beir};
use qmd_tests::models::{NativeEmbedder, test_model_dir};

/// qmd's own floors are easy ≥ 0.80 and overall ≥ 0.40; qmd 2.8.3 measured
/// 0.67 overall, which we must not fall below.
#[test]
fn qmd_eval_set_bm25_hit_at_3() {
    let metrics = QmdEval::default_set().evaluate(Mode::Bm25, None);
    println!("{}", metrics.table());
    for miss in &metrics.misses {
        println!("  miss {miss}");
    }
    assert!(metrics.hit3("easy") >= 0.80, "easy Hit@3 {:.3} < 0.80", metrics.hit3("easy"));
    assert!(metrics.hit3("overall") >= 0.67, "overall Hit@3 {:.3} < 0.67", metrics.hit3("overall"));
}

fn beir_ndcg(name: &str, floor: f64) {
    assert!(beir_present(name), "BEIR {name} not found at {}: {DATA_HINT}", beir_dir(name).display());
    let data = BeirDataset::named(name);
    let engine = data.engine();
    let m = evaluate_beir(&engine, Mode::Bm25, None, &data.queries, &data.qrels("test"));
    println!("{}", beir_table(&[(name.to_string(), "test".to_string(), m.clone())]));
    assert!(m.ndcg10 >= floor, "{name} test nDCG@10 {:.4} < {floor}", m.ndcg10);
}

/// BEIR's BM25 (Elasticsearch) scores 0.665.
#[test]
#[cfg_attr(qmd_missing_beir, ignore = "BEIR data not found: run scripts/data.sh or set QMD_DATA_DIR")]
fn scifact_test_ndcg_at_10() {
    beir_ndcg("scifact", 0.665);
}

/// BEIR's BM25 scores 0.325, Anserini flat 0.322.
#[test]
#[cfg_attr(qmd_missing_beir, ignore = "BEIR data not found: run scripts/data.sh or set QMD_DATA_DIR")]
fn nfcorpus_test_ndcg_at_10() {
    beir_ndcg("nfcorpus", 0.320);
}

/// With real all-MiniLM-L6-v2 embeddings, the hybrid query finds the
/// expected document in the top 3 for at least 90% of the 24 queries, and on
/// the "fusion" queries (written to need both signals) hybrid does at least
/// as well as BM25 and vector search alone.
#[test]
fn qmd_eval_set_hybrid_hit_at_3() {
    let models = NativeEmbedder::load(&test_model_dir());
    let set = QmdEval::default_set();
    assert!(embed_all(&set.engine, &models) > 6);
    let [bm25, vector, hybrid] = [Mode::Bm25, Mode::Vector, Mode::Hybrid].map(|mode| set.evaluate(mode, Some(&models)));
    for m in [&bm25, &vector, &hybrid] {
        println!("{}", m.table());
    }
    for miss in &hybrid.misses {
        println!("  hybrid miss {miss}");
    }
    assert!(hybrid.hit3("overall") >= 0.90, "hybrid overall Hit@3 {:.3} < 0.90", hybrid.hit3("overall"));
    let fusion = hybrid.hit3("fusion");
    assert!(
        fusion >= bm25.hit3("fusion") && fusion >= vector.hit3("fusion"),
        "fusion group: hybrid {fusion:.3}, bm25 {:.3}, vector {:.3}",
        bm25.hit3("fusion"),
        vector.hit3("fusion")
    );
}
