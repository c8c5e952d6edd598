//! Retrieval-quality evaluation of the engine: BM25 search, vector search
//! and the hybrid query (see [`Mode`]).
//!
//! - BEIR collections (SciFact, NFCorpus; found by [`crate::data`]):
//!   each document becomes `<_id>.md` = `# {title}\n\n{text}` in one
//!   collection `beir` (root `/beir`), indexed in memory. Metrics are
//!   nDCG@10 (trec_eval: linear gain = qrels score, DCG = Σ gain/log2(rank+1),
//!   IDCG from the judged gains) and Recall@100, averaged over every query
//!   of the qrels split (a query without results scores 0).
//! - qmd's own eval set (`tests/fixtures/qmd-eval`, MIT, from qmd): six markdown files
//!   in collection `eval`, 24 known-answer queries; Hit@k = a file whose
//!   lowercased path contains `expected` is among the top k (search limit 5).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use qmd_core::inference::Inference;
use qmd_core::{Engine, MemorySource, QueryRequest, RamDirectory, SearchHit, SearchOptions};
use serde::Deserialize;

/// qmd's eval set, shipped in the repository (`tests/fixtures/qmd-eval`).
pub fn qmd_eval_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qmd-eval")
}

/// Published BM25 nDCG@10 on the test split: (BEIR paper, Anserini flat).
pub fn published_ndcg10(dataset: &str) -> Option<(f64, f64)> {
    match dataset {
        "scifact" => Some((0.665, 0.6789)),
        "nfcorpus" => Some((0.325, 0.3218)),
        _ => None,
    }
}

/// Published Anserini flat BM25 Recall@100 on the test split.
pub fn published_recall100(dataset: &str) -> Option<f64> {
    match dataset {
        "scifact" => Some(0.9253),
        "nfcorpus" => Some(0.2457),
        _ => None,
    }
}

/// qmd 2.8.3's own BM25 Hit@3 on its eval set (`qmd search --files -n 5`).
pub const QMD_283_HIT3: [(&str, f64); 5] =
    [("easy", 1.00), ("medium", 0.17), ("hard", 1.00), ("fusion", 0.50), ("overall", 0.67)];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[derive(Deserialize)]
struct CorpusLine {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct QueryLine {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// One BEIR document.
pub struct BeirDoc {
    pub id: String,
    pub title: String,
    pub text: String,
}

/// query id → (doc id → graded relevance).
pub type Qrels = BTreeMap<String, HashMap<String, u32>>;

/// A BEIR data set: corpus, all queries, and its qrels directory.
pub struct BeirDataset {
    pub name: String,
    pub dir: PathBuf,
    pub corpus: Vec<BeirDoc>,
    pub queries: HashMap<String, String>,
}

impl BeirDataset {
    /// Loads `dir/corpus.jsonl` and `dir/queries.jsonl`.
    pub fn load(dir: impl AsRef<Path>) -> BeirDataset {
        let dir = dir.as_ref().to_path_buf();
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let corpus = jsonl::<CorpusLine>(&dir.join("corpus.jsonl"))
            .into_iter()
            .map(|c| BeirDoc { id: c.id, title: c.title, text: c.text })
            .collect();
        let queries = jsonl::<QueryLine>(&dir.join("queries.jsonl")).into_iter().map(|q| (q.id, q.text)).collect();
        BeirDataset { name, dir, corpus, queries }
    }

    /// BEIR data set `name` from the data root ([`crate::data`]).
    pub fn named(name: &str) -> BeirDataset {
        Self::load(crate::data::beir_dir(name))
    }

    /// The qrels of `split` (`test`, `train`, `dev`).
    pub fn qrels(&self, split: &str) -> Qrels {
        parse_qrels(&read(&self.dir.join("qrels").join(format!("{split}.tsv"))))
    }

    /// Whether the data set has a `split` qrels file.
    pub fn has_split(&self, split: &str) -> bool {
        self.dir.join("qrels").join(format!("{split}.tsv")).is_file()
    }

