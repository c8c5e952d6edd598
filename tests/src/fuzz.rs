//! Fuzz targets for what reads untrusted bytes (the lex query parser, query
//! documents, `index.yml`, the manifest, the segment reader, GGUF model
//! files and every architecture's loader ([`crate::fuzz_models`]), the
//! expansion cache's entries), and a small
//! seeded mutation fuzzer that runs them on stable Rust for a bounded
//! number of iterations (`qmd-fuzz`, `scripts/fuzz.sh`). A target must
//! never panic: errors are fine, a panic is a crash.
//!
//! The mutations are byte-level (flips, interesting values, inserts,
//! deletes, duplicated ranges, splices, truncations, dictionary words) over
//! real seeds; without coverage guidance, every mutant that does not crash
//! may join the corpus, so depth comes from stacking mutations.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use qmd_core::collection::Config;
use qmd_core::index::{Manifest, SegmentReader};
use qmd_core::query::document::parse_query_document;
use qmd_core::query::lex::parse_lex;
use qmd_core::{Directory, Engine, GetRequest, MemorySource, QueryRequest, RamDirectory, SearchOptions};

/// One fuzz target: its seeds, the words its mutator splices in, and the
/// code under test.
pub struct Target {
    pub name: &'static str,
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub dictionary: &'static [&'static str],
    pub run: fn(&[u8]),
    /// The target gets `1 / cost` of a run's iterations: loading and
    /// running a model costs what a thousand parses do.
    pub cost: u64,
    /// What one input may cost; an input past it counts as a crash.
    pub bound: Bound,
}

/// Time and memory one input may take, growing with its size: work that
/// grows faster than the input (nesting, repetition, a count that sizes an
/// allocation) fails the run. Memory is counted by [`crate::allocation`]
/// where the binary installs it (`qmd-fuzz` does); time by the clock, with
/// bounds tens of times what a healthy input takes, so a loaded machine
/// stays inside them.
#[derive(Clone, Copy)]
pub struct Bound {
    pub seconds: f64,
    pub seconds_per_mb: f64,
    pub bytes: usize,
    pub bytes_per_input_byte: usize,
}

impl Bound {
    fn seconds_for(&self, len: usize) -> f64 {
        self.seconds + self.seconds_per_mb * len as f64 / (1 << 20) as f64
    }

    fn bytes_for(&self, len: usize) -> usize {
        self.bytes.saturating_add(self.bytes_per_input_byte.saturating_mul(len))
    }
}

/// A parser or file reader (queries, configs, manifests, segments, the
/// site bundle's files): a second at most, and memory a small multiple of
/// the input (its decoded form).
pub const READER: Bound = Bound { seconds: 2.0, seconds_per_mb: 20.0, bytes: 16 << 20, bytes_per_input_byte: 64 };

/// Loading a model file and running it once: the fixtures are tiny
/// models, so a few seconds and a model's worth of scratch memory; a count
/// in a damaged header that sizes an allocation fails it.
const MODEL: Bound = Bound { seconds: 10.0, seconds_per_mb: 60.0, bytes: 256 << 20, bytes_per_input_byte: 64 };

/// The engine's targets: parsers, index readers, model files (the site
/// bundle's are in [`crate::fuzz_site`]).
pub fn targets() -> Vec<Target> {
    vec![
        Target { name: "lex", seeds: lex_seeds, dictionary: LEX_WORDS, run: lex, cost: 1, bound: READER },
        Target {
            name: "query-document",
            seeds: document_seeds,
            dictionary: DOCUMENT_WORDS,
            run: query_document,
            cost: 1,
            bound: READER,
        },
        Target { name: "config", seeds: config_seeds, dictionary: CONFIG_WORDS, run: config, cost: 1, bound: READER },
        Target {
            name: "manifest",
            seeds: manifest_seeds,
            dictionary: MANIFEST_WORDS,
            run: manifest,
            cost: 1,
            bound: READER,
        },
        Target { name: "segment", seeds: segment_seeds, dictionary: &[], run: segment, cost: 1, bound: READER },
        Target { name: "doctor", seeds: segment_seeds, dictionary: &[], run: doctor, cost: 1, bound: READER },
        Target {
            name: "gguf",
            seeds: crate::fuzz_models::files,
            dictionary: GGUF_WORDS,
            run: gguf,
            cost: 10,
            bound: MODEL,
        },
        Target {
            name: "gguf-models",
            seeds: crate::fuzz_models::recipes,
            dictionary: &[],
            run: crate::fuzz_models::load_and_run,
            cost: 10,
            bound: MODEL,
        },
        Target {
            name: "model-id",
            seeds: model_id_seeds,
            dictionary: MODEL_ID_WORDS,
            run: model_id,
            cost: 1,
            bound: READER,
        },
        Target {
            name: "expansion-cache",
            seeds: expansion_seeds,
            dictionary: EXPANSION_WORDS,
            run: expansion_entry,
            cost: 1,
            bound: READER,
        },
    ]
}

