//! What the benchmarks and end-to-end tests share: the tldr corpus and the
//! `qmd` binary.

use std::path::{Path, PathBuf};

/// The unpacked tldr corpus: `$BENCH_CORPUS`, else where `scripts/bench.sh`
/// unpacks it (`~/.cache/qmd/bench-corpus/tldr-pages`).
pub fn tldr_corpus_dir() -> PathBuf {
    std::env::var_os("BENCH_CORPUS").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/qmd/bench-corpus/tldr-pages")
    })
}

/// Every `.md` file under `root`, as (path relative to `root`, bytes);
/// empty when `root` is missing.
pub fn markdown_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files
}

/// The embedding benchmarks' texts: the first `count` English tldr pages
/// (by path), each cut after its `word_pieces`-th word piece of `tokenizer`
/// (MiniLM's: 254 fills its 256-token window with [CLS] and [SEP]), so
/// every runtime embeds the same tokens whatever its own window.
pub fn tldr_embedding_texts(
    tokenizer: &qmd_core::model::TextTokenizer,
    count: usize,
    word_pieces: usize,
) -> Vec<String> {
    let root = tldr_corpus_dir();
    let mut pages: Vec<(String, Vec<u8>)> =
        markdown_files(&root).into_iter().filter(|(path, _)| path.contains("pages/common/")).collect();
    assert!(pages.len() >= count, "tldr corpus missing at {}: run scripts/bench-corpus.sh", root.display());
    pages.sort();
    pages
        .into_iter()
        .take(count)
        .map(|(_, bytes)| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let encoding = tokenizer.encode_counted(&[&text]).unwrap().remove(0).0;
            // Offsets of the word pieces between [CLS] and [SEP].
            let offsets = encoding.get_offsets();
            let cut = offsets.get(word_pieces).map_or(text.len(), |o| o.1);
            text[..cut.min(text.len())].to_string()
        })
        .collect()
}

/// The `qmd` binary: `$QMD_BIN`, else `qmd` next to the `deps` folder the
/// running test or bench executable was built into (the same target
/// directory). May not exist yet.
pub fn qmd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("QMD_BIN").filter(|b| !b.is_empty()) {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target dir").join("qmd")
}