    /// An in-memory engine holding every document as `<_id>.md`.
    pub fn engine(&self) -> Engine {
        let mut source = MemorySource::new();
        for doc in &self.corpus {
            source.insert("/beir", &format!("{}.md", doc.id), format!("# {}\n\n{}", doc.title, doc.text), 0);
        }
        let engine = new_engine(source);
        engine.collection_add("/beir", Some("beir"), None).expect("collection add");
        engine.update(&[], 0, &mut |_, _, _| {}).expect("update");
        engine
    }
}

fn jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    read(path)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1)))
        .collect()
}

/// Parses a BEIR qrels TSV: header line, CRLF endings, `qid\tdocid\tscore`.
/// Pairs with score ≤ 0 are not relevant and are dropped.
pub fn parse_qrels(text: &str) -> Qrels {
    let mut qrels = Qrels::new();
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        let mut parts = line.split('\t');
        let (Some(q), Some(d), Some(s)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let Ok(score) = s.trim().parse::<i64>() else { continue }; // the header
        if score > 0 {
            qrels.entry(q.to_string()).or_default().insert(d.to_string(), score as u32);
        }
    }
    qrels
}

fn new_engine(source: MemorySource) -> Engine {
    Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source))
}

/// trec_eval's nDCG@k: linear gains, log2(rank+1) discount, ideal ranking of
/// the judged gains. `ranked` is the run's doc ids, best first.
pub fn ndcg_at(ranked: &[&str], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 =
        ranked.iter().take(k).enumerate().map(|(i, d)| judged.get(*d).copied().unwrap_or(0) as f64 * discount(i)).sum();
    let mut ideal: Vec<u32> = judged.values().copied().filter(|&g| g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, &g)| g as f64 * discount(i)).sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Fraction of the relevant documents found in the first `k`.