// ---------------------------------------------------------------------------
// The fixture index the targets read

const NOTES: [(&str, &str); 5] = [
    ("raft.md", "# Raft\n\nLeader election and log-replication keep replicas consistent.\n"),
    ("cap.md", "# CAP theorem\n\nConsistency, availability, partition tolerance.\n"),
    ("journal/2025-05-01.md", "# May 1\n\nMet the team about the store's consistency model.\n"),
    ("cjk.md", "# 東京\n\n東京都の天気は晴れです。 perf performance\n"),
    ("gone.md", "# Gone\n\nRemoved, so the segment has a deletions file.\n"),
];

struct Fixture {
    engine: Engine,
    index: RamDirectory,
    files: BTreeMap<String, Vec<u8>>,
}

thread_local! {
    static FIXTURE: Fixture = fixture();
}

fn fixture() -> Fixture {
    let mut source = MemorySource::new();
    for (path, text) in NOTES {
        source.insert("/notes", path, text, 1_000);
    }
    let source = Rc::new(RefCell::new(source));
    let index = RamDirectory::new();
    let engine =
        Engine::new(Rc::new(index.clone()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(Shared(source.clone())));
    engine.collection_add("/notes", Some("notes"), None).expect("add");
    engine.update(&[], 10_000, &mut |_, _, _| {}).expect("update");
    source.borrow_mut().remove("/notes", "gone.md");
    engine.update(&[], 20_000, &mut |_, _, _| {}).expect("update");
    let files = index.list().expect("list").into_iter().map(|f| (f.clone(), index.read(&f).expect("read"))).collect();
    Fixture { engine, index, files }
}

/// A source the fixture changes between updates.
struct Shared(Rc<RefCell<MemorySource>>);

impl qmd_core::SourceTree for Shared {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(qmd_core::WalkEntry<'_>) -> bool) -> qmd_core::Result<()> {
        self.0.borrow().walk(root, visit)
    }
    fn read(&self, root: &str, relative: &str) -> Result<qmd_core::SourceFile, qmd_core::ReadFailure> {
        self.0.borrow().read(root, relative)
    }
}

fn segment_file(f: &Fixture) -> (&String, &Vec<u8>) {
    f.files.iter().find(|(name, _)| name.ends_with(".qseg")).expect("a segment")
}

/// Reads the way a user does; results are ignored, only panics count.
fn exercise(engine: &Engine, query: &str) {
    let _ = engine.status();
    let _ = engine.search(query, &SearchOptions { limit: 10, ..Default::default() });
    let _ = engine.ls(Some("notes"));
    for (path, _) in NOTES {
        let _ = engine.get(&GetRequest {
            file: format!("notes/{path}"),
            from_line: None,
            max_lines: None,
            line_numbers: true,
        });
    }
}

// ---------------------------------------------------------------------------
// Targets

const LEX_WORDS: &[&str] = &[
    "\"",
    "-",
    "*",
    " ",
    "lex:",
    "AND",
    "OR",
    "東京",
    "log-replication",
    "perf*",
    "\"a b\"",
    "-\"",
    "\u{0}",
    "’",
    "é",
];
const DOCUMENT_WORDS: &[&str] = &["lex:", "vec:", "hyde:", "intent:", "expand:", "\n", "\"", "-", " ", ":", "qmd://"];
const CONFIG_WORDS: &[&str] = &[
    "collections:",
    "models:",
    "global_context:",
    "path:",
    "pattern:",
    "ignore:",
    "context:",
    "includeByDefault:",
    "update:",
    "&a",
    "*a",
    "<<:",
    "!!binary",
    "- ",
    ": ",
    "\n  ",
    "{",
    "}",
    "[",
    "]",
    "'",
    "\"",
    "~",
    ".nan",
    "null",
];
const MANIFEST_WORDS: &[&str] = &[
    "0",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "-1",
    "null",
    "\"",
    "[]",
    "{}",
    "seg-000000.qseg",
    "\"deleted\":",
    "\"docs\":",
    "\"offset\":",
    "\"len\":",
    "\"next_segment\":",
    "\"vectors\":",
    "1e308",
];

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn lex(data: &[u8]) {
    let query = text(data);
    let _ = parse_lex(&query);
    FIXTURE.with(|f| {
        let _ = f.engine.search(&query, &SearchOptions { limit: 10, ..Default::default() });
    });
}

fn query_document(data: &[u8]) {
    let input = text(data);
    let _ = parse_query_document(&input);
    FIXTURE.with(|f| {
        let request = QueryRequest { query: Some(input.clone()), parse_document: true, ..Default::default() };
        let _ = f.engine.query(&request);
    });
}

/// Parsing must not panic, and whatever parses and writes back must write
/// YAML that parses to the same YAML again (no loss on a second round
/// trip). Some parsed values cannot be written (an empty tag): that is an
/// error the caller reports, leaving the file as it is.
fn config(data: &[u8]) {
    let Ok(config) = Config::parse(&text(data)) else { return };
    let Ok(yaml) = config.to_yaml() else { return };
    let again = Config::parse(&yaml).unwrap_or_else(|e| panic!("written config does not parse: {}\n{yaml}", e.message));
    assert_eq!(again.to_yaml().expect("serialises"), yaml, "a second round trip changed the config");
}

/// The manifest as stored bytes (checksum and all), then, when it parses,
/// resealed with a valid checksum so validation and the reads behind it
/// run too.
fn manifest(data: &[u8]) {
    FIXTURE.with(|f| {
        let dir = RamDirectory::new();
        for (name, bytes) in &f.files {
            dir.atomic_write(name, bytes).expect("copy");
        }
        dir.atomic_write("manifest.json", data).expect("write");
        let engine =
            Engine::new(Rc::new(dir.clone()), Rc::new(f.engine_config()), "index.yml", Rc::new(MemorySource::new()));
        exercise(&engine, "consistency");
        if let Ok(parsed) = serde_json::from_slice::<Manifest>(data)
            && parsed.store(&dir).is_ok()
        {
            let engine =
                Engine::new(Rc::new(dir), Rc::new(f.engine_config()), "index.yml", Rc::new(MemorySource::new()));
            exercise(&engine, "consistency \"log replication\" perf*");
        }
    });
}

impl Fixture {
    fn engine_config(&self) -> RamDirectory {
        let config = RamDirectory::new();
        config.atomic_write("index.yml", b"collections:\n  notes:\n    path: /notes\n").expect("config");
        config
    }
}

/// A segment file of arbitrary bytes, its sections where the fixture's
/// are (clipped to the data), read with checksums off: the decoders behind
/// the checksums must hold up on their own.
fn segment(data: &[u8]) {
    FIXTURE.with(|f| {
        let (name, _) = segment_file(f);
        let mut meta = Manifest::load(&f.index).expect("manifest").segments[0].clone();
        let len = data.len() as u64;
        for section in &mut meta.sections {
            section.offset = section.offset.min(len);
            section.len = section.len.min(len - section.offset);
        }
        if let Some(last) = meta.sections.last_mut() {
            last.len = len - last.offset;
        }
        let dir = RamDirectory::new();
        dir.atomic_write(name, data).expect("write");
        if let Some(deletes) = &meta.deletes {
            dir.atomic_write(deletes, &f.files[deletes]).expect("copy");
        }
        let reader = SegmentReader::open(Rc::new(dir), meta.clone()).without_checksums();
        let _ = reader.live_per_collection();
        for doc in 0..meta.docs.min(64) {
            let _ = reader.doc_len(doc);
            if let Ok(record) = reader.doc(doc) {
                let _ = reader.body(&record);
            }
        }
        let mut terms: Vec<String> = ["consist", "leader", "東京", "perf", "log", "replic"].map(String::from).to_vec();
        if let Ok(prefixed) = reader.terms_with_prefix("") {
            terms.extend(prefixed.into_iter().take(64).map(|(t, _)| t));
        }
        for term in terms {
            if let Ok(Some(info)) = reader.term(&term)
                && let Ok(postings) = reader.postings(&info)
            {
                let _ = reader.positions(&info, &postings);
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Seeds

fn lex_seeds() -> Vec<Vec<u8>> {
    byte_seeds(&[
        "consistency",
        "leader election",
        "\"log replication\" -raft",
        "perf* 東京",
        "log-replication",
        "cap.md",
        "-only -negative",
        "\"unclosed phrase",
        "a.b.c e-mail",
    ])
}

fn byte_seeds(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn document_seeds() -> Vec<Vec<u8>> {
    byte_seeds(&[
        "lex: consistency\nvec: how do replicas agree",
        "intent: databases\nlex: \"log replication\" -raft\nhyde: Raft elects a leader.",
        "expand: leader election",
        "plain question about consistency",
        "lex:\nvec: ",
    ])
}

fn config_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![
        b"global_context: Personal knowledge base\nmodels:\n  embed: sentence-transformers/all-MiniLM-L6-v2\ncollections:\n  notes:\n    path: /home/me/notes\n    pattern: \"**/*.md\"\n    context:\n      /: Daily notes\n      journals: Journals\n  work:\n    path: /home/me/work\n    pattern: \"**/*.{md,txt}\"\n    ignore:\n      - archive/**\n    includeByDefault: false\n    update: git pull\n".to_vec(),
        b"base: &b\n  path: /x\ncollections:\n  a: *b\n".to_vec(),
    ];
    let peer = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/peer/out/index.after-setup.yml");
    seeds.extend(std::fs::read(peer));
    seeds
}

fn manifest_seeds() -> Vec<Vec<u8>> {
    FIXTURE.with(|f| vec![f.files["manifest.json"].clone()])
}

const GGUF_WORDS: &[&str] =
    &["\x7f\x7f\x7f\x7f", "\x00\x00\x00\x00", "block_count", "blk.", ".weight", "tokenizer.ggml."];

/// The GGUF reader on bytes, then the loaders on what it reads.
fn gguf(data: &[u8]) {
    let Ok(file) = qmd_core::gguf::GgufFile::parse("fuzz.gguf", data) else { return };
    let _ = file.non_finite_tensors();
    let bytes: qmd_core::arch::ModelBytes = std::sync::Arc::new(data.to_vec());
    let cpu = qmd_core::model::ModelDevice::cpu();
    if let Ok(encoder) = qmd_core::model::KernelEmbedder::load_on("fuzz.gguf", bytes.clone(), &cpu) {
        let _ = encoder.embed_counted(&["hello world".to_string()]);
    }
    let _ = qmd_core::model::KernelRanker::load_on("fuzz.gguf", bytes.clone(), &cpu);
    let _ = qmd_core::generate::QueryExpander::load_on("fuzz.gguf", bytes, &cpu);
}

const MODEL_ID_WORDS: &[&str] = &[
    "hf:",
    "https://huggingface.co/",
    "/",
    "..",
    ".",
    "%2e",
    "\\",
    "resolve/main/",
    "blob/",
    ".gguf",
    "--",
    "\u{0}",
    "C:",
];

fn model_id_seeds() -> Vec<Vec<u8>> {
    [
        "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf",
        "sentence-transformers/all-MiniLM-L6-v2",
        "https://huggingface.co/Qwen/Qwen3-Reranker-0.6B-GGUF/resolve/main/q/Qwen3-Q8_0.gguf",
    ]
    .map(|s| s.as_bytes().to_vec())
    .to_vec()
}

/// A model id from outside: whatever it says, a parsed id's folder stays
/// in the model cache and its download URL names no `..` or backslash.
fn model_id(data: &[u8]) {
    use qmd_core::model_id::{HubId, is_inside};
    let Ok(spec) = std::str::from_utf8(data) else { return };
    let Ok(id) = HubId::parse(spec) else { return };
    let root = std::path::Path::new("/cache/models");
    assert!(is_inside(root, &id.dir(root)), "{spec:?} leaves the cache: {:?}", id.dir(root));
    let file = id.file.clone().unwrap_or_else(|| "config.json".into());
    assert!(is_inside(root, &id.dir(root).join(&file)), "{spec:?}: {file:?} leaves the cache");
    let url = id.url("https://hub", &file);
    assert!(!url.split('/').any(|s| s == ".." || s == ".") && !url.contains('\\'), "{spec:?} -> {url}");
}

const EXPANSION_QUERY: &str = "raft consensus";
const EXPANSION_MODEL: &str = "hf:owner/repo/model.gguf";
const EXPANSION_WORDS: &[&str] =
    &["\"lex\"", "\"vec\"", "\"hyde\"", "\"searches\":", "[", "]", "{", "}", "\"query\":", "\\u0000", "1e999"];

fn expansion_seeds() -> Vec<Vec<u8>> {
    use qmd_core::SearchType;
    use qmd_core::TypedSearch;
    let searches = [
        TypedSearch { kind: SearchType::Lex, query: "raft leader".into() },
        TypedSearch { kind: SearchType::Vec, query: "how replicas agree".into() },
    ];
    vec![qmd_core::query::expansion::encode_cached(EXPANSION_QUERY, EXPANSION_MODEL, &searches)]
}

/// An expansion-cache entry as `qmd query` reads it: whatever the bytes,
/// what comes back is bounded as a fresh expansion is.
fn expansion_entry(data: &[u8]) {
    if let Some(searches) = qmd_core::query::expansion::decode_cached(data, EXPANSION_QUERY, EXPANSION_MODEL) {
        assert!(searches.len() <= 64, "{} searches from a cache entry", searches.len());
    }
}

/// `qmd doctor`'s check of a segment file whose bytes changed under an
/// unchanged manifest (damage on disk): any change must be found, by the
/// check that reads every section, and never panic.
fn doctor(data: &[u8]) {
    FIXTURE.with(|f| {
        let (name, pristine) = segment_file(f);
        let meta = Manifest::load(&f.index).expect("manifest").segments[0].clone();
        let dir = RamDirectory::new();
        dir.atomic_write(name, data).expect("write");
        if let Some(deletes) = &meta.deletes {
            dir.atomic_write(deletes, &f.files[deletes]).expect("copy");
        }
        let verified = SegmentReader::open(Rc::new(dir), meta).verify_file();
        assert_eq!(verified.is_ok(), data == pristine.as_slice(), "doctor's verify on changed bytes: {verified:?}");
    })
}

fn segment_seeds() -> Vec<Vec<u8>> {
    FIXTURE.with(|f| vec![segment_file(f).1.clone()])
}

// ---------------------------------------------------------------------------
// The mutation fuzzer

/// xorshift64*: seeded, so a run is repeatable.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

const INTERESTING: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, b'\n', b'"', b'{', b'}', b':', b'-', b'*', b'/', b'.'];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>], dictionary: &[&str]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let bytes: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
                out.splice(at..at, bytes);
            }
            3 if !out.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            4 if !out.is_empty() => {
                let start = rng.below(out.len());
                let end = (start + 1 + rng.below(32)).min(out.len());
                let copy = out[start..end].to_vec();
                out.splice(at..at, copy);
            }
            5 => {
                let other = &corpus[rng.below(corpus.len())];
                let start = rng.below(other.len() + 1);
                let end = (start + rng.below(64)).min(other.len());
                out.splice(at..at, other[start..end].iter().copied());
            }
            6 => out.truncate(at),
            7 if !dictionary.is_empty() => {
                out.splice(at..at, dictionary[rng.below(dictionary.len())].bytes());
            }
            _ => {
                if let Some(byte) = out.get_mut(at) {
                    *byte = byte.wrapping_add(1 + rng.below(3) as u8);
                }
            }
        }
    }
    out
}

