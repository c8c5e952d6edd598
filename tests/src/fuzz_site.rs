//! Fuzz targets for what the static-site widget's engines read from a
//! bundle (the meta, term and positions shards, the metadata file, the
//! semantic tier's meta, vocabulary, rows and cluster files: the code the
//! page's wasm runs, here natively), and for code-aware chunking on
//! nesting-heavy sources. Each input is held to a [`Bound`] of time and
//! memory that grows with its size.
//!
//! Shard inputs are resealed (their checksum recomputed) and cluster inputs
//! named by their own hash, so mutants reach the decoders instead of
//! stopping at the checksum; that the checksum itself refuses damage is
//! the core's unit tests' to show.

use qmd_core::chunk::{Declarations, Language};
use qmd_core::site::format::file_id;
use qmd_core::site::semantic::{RowWidth, SemanticInput, SemanticMeta};
use qmd_core::site::{SemanticIndex, SiteBuilder, SiteIndex, SiteMetadata, SiteOptions, SitePage};

use crate::fuzz::{Bound, READER, Target};

/// The chunker: the parse's bounds ([`qmd_core::chunk`]: 16 operations
/// and twice 384 bytes a byte of source), with room for the text itself.
const CHUNKER: Bound = Bound { seconds: 5.0, seconds_per_mb: 60.0, bytes: 64 << 20, bytes_per_input_byte: 1024 };

pub fn targets() -> Vec<Target> {
    vec![
        Target { name: "site-meta", seeds: meta_seeds, dictionary: SITE_WORDS, run: site_meta, cost: 1, bound: READER },
        Target {
            name: "site-files",
            seeds: file_seeds,
            dictionary: SITE_WORDS,
            run: site_file,
            cost: 1,
            bound: READER,
        },
        Target {
            name: "site-semantic",
            seeds: semantic_seeds,
            dictionary: SITE_WORDS,
            run: semantic_file,
            cost: 2,
            bound: READER,
        },
        Target {
            name: "code-chunks",
            seeds: code_seeds,
            dictionary: CODE_WORDS,
            run: code_chunks,
            cost: 200,
            bound: CHUNKER,
        },
    ]
}

const SITE_WORDS: &[&str] = &[
    "QMDSITE2",
    "QMDTERM1",
    "QMDPOSN1",
    "\u{ff}\u{ff}\u{ff}\u{ff}\u{0f}",
    "\u{80}\u{80}\u{80}\u{80}\u{80}\u{01}",
    "leader",
    "__proto__",
];

const CODE_WORDS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "a<",
    "${`",
    "`",
    "\"",
    "'",
    "/*",
    "*/",
    "#[",
    "m!(",
    "fn f(",
    "def f(",
    "class ",
    "function ",
    "=> ",
    "\n    ",
    "if (",
    "import ",
    "export ",
    "<div>",
    "\\",
];

// ---------------------------------------------------------------------------
// The fixture bundle

const PAGES: [(&str, &str); 4] = [
    ("raft.md", "# Raft\n\nLeader election: a candidate asks for votes. The leader replicates the log."),
    ("paxos.md", "# Paxos\n\nProposers, acceptors, learners elect a distinguished leader."),
    ("bread.md", "---\nqmd:\n  metadata:\n    kind: recipe\n    rank: 3\n---\n# Bread\n\nFlour, water, salt."),
    ("東京.md", "# 東京\n\n東京都の天気は晴れです。 leader performance"),
];