pub fn recall_at(ranked: &[&str], judged: &HashMap<String, u32>, k: usize) -> f64 {
    let relevant = judged.values().filter(|&&g| g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked.iter().take(k).filter(|d| judged.get(**d).is_some_and(|&g| g > 0)).count();
    found as f64 / relevant as f64
}

/// Results of one BEIR run.
#[derive(Clone, Debug)]
pub struct BeirMetrics {
    pub queries: usize,
    pub ndcg10: f64,
    pub recall100: f64,
    pub elapsed: Duration,
}

/// How a run retrieves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `search`: BM25 only.
    Bm25,
    /// The query's embedding against the chunk vectors (no expansion).
    Vector,
    /// `query --no-rerank`: BM25 probe, fallback expansion, BM25 and vector
    /// lists fused with RRF.
    Hybrid,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Bm25 => "bm25",
            Mode::Vector => "vector",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// The top `limit` documents for `text` in `mode` (`models` needed for
/// vector and hybrid).
pub fn retrieve(
    engine: &Engine,
    mode: Mode,
    models: Option<&dyn Inference>,
    text: &str,
    limit: usize,
) -> Vec<SearchHit> {
    let options = SearchOptions { limit, ..SearchOptions::default() };
    let result = match mode {
        Mode::Bm25 => engine.search(text, &options),
        Mode::Vector => {
            let models = models.expect("vector mode needs models");
            let info = models.embedder().expect("embedder");
            let vector = models.embed(&[info.query_text(text)]).expect("embed the query").remove(0).vector;
            engine.vector_search(&info, &[vector], text, &options)
        }
        Mode::Hybrid => {
            let request = QueryRequest {
                query: Some(text.to_string()),
                parse_document: false,
                options,
                candidate_limit: limit,
                rerank: false,
                ..QueryRequest::default()
            };
            engine.query_with(&request, models).map(|r| r.hits.into_iter().map(|h| h.hit).collect())
        }
    };
    result.unwrap_or_else(|e| panic!("{} {text:?}: {e:?}", mode.name()))
}

/// Runs every query of `qrels` (top 100) and averages nDCG@10 / Recall@100.
pub fn evaluate_beir(
    engine: &Engine,
    mode: Mode,
    models: Option<&dyn Inference>,
    queries: &HashMap<String, String>,
    qrels: &Qrels,
) -> BeirMetrics {
    let start = Instant::now();
    let (mut ndcg, mut recall) = (0.0, 0.0);
    for (qid, judged) in qrels {
        let text = queries.get(qid).unwrap_or_else(|| panic!("query {qid} missing from queries.jsonl"));
        let hits = retrieve(engine, mode, models, text, 100);
        let ranked: Vec<&str> = hits.iter().map(|h| h.path.strip_suffix(".md").unwrap_or(&h.path)).collect();
        ndcg += ndcg_at(&ranked, judged, 10);
        recall += recall_at(&ranked, judged, 100);
    }
    let n = qrels.len().max(1) as f64;
    BeirMetrics { queries: qrels.len(), ndcg10: ndcg / n, recall100: recall / n, elapsed: start.elapsed() }
}

/// One known-answer query of qmd's eval set.
#[derive(Clone, Debug, Deserialize)]
pub struct QmdQuery {
    pub query: String,
    pub expected: String,
    pub difficulty: String,
}

/// qmd's eval set: the docs as an engine (collection `eval`) and the queries.
pub struct QmdEval {
    pub engine: Engine,
    pub queries: Vec<QmdQuery>,
}

impl QmdEval {
    pub fn load(root: impl AsRef<Path>) -> QmdEval {
        let root = root.as_ref();
        let mut source = MemorySource::new();
        let mut entries: Vec<_> = std::fs::read_dir(root.join("docs"))
            .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().expect("file name").to_string_lossy().into_owned();
            source.insert("/eval", &name, read(&path), 0);
        }
        let engine = new_engine(source);
        engine.collection_add("/eval", Some("eval"), None).expect("collection add");
        engine.update(&[], 0, &mut |_, _, _| {}).expect("update");
        QmdEval { engine, queries: jsonl(&root.join("queries.jsonl")) }
    }

    pub fn default_set() -> QmdEval {
        Self::load(qmd_eval_root())
    }

    /// Hit@1/3/5 per difficulty (in first-seen order) and overall.
    pub fn evaluate(&self, mode: Mode, models: Option<&dyn Inference>) -> QmdMetrics {
        let mut rows: Vec<QmdRow> = Vec::new();
        let mut misses = Vec::new();
        for q in &self.queries {
            let hits = retrieve(&self.engine, mode, models, &q.query, 5);
            let expected = q.expected.to_lowercase();
            let rank = hits.iter().position(|h| h.path.to_lowercase().contains(&expected));
            for label in [q.difficulty.as_str(), "overall"] {
                let row = match rows.iter_mut().position(|r| r.difficulty == label) {
                    Some(i) => &mut rows[i],
                    None => {
                        rows.push(QmdRow { difficulty: label.to_string(), ..QmdRow::default() });
                        rows.last_mut().expect("pushed")
                    }
                };
                row.queries += 1;
                for (slot, k) in [(&mut row.hit1, 1), (&mut row.hit3, 3), (&mut row.hit5, 5)] {
                    if rank.is_some_and(|r| r < k) {
                        *slot += 1.0;
                    }
                }
            }
            if rank.is_none_or(|r| r >= 3) {
                let got: Vec<&str> = hits.iter().take(3).map(|h| h.path.as_str()).collect();
                misses.push(format!("[{}] {:?} → expected {}, got {:?}", q.difficulty, q.query, q.expected, got));
            }
        }
        // "overall" last.
        if let Some(i) = rows.iter().position(|r| r.difficulty == "overall") {
            let overall = rows.remove(i);
            rows.push(overall);
        }
        for row in &mut rows {
            let n = row.queries as f64;
            row.hit1 /= n;
            row.hit3 /= n;
            row.hit5 /= n;
        }
        QmdMetrics { mode, rows, misses }
    }
}

#[derive(Clone, Debug, Default)]
pub struct QmdRow {
    pub difficulty: String,
    pub queries: usize,
    pub hit1: f64,
    pub hit3: f64,
    pub hit5: f64,
}

#[derive(Clone, Debug)]
pub struct QmdMetrics {
    pub mode: Mode,
    pub rows: Vec<QmdRow>,
    /// Queries whose expected file is not in the top 3.
    pub misses: Vec<String>,
}