/// What a fuzzing run found.
pub struct Report {
    pub iterations: u64,
    /// Inputs that panicked, with the panic message.
    pub crashes: Vec<(Vec<u8>, String)>,
}

/// What an input took past its bound, if it did.
fn past(bound: &Bound, len: usize, started: std::time::Instant, live: usize) -> Option<String> {
    let seconds = started.elapsed().as_secs_f64();
    let bytes = crate::allocation::peak().saturating_sub(live);
    if seconds > bound.seconds_for(len) {
        return Some(format!("{seconds:.1} s for a {len}-byte input (bound {:.1} s)", bound.seconds_for(len)));
    }
    if crate::allocation::counting() && bytes > bound.bytes_for(len) {
        return Some(format!("{bytes} bytes at peak for a {len}-byte input (bound {})", bound.bytes_for(len)));
    }
    None
}

/// Runs `target` on its seeds, then on `iterations` mutants.
pub fn run(target: &Target, iterations: u64, seed: u64) -> Report {
    let iterations = (iterations / target.cost.max(1)).max(1);
    let mut corpus = (target.seeds)();
    let mut rng = Rng::new(seed);
    let mut report = Report { iterations: 0, crashes: Vec::new() };
    let attempt = |input: &[u8], report: &mut Report| -> bool {
        report.iterations += 1;
        let (started, live) = (std::time::Instant::now(), crate::allocation::reset_peak());
        match catch_unwind(AssertUnwindSafe(|| (target.run)(input))) {
            Ok(()) => match past(&target.bound, input.len(), started, live) {
                Some(message) => {
                    report.crashes.push((input.to_vec(), message));
                    false
                }
                None => true,
            },
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                report.crashes.push((input.to_vec(), message));
                false
            }
        }
    };
    for seed in corpus.clone() {
        attempt(&seed, &mut report);
    }
    const MAX_CORPUS: usize = 256;
    while report.iterations < iterations {
        let parent = &corpus[rng.below(corpus.len())];
        let child = mutate(&mut rng, parent, &corpus, target.dictionary);
        if attempt(&child, &mut report) && child.len() < 1 << 20 && rng.below(8) == 0 {
            if corpus.len() >= MAX_CORPUS {
                let evict = 1 + rng.below(corpus.len() - 1);
                corpus[evict] = child;
            } else {
                corpus.push(child);
            }
        }
    }
    report
}
