//! Damage to every index file: a real index (two collections, one removed
//! so a deletions file exists, chunk vectors) has each section of its
//! segment, its deletions file, its vector segment and its manifest
//! truncated and byte-flipped. Every read must then give the undamaged
//! answers or a "damaged" error that names the recovery, never a panic or a
//! different answer; and `rebuild` must restore the index.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use super::Engine;
use super::embed::tests::WordHash;
use crate::api::*;
use crate::directory::{Directory, RamDirectory};
use crate::document::content_hash;
use crate::error::{ErrorKind, Result};
use crate::index::Manifest;
use crate::source::MemorySource;
use crate::{EmbedOptions, Listing};
use qmd_base::error::REBUILD_HINT;

const NOTES: [(&str, &str); 6] = [
    ("raft.md", "# Raft\n\nLeader election and log replication keep replicas consistent."),
    ("cap.md", "# CAP theorem\n\nConsistency, availability and partition tolerance: pick two."),
    ("journal/2025-05-01.md", "# May 1\n\nMet the team; discussed the consistency model of the store."),
    ("journal/2025-05-02.md", "# May 2\n\nWrote about leader leases and clock skew."),
    ("recipes/bread.md", "# Bread\n\nFlour, water, salt and time. Sourdough needs a starter."),
    ("long.md", "# Long note\n\n"),
];

struct Fixture {
    index: RamDirectory,
    config: RamDirectory,
    source: Rc<MemorySource>,
}

impl Fixture {
    fn new() -> Fixture {
        let mut source = MemorySource::new();
        for (path, text) in NOTES {
            let text = if path == "long.md" {
                format!("{text}{}", "paragraph about replicas. ".repeat(400))
            } else {
                text.into()
            };
            source.insert("/notes", path, text, 1_000);
        }
        source.insert("/work", "plan.md", "# Plan\n\nShip the consistency checker.", 1_000);
        source.insert("/work", "bread.md", "# Bread\n\nFlour, water, salt and time. Sourdough needs a starter.", 1_000);
        let fixture = Fixture { index: RamDirectory::new(), config: RamDirectory::new(), source: Rc::new(source) };
        let engine = fixture.engine();
        engine.collection_add("/notes", Some("notes"), None).unwrap();
        engine.collection_add("/work", Some("work"), None).unwrap();
        engine.update(&[], 10_000, &mut |_, _, _| {}).unwrap();
        let options = EmbedOptions { max_docs_per_batch: 3, ..Default::default() };
        engine.embed_with(&WordHash::new(64), &options, &mut |_, _, _| {}).unwrap();
        // Removing a collection deletes documents of a live segment: a
        // deletions file.
        engine.collection_remove("work").unwrap();
        fixture
    }

    /// A fresh engine over the fixture's files (nothing cached).
    fn engine(&self) -> Engine {
        Engine::new(Rc::new(self.index.clone()), Rc::new(self.config.clone()), "index.yml", self.source.clone())
    }

    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        self.index.list().unwrap().into_iter().map(|f| (f.clone(), self.index.read(&f).unwrap())).collect()
    }

    fn restore(&self, files: &BTreeMap<String, Vec<u8>>) {
        for name in self.index.list().unwrap() {
            self.index.delete(&name).unwrap();
        }
        for (name, bytes) in files {
            self.index.atomic_write(name, bytes).unwrap();
        }
    }
}

