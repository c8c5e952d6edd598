//! Where the large test and benchmark data sets are: one folder laid out as
//! `eval/{scifact,nfcorpus}/…` and `corpora/tldr-pages.tar.gz`.
//! `$QMD_DATA_DIR` names a local copy (CI points it at the shared data
//! beside the clone); otherwise `scripts/data.sh` downloads the sets from
//! their public sources into `${XDG_CACHE_HOME:-~/.cache}/qmd/data`.
//!
//! Also compiled into `tests/build.rs`, so std only.

use std::path::PathBuf;

/// The data root: `$QMD_DATA_DIR`, else the download cache.
pub fn data_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("QMD_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
    cache.join("qmd/data")
}

/// The BEIR data sets the retrieval tests use.
pub const BEIR_SETS: [&str; 2] = ["scifact", "nfcorpus"];

/// Folder of BEIR data set `name` (`scifact`, `nfcorpus`).
pub fn beir_dir(name: &str) -> PathBuf {
    data_root().join("eval").join(name)
}

/// Whether a BEIR data set is complete enough to evaluate on.
pub fn beir_present(name: &str) -> bool {
    let dir = beir_dir(name);
    ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"].iter().all(|f| dir.join(f).is_file())
}

/// How to get the data, for messages.
pub const DATA_HINT: &str = "run scripts/data.sh (downloads the public data sets) or set QMD_DATA_DIR to a local copy";
