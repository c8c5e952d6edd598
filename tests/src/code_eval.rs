//! Retrieval on source code: `--chunk-strategy auto` against `regex`.
//!
//! The corpus is 22 packages of Go 1.19's standard library (their 121
//! non-test files, 1.2 MB; Debian's golang-1.19-src, fetched by
//! `scripts/chunk-parity.sh`), the queries the questions of
//! `tests/fixtures/code-eval/go-queries.tsv`, each answered by the file
//! that defines the function it asks about. `qmd-eval code` prints Hit@1
//! and Hit@3 for each strategy and mode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use qmd_core::chunk::ChunkStrategy;
use qmd_core::inference::Inference;
use qmd_core::{EmbedOptions, Engine, MemorySource, RamDirectory};

use crate::eval::{Mode, retrieve};

/// The packages the corpus holds (every query's answer is in one).
const PACKAGES: [&str; 22] = [
    "strings",
    "bytes",
    "strconv",
    "sort",
    "encoding/json",
    "encoding/base64",
    "encoding/csv",
    "net/url",
    "path/filepath",
    "bufio",
    "compress/gzip",
    "crypto/sha256",
    "time",
    "regexp",
    "text/template",
    "container/heap",
    "container/list",
    "unicode/utf8",
    "io",
    "html",
    "hash/crc32",
    "math/rand",
];

pub struct CodeQuery {
    pub text: String,
    /// The answer's path in the collection (`strings/strings.go`).
    pub file: String,
}

pub struct CodeEval {
    pub engine: Engine,
    pub queries: Vec<CodeQuery>,
    pub files: usize,
}

/// What `scripts/chunk-parity.sh` prepares (once), by name:
/// `node_modules`, `python`, `go`.
pub fn chunk_parity_parts() -> BTreeMap<String, PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/chunk-parity.sh");
    let out = Command::new("bash").arg(&script).output().expect("run chunk-parity.sh");
    assert!(out.status.success(), "chunk-parity.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
        .collect()
}

impl CodeEval {
    pub fn load(go: &Path) -> CodeEval {
        let mut source = MemorySource::new();
        let mut files = 0;
        for package in PACKAGES {
            for entry in std::fs::read_dir(go.join(package)).expect("package folder").flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".go") && !name.ends_with("_test.go") {
                    source.insert("/go", &format!("{package}/{name}"), std::fs::read(entry.path()).unwrap(), 0);
                    files += 1;
                }
            }
        }
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source));
        engine.collection_add("/go", Some("go"), Some("**/*.go")).expect("collection add");
        engine.update(&[], 0, &mut |_, _, _| {}).expect("update");
        let table = include_str!("../fixtures/code-eval/go-queries.tsv");
        let queries = table
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut fields = l.split('\t');
                let (text, file) = (fields.next().unwrap(), fields.next().expect("a file"));
                CodeQuery { text: text.to_string(), file: file.to_string() }
            })
            .collect();
        CodeEval { engine, queries, files }
    }

    /// Embeds the corpus chunked by `strategy` (a switch re-embeds it).
    pub fn embed(&self, models: &dyn Inference, strategy: ChunkStrategy) -> u64 {
        let options = EmbedOptions { chunk_strategy: Some(strategy), ..EmbedOptions::default() };
        let report = self.engine.embed_with(models, &options, &mut |_, _, _| {}).expect("embed");
        assert!(report.fallbacks.is_empty(), "{:?}", report.fallbacks);
        report.chunks
    }

    /// Hit@1 and Hit@3 over the queries.
    pub fn hits(&self, mode: Mode, models: Option<&dyn Inference>) -> (f64, f64) {
        let (mut at1, mut at3) = (0, 0);
        for query in &self.queries {
            let hits = retrieve(&self.engine, mode, models, &query.text, 3);
            let rank = hits.iter().position(|h| h.path == query.file);
            at1 += usize::from(rank == Some(0));
            at3 += usize::from(rank.is_some());
        }
        let n = self.queries.len() as f64;
        (at1 as f64 / n, at3 as f64 / n)
    }
}