/// What a user can read from the index, as text: text answers and vector
/// answers apart (a rebuild may drop damaged vectors).
fn observe(engine: &Engine) -> Result<(String, String)> {
    // Long texts by hash, so a failure message stays readable.
    let short = |t: &str| if t.len() > 200 { format!("sha256:{}", content_hash(t.as_bytes())) } else { t.to_string() };
    let mut text = String::new();
    let status = engine.status()?;
    text += &format!("docs {}\n", status.total_documents);
    if let Listing::Files { files, .. } = engine.ls(Some("notes"))? {
        for f in files {
            text += &format!("ls {} {}\n", f.path, f.size);
        }
    }
    for query in ["consistency", "leader election", "\"log replication\"", "sourdough -bread", "repl*"] {
        for hit in engine.search(query, &SearchOptions { limit: 10, ..Default::default() })? {
            text += &format!("search {query}: {} {:.6} {}\n", hit.path, hit.score, short(&hit.snippet));
        }
    }
    for (path, _) in NOTES {
        let doc = engine
            .get(&GetRequest { file: format!("notes/{path}"), from_line: None, max_lines: None, line_numbers: false })
            .map_err(|e| match e {
                GetError::Failed(e) => e,
                other => panic!("get {path}: {other:?}"),
            })?;
        text += &format!("get {path} #{} {}\n", doc.docid, short(&doc.body));
    }
    let multi = engine.multi_get(&MultiGetRequest {
        pattern: "journal/*.md".into(),
        max_lines: None,
        max_bytes: 1 << 20,
        line_numbers: false,
    })?;
    text += &format!("multi {:?}\n", multi.entries.iter().map(|e| &e.doc.body).collect::<Vec<_>>());

    let mut vectors = format!("pending {}\n", status.needs_embedding);
    let models = WordHash::new(64);
    for hit in engine.vsearch_with("replicas agree on a leader", &SearchOptions::default(), &models)? {
        vectors += &format!("vsearch {} {:.6}\n", hit.path, hit.score);
    }
    let request = QueryRequest { query: Some("consistency of replicas".into()), ..Default::default() };
    for hit in engine.query_with(&request, Some(&models))?.hits {
        vectors += &format!("query {} {:.6}\n", hit.hit.path, hit.hit.score);
    }
    Ok((text, vectors))
}

/// Damage variants of one file: truncations and byte flips at `points`.
fn variants(bytes: &[u8], points: &[usize]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for &at in points.iter().filter(|&&at| at < bytes.len()) {
        out.push((format!("truncated at {at}"), bytes[..at].to_vec()));
        let mut flipped = bytes.to_vec();
        flipped[at] ^= 0x20;
        out.push((format!("byte {at} flipped"), flipped));
    }
    out
}

/// Offsets worth damaging in a text segment: each section's first, middle
/// and last byte.
fn segment_points(manifest: &Manifest, file: &str) -> Vec<usize> {
    let meta = manifest.segments.iter().find(|s| s.file == file).expect("segment in manifest");
    let mut points = vec![0, 4];
    for s in &meta.sections {
        let (start, len) = (s.offset as usize, s.len as usize);
        points.extend([start, start + len / 2, (start + len).saturating_sub(1)]);
    }
    points
}

#[test]
fn every_damaged_file_reads_right_or_says_damaged_and_rebuild_repairs_it() {
    let fixture = Fixture::new();
    let pristine = fixture.files();
    let baseline = observe(&fixture.engine()).expect("undamaged index reads");
    assert!(baseline.1.contains("vsearch"), "the fixture has vectors:\n{}", baseline.1);
    let manifest = Manifest::load(&fixture.index).unwrap();
    assert!(manifest.segments.iter().any(|s| s.deletes.is_some()), "the fixture has a deletions file");

    // What a rebuild of the undamaged index reads (BM25 statistics count
    // deleted documents until they are merged away, so these differ).
    fixture.engine().rebuild(20_000, &mut |_, _, _| {}).unwrap();
    let rebuilt = observe(&fixture.engine()).unwrap();
    assert_eq!(rebuilt.1, baseline.1, "a rebuild keeps verified vectors");
    fixture.restore(&pristine);

    let mut cases = Vec::new();
    for (name, bytes) in &pristine {
        let points: Vec<usize> = if name.ends_with(".qseg") {
            segment_points(&manifest, name)
        } else if name == "manifest.json" {
            (0..bytes.len()).collect()
        } else {
            (0..bytes.len()).step_by((bytes.len() / 64).max(1)).chain([bytes.len() - 1]).collect()
        };
        for (what, damaged) in variants(bytes, &points) {
            cases.push((name.clone(), what, Some(damaged)));
        }
        cases.push((name.clone(), "deleted".into(), None));
    }

    let (mut damaged_reported, mut unaffected) = (0, 0);
    for (file, what, damaged) in cases {
        fixture.restore(&pristine);
        match damaged {
            Some(bytes) => fixture.index.atomic_write(&file, &bytes).unwrap(),
            None => fixture.index.delete(&file).unwrap(),
        }
        let case = format!("{file} {what}");
        // `qmd doctor` finds every damage to a file that checksums cover
        // (all but the manifest, which is parsed and cross-checked), and
        // never passes an index that a read then finds damaged.
        let verified = catch_unwind(AssertUnwindSafe(|| fixture.engine().verify()))
            .unwrap_or_else(|_| panic!("{case}: verify panicked"));
        if file != "manifest.json" {
            assert!(verified.is_err(), "{case}: doctor's verify passed a damaged file");
        }
        match catch_unwind(AssertUnwindSafe(|| observe(&fixture.engine()))) {
            Err(_) => panic!("{case}: panicked"),
            Ok(Ok(seen)) => {
                assert_eq!(seen, baseline, "{case}: read without error but differently");
                unaffected += 1;
            }
            Ok(Err(e)) => {
                assert!(verified.is_err(), "{case}: a read failed ({}) but doctor's verify passed", e.message);
                assert_eq!(e.kind, ErrorKind::CorruptIndex, "{case}: {}", e.message);
                assert!(e.message.contains(REBUILD_HINT), "{case}: {}", e.message);
                damaged_reported += 1;
            }
        }
        let report = catch_unwind(AssertUnwindSafe(|| fixture.engine().rebuild(30_000, &mut |_, _, _| {})))
            .unwrap_or_else(|_| panic!("{case}: rebuild panicked"))
            .unwrap_or_else(|e| panic!("{case}: rebuild failed: {}", e.message));
        let repaired = observe(&fixture.engine()).unwrap_or_else(|e| panic!("{case}: after rebuild: {}", e.message));
        assert_eq!(repaired.0, rebuilt.0, "{case}: the rebuilt index reads differently");
        let vectors_dropped = report.notes.iter().any(|n| n.starts_with("Dropped"));
        if !vectors_dropped {
            assert_eq!(repaired.1, rebuilt.1, "{case}: kept vectors read differently");
        }
    }
    println!("damage cases: {damaged_reported} reported as damaged, {unaffected} read unchanged");
    assert!(damaged_reported > 100 && unaffected > 0, "{damaged_reported} reported, {unaffected} unaffected");
}

