//! Code-aware chunking against qmd 2.8.3's own chunker (`chunkDocumentAsync`
//! under Node, with the web-tree-sitter grammars qmd pins), on real sources
//! from npm, PyPI, crates.io and Go's standard library (Debian's
//! golang-1.19-src): the same chunks, file by file, under `auto` and
//! `regex`. `scripts/chunk-parity.sh` installs qmd and fetches the sources
//! once.
//!
//! Files are drawn evenly from each language's sorted list (TypeScript's
//! without its `.d.ts` declaration files), leaving out
//! those this project reads differently on purpose: past 512 KB (to bound
//! the test's time; the chunker itself parses up to 1 MB), not UTF-8, or
//! holding characters beyond the BMP (qmd counts UTF-16 units, this
//! project chars; the README says so).

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use qmd_core::chunk::{ChunkStrategy, Declarations, Language, chunk_document};
use qmd_tests::code_eval::chunk_parity_parts;

/// Files a language, at least.
const PER_LANGUAGE: usize = 220;
const MAX_FILE_BYTES: u64 = 512 << 10;

/// Every file under `dir` (links not followed) whose language is `language`.
fn files_of(dir: &Path, language: Language, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() {
            files_of(&path, language, out);
        } else if kind.is_file() && Language::of_path(&path.to_string_lossy()) == Some(language) {
            out.push(path);
        }
    }
}

/// The crates of this workspace's Cargo.lock, as cargo unpacked them.
fn rust_crate_dirs() -> Vec<PathBuf> {
    let lock = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock")).expect("Cargo.lock");
    let mut wanted = HashSet::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            wanted.insert(format!("{n}-{}", v.trim_matches('"')));
        }
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let mut dirs = Vec::new();
    for registry in fs::read_dir(cargo_home.join("registry/src")).into_iter().flatten().flatten() {
        for krate in fs::read_dir(registry.path()).into_iter().flatten().flatten() {
            if wanted.contains(&*krate.file_name().to_string_lossy()) {
                dirs.push(krate.path());
            }
        }
    }
    dirs
}

/// Up to [`PER_LANGUAGE`] readable files, evenly over the sorted list.
fn sample(mut files: Vec<PathBuf>) -> Vec<PathBuf> {
    files.sort();
    files.retain(|f| {
        fs::metadata(f).is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
            && fs::read_to_string(f).is_ok_and(|s| s.chars().all(|c| (c as u32) < 0x10000))
    });
    let n = files.len();
    if n <= PER_LANGUAGE {
        return files;
    }
    (0..PER_LANGUAGE).map(|i| files[i * n / PER_LANGUAGE].clone()).collect()
}

fn corpus() -> (BTreeMap<&'static str, Vec<PathBuf>>, PathBuf) {
    let parts = chunk_parity_parts();
    let node_modules = parts["node_modules"].clone();
    let mut corpus = BTreeMap::new();
    for language in Language::ALL {
        let mut files = Vec::new();
        match language {
            Language::Python => files_of(&parts["python"], language, &mut files),
            Language::Go => files_of(&parts["go"], language, &mut files),
            Language::Rust => rust_crate_dirs().iter().for_each(|d| files_of(d, language, &mut files)),
            _ => files_of(&node_modules, language, &mut files),
        }
        if language == Language::TypeScript {
            // Sources, not the many small declaration files beside them.
            files.retain(|f| !f.to_string_lossy().ends_with(".d.ts"));
        }
        corpus.insert(language.name(), sample(files));
    }
    (corpus, node_modules)
}

type Spans = Vec<(usize, usize)>;

fn ours(content: &str, path: &str, strategy: ChunkStrategy) -> Spans {
    let declarations =
        Declarations::of(content, path, strategy).unwrap_or_else(|fallback| panic!("{path}: {fallback}"));
    chunk_document(content, &declarations).iter().map(|c| (c.pos, c.text.chars().count())).collect()
}

fn spans(value: &serde_json::Value) -> Spans {
    value
        .as_array()
        .expect("spans")
        .iter()
        .map(|s| (s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize))
        .collect()
}

#[test]
fn code_chunks_match_qmds_own_chunker() {
    let (corpus, node_modules) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("files.txt");
    let all: Vec<&PathBuf> = corpus.values().flatten().collect();
    fs::write(&list, all.iter().map(|p| format!("{}\n", p.display())).collect::<String>()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("parity/qmd-chunks.mjs");
    let out = Command::new("node").arg(&script).arg(&node_modules).arg(&list).output().expect("run node");
    assert!(out.status.success(), "qmd's chunker failed: {}", String::from_utf8_lossy(&out.stderr));
    let theirs: BTreeMap<String, serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["file"].as_str().unwrap().to_string(), v)
        })
        .collect();

    let mut mismatches = Vec::new();
    for (language, files) in &corpus {
        let (mut multi, mut syntax_cut) = (0, 0);
        for file in files {
            let path = file.to_string_lossy();
            let content = fs::read_to_string(file).unwrap();
            let qmd = &theirs[&*path];
            let (auto, regex) =
                (ours(&content, &path, ChunkStrategy::Auto), ours(&content, &path, ChunkStrategy::Regex));
            if auto != spans(&qmd["auto"]) {
                mismatches.push(format!("{path} (auto): ours {auto:?}, qmd {:?}", spans(&qmd["auto"])));
            }
            if regex != spans(&qmd["regex"]) {
                mismatches.push(format!("{path} (regex): ours {regex:?}, qmd {:?}", spans(&qmd["regex"])));
            }
            multi += usize::from(regex.len() > 1);
            syntax_cut += usize::from(auto != regex);
        }
        println!("{language:>10}: {} files, {multi} of several chunks, {syntax_cut} cut apart by auto", files.len());
        assert!(files.len() >= 200, "{language}: only {} files in the corpus", files.len());
        assert!(syntax_cut * 4 >= multi, "{language}: auto changed only {syntax_cut} of {multi} multi-chunk files");
    }
    assert!(
        mismatches.is_empty(),
        "{} files chunked unlike qmd; the first:\n{}",
        mismatches.len(),
        mismatches.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}