/// A toy semantic tier: a token's vector from its bytes (no model needed),
/// a page's the mean of its words'.
fn toy_vector(text: &str) -> Vec<f32> {
    let mut v = [0.05f32; 8];
    for (i, b) in text.bytes().enumerate() {
        v[(b as usize + i) % 8] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn semantic_input() -> SemanticInput {
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "leader", "election", "flour", "bread", "log", "##s", "the", "a"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    vocab.extend((0..40).map(|i| format!("w{i}")));
    let token_vectors = vocab.iter().map(|t| toy_vector(t)).collect();
    SemanticInput {
        vocab,
        token_vectors,
        dim: 4,
        rows_per_shard: 4,
        row_width: RowWidth::Int4,
        probes: 2,
        min_similarity: 0.0,
        encode_documents: Box::new(|texts| Ok(texts.iter().map(|t| toy_vector(t)).collect())),
    }
}

struct Bundle {
    files: Vec<(String, Vec<u8>)>,
    meta: Vec<u8>,
    semantic_meta: Vec<u8>,
}

impl Bundle {
    fn file(&self, prefix: &str) -> impl Iterator<Item = &(String, Vec<u8>)> {
        self.files.iter().filter(move |(name, _)| name.starts_with(prefix))
    }
}

thread_local! {
    static BUNDLE: Bundle = bundle();
}

fn bundle() -> Bundle {
    let mut builder = SiteBuilder::new("fuzz");
    for (path, text) in PAGES {
        builder.add(SitePage {
            url: format!("/{path}"),
            path: path.to_string(),
            title: qmd_core::document::extract_title(text, path),
            text: text.to_string(),
            metadata: qmd_core::metadata::extract(path, text),
            filters: vec![("lang".into(), "en".into()), ("a=b".into(), "x\ty".into())],
            ..SitePage::default()
        });
    }
    let site = builder.finish(&SiteOptions { shard_bytes: 64, semantic: Some(semantic_input()) }).expect("a bundle");
    let files: Vec<(String, Vec<u8>)> = site.files.into_iter().map(|f| (f.name, f.bytes)).collect();
    let find = |name: &str| files.iter().find(|(n, _)| n == name).expect("named file").1.clone();
    let (meta, semantic_meta) = (find(&site.meta), find(site.semantic.as_deref().expect("a semantic tier")));
    Bundle { files, meta, semantic_meta }
}

/// Reads the way the page does; results are ignored, only panics and
/// bounds count.
fn exercise(index: &mut SiteIndex) {
    for query in ["leader", "\"leader election\"", "leader -raft", "東京", "perf"] {
        let _ = index.needs(query);
        let _ = index.search(query, 10, &[("lang".into(), "en".into())], None);
    }
    let _ = index.filters(None);
    let _ = index.filters(Some(&[0, 3, 9, u32::MAX]));
    let _ = index.metadata_file();
}

// ---------------------------------------------------------------------------
// Targets

fn site_meta(data: &[u8]) {
    if let Ok(mut index) = SiteIndex::open(data) {
        exercise(&mut index);
    }
}

fn meta_seeds() -> Vec<Vec<u8>> {
    BUNDLE.with(|b| vec![b.meta.clone()])
}

/// The first byte picks the file the rest stands for: a term shard, a
/// positions shard or the metadata file.
fn site_file(data: &[u8]) {
    let Some((&kind, payload)) = data.split_first() else { return };
    BUNDLE.with(|b| {
        let Ok(mut index) = SiteIndex::open(&b.meta) else { return };
        match kind % 3 {
            0 | 1 => {
                let prefix = if kind % 3 == 0 { "t/" } else { "p/" };
                for (name, _) in b.file(prefix) {
                    let _ = index.add_file(name, resealed(payload));
                }
                exercise(&mut index);
            }
            _ => {
                let name = qmd_core::site::format::metadata_name(&file_id(payload));
                if let Ok(metadata) = SiteMetadata::open(&name, payload, index.docs()) {
                    for tree in [
                        r#"{"key":"kind","operator":"eq","value":"recipe"}"#,
                        r#"{"key":"rank","operator":"gt","value":1}"#,
                    ] {
                        let _ = metadata.passing(&qmd_core::metadata::Filter::parse_json(tree).expect("a filter"));
                    }
                }
            }
        }
    });
}

/// A sealed file's content with its checksum recomputed.
fn resealed(data: &[u8]) -> Vec<u8> {
    let content = &data[..data.len().saturating_sub(4)];
    let mut out = content.to_vec();
    out.extend_from_slice(&file_id(content)[..4]);
    out
}

fn file_seeds() -> Vec<Vec<u8>> {
    BUNDLE.with(|b| {
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        for (kind, prefix) in [(0u8, "t/"), (1, "p/"), (2, "m/")] {
            seeds.extend(b.file(prefix).take(3).map(|(_, bytes)| [&[kind][..], bytes].concat()));
        }
        seeds
    })
}

/// The first byte picks what the rest is: the semantic meta, or one of its
/// vocabulary, rows or cluster files (a cluster named by the input's own
/// hash in a meta re-encoded to expect it).
fn semantic_file(data: &[u8]) {
    let Some((&kind, payload)) = data.split_first() else { return };
    BUNDLE.with(|b| {
        let mut meta = SemanticMeta::decode(&b.semantic_meta).expect("the fixture's meta");
        let (tier, name) = match kind % 4 {
            0 => (SemanticIndex::open(payload), None),
            1 => (SemanticIndex::open(&b.semantic_meta), b.file("w/").next().map(|f| f.0.clone())),
            2 => (SemanticIndex::open(&b.semantic_meta), b.file("r/").next().map(|f| f.0.clone())),
            _ => {
                meta.clusters[0].file = file_id(payload);
                (SemanticIndex::open(&meta.encode()), Some(meta.cluster_name(0)))
            }
        };
        let Ok(mut tier) = tier else { return };
        if let Some(name) = name {
            let _ = tier.add_file(&name, payload.to_vec());
        }
        for query in ["leader election", "bread flours", "w1 w2 w39 unknownword", ""] {
            let _ = tier.needs(query, &[0, 1, 7]);
            let _ = tier.search(query, 10, &[0, 2]);
        }
        let _ = tier.weight();
    });
}

fn semantic_seeds() -> Vec<Vec<u8>> {
    BUNDLE.with(|b| {
        let mut seeds = vec![[&[0u8][..], &b.semantic_meta].concat()];
        for (kind, prefix) in [(1u8, "w/"), (2, "r/"), (3, "v/")] {
            seeds.extend(b.file(prefix).take(2).map(|(_, bytes)| [&[kind][..], bytes].concat()));
        }
        seeds
    })
}

/// The first byte picks the language; the rest is the source.
fn code_chunks(data: &[u8]) {
    let Some((&pick, source)) = data.split_first() else { return };
    let language = Language::ALL[pick as usize % Language::ALL.len()];
    let _ = Declarations::parse(&String::from_utf8_lossy(source), language);
}

/// Unclosed and repeated structure in every grammar: what made the query
/// cursor quadratic and the parser's memory grow without a bound.
fn code_seeds() -> Vec<Vec<u8>> {
    let nests = [
        "(".repeat(8_000),
        "a<".repeat(4_000),
        "x = [".repeat(1_600),
        "${`".repeat(2_500),
        "m!(".repeat(2_500),
        "{[(<".repeat(2_000),
        (0..400).map(|i| format!("{}def f{i}(:\n", " ".repeat(i % 60))).collect(),
        "function f() { return `${ a(".repeat(300),
        "fn f() { g(|x| { h(".repeat(400),
        "func f() { go func() { defer func() {".repeat(300),
    ];
    let mut seeds = Vec::new();
    for (i, nest) in nests.iter().enumerate() {
        seeds.push([&[i as u8][..], nest.as_bytes()].concat());
    }
    seeds
}