#[test]
fn a_flipped_bit_in_a_body_is_reported_not_returned() {
    let fixture = Fixture::new();
    let manifest = Manifest::load(&fixture.index).unwrap();
    let segment = &manifest.segments[0];
    let bodies = segment.sections.iter().find(|s| s.name == "bodies").unwrap();
    let mut bytes = fixture.index.read(&segment.file).unwrap();
    bytes[(bodies.offset + bodies.len / 2) as usize] ^= 1;
    fixture.index.atomic_write(&segment.file, &bytes).unwrap();
    let engine = fixture.engine();
    let get = |file: &str| {
        engine.get(&GetRequest { file: file.into(), from_line: None, max_lines: None, line_numbers: false })
    };
    let failures: Vec<String> = NOTES
        .iter()
        .filter_map(|(path, _)| match get(&format!("notes/{path}")) {
            Ok(doc) => {
                assert!(doc.body.starts_with('#'), "{path}: {}", doc.body);
                None
            }
            Err(GetError::Failed(e)) => Some(e.message),
            Err(other) => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(failures.len(), 1, "exactly the damaged body fails: {failures:?}");
    assert!(failures[0].contains("is damaged: checksum mismatch in section bodies"), "{}", failures[0]);
    engine.rebuild(40_000, &mut |_, _, _| {}).unwrap();
    assert!(NOTES.iter().all(|(path, _)| get(&format!("notes/{path}")).is_ok()), "rebuild repairs it");
}

#[test]
fn a_hand_edited_manifest_never_overwrites_a_live_segment() {
    let fixture = Fixture::new();
    let mut manifest = Manifest::load(&fixture.index).unwrap();
    // What a hand edit would do: a counter at its maximum, or below the
    // live segments. Stored through `store` (so the checksum matches), the
    // check refuses both before anything is written.
    manifest.next_segment = u64::MAX;
    assert!(manifest.store(&fixture.index).is_ok(), "u64::MAX is above every segment");
    // Nothing changed in the folders: the update writes no new file.
    fixture.engine().update(&[], 50_000, &mut |_, _, _| {}).unwrap();
    let before = fixture.files();
    // New documents need a new segment file, and the counter cannot name one.
    let config = "collections:\n  notes:\n    path: /notes\n  work:\n    path: /work\n";
    fixture.config.atomic_write("index.yml", config.as_bytes()).unwrap();
    let err = fixture.engine().update(&[], 60_000, &mut |_, _, _| {}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::CorruptIndex, "{}", err.message);
    assert_eq!(fixture.files(), before, "nothing was written");
    manifest.next_segment = 0;
    let err = manifest.store(&fixture.index).unwrap_err();
    assert!(err.message.contains("next_segment"), "{}", err.message);
}