impl QmdMetrics {
    pub fn hit3(&self, difficulty: &str) -> f64 {
        self.rows.iter().find(|r| r.difficulty == difficulty).map_or(0.0, |r| r.hit3)
    }

    /// The Hit@k table next to qmd 2.8.3's Hit@3.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "qmd eval set ({}, limit 5)", self.mode.name());
        let _ = writeln!(
            s,
            "  {:<10} {:>3}  {:>6} {:>6} {:>6}  {:>14}",
            "difficulty", "n", "Hit@1", "Hit@3", "Hit@5", "qmd 2.8.3 @3"
        );
        for r in &self.rows {
            let qmd =
                QMD_283_HIT3.iter().find(|(d, _)| *d == r.difficulty).map_or("-".into(), |(_, v)| format!("{v:.2}"));
            let _ = writeln!(
                s,
                "  {:<10} {:>3}  {:>6.3} {:>6.3} {:>6.3}  {:>14}",
                r.difficulty, r.queries, r.hit1, r.hit3, r.hit5, qmd
            );
        }
        s
    }
}

/// A table of BEIR results next to the published BM25 numbers.
pub fn beir_table(rows: &[(String, String, BeirMetrics)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<9} {:<6} {:>5}  {:>8} {:>12} {:>14}  {:>8} {:>10}  {:>7}",
        "dataset", "split", "q", "nDCG@10", "BEIR BM25", "Anserini flat", "R@100", "Anserini", "time"
    );
    for (dataset, split, m) in rows {
        let published =
            |v: Option<f64>| if split == "test" { v.map_or("-".into(), |v| format!("{v:.4}")) } else { "-".into() };
        let (beir, anserini) = published_ndcg10(dataset).unzip();
        let _ = writeln!(
            s,
            "  {:<9} {:<6} {:>5}  {:>8.4} {:>12} {:>14}  {:>8.4} {:>10}  {:>6.2}s",
            dataset,
            split,
            m.queries,
            m.ndcg10,
            published(beir),
            published(anserini),
            m.recall100,
            published(published_recall100(dataset)),
            m.elapsed.as_secs_f64()
        );
    }
    s
}

/// Embeds every document of `engine` (progress on stderr); returns the
/// chunk count.
pub fn embed_all(engine: &Engine, models: &dyn Inference) -> u64 {
    let start = Instant::now();
    let mut last = Instant::now();
    let report = engine
        .embed_with(models, &qmd_core::EmbedOptions::default(), &mut |_, done, total| {
            if last.elapsed().as_secs() >= 10 {
                last = Instant::now();
                eprintln!("  embedded {:.0}% of {} MB", done as f64 * 100.0 / total.max(1) as f64, total >> 20);
            }
        })
        .expect("embed");
    eprintln!(
        "  {} chunks of {} documents embedded in {:.1}s",
        report.chunks,
        report.docs,
        start.elapsed().as_secs_f64()
    );
    report.chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(d, g)| (d.to_string(), *g)).collect()
    }

    #[test]
    fn qrels_crlf_and_header() {
        let q = parse_qrels("query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\td2\t2\r\nq2\td3\t0\r\n");
        assert_eq!(q.len(), 1);
        assert_eq!(q["q1"], judged(&[("d1", 1), ("d2", 2)]));
    }

    #[test]
    fn ndcg_matches_trec_eval() {
        let j = judged(&[("a", 2), ("b", 1)]);
        assert!((ndcg_at(&["a", "b"], &j, 10) - 1.0).abs() < 1e-12);
        // b at rank 1, a at rank 3: (1 + 2/log2(4)) / (2 + 1/log2(3)).
        let expected = (1.0 + 2.0 / 2.0) / (2.0 + 1.0 / 3f64.log2());
        assert!((ndcg_at(&["b", "x", "a"], &j, 10) - expected).abs() < 1e-12);
        assert_eq!(ndcg_at(&["x"], &j, 10), 0.0);
        assert_eq!(recall_at(&["x", "b"], &j, 100), 0.5);
        assert_eq!(recall_at(&["x", "b"], &j, 1), 0.0);
    }
}
