//! Builds a segment in memory, then serialises it.

use std::collections::HashMap;

use super::{FIELDS, MAGIC};
use crate::analysis::analyze;
use crate::error::{Error, ErrorKind, Result};
use crate::index::codec::{put_bytes, put_vint};
use crate::index::manifest::{Section, SegmentMeta};
use crate::metadata::{Extraction, stored};

/// A document as it goes into a segment.
pub struct DocInput<'a> {
    pub collection: &'a str,
    pub path: &'a str,
    pub title: &'a str,
    pub hash: &'a str,
    pub modified_ms: i64,
    pub body: &'a str,
    /// Its `qmd.metadata` (see [`crate::metadata::extract`]).
    pub metadata: &'a Extraction,
}

#[derive(Default)]
struct TermPostings {
    df: u32,
    last_doc: u32,
    postings: Vec<u8>,
    positions: Vec<u8>,
}

/// In-memory segment under construction.
#[derive(Default)]
pub struct SegmentBuilder {
    collections: Vec<String>,
    terms: HashMap<String, TermPostings>,
    doc_lens: Vec<u32>,
    doc_colls: Vec<u16>,
    doc_offsets: Vec<u32>,
    docs: Vec<u8>,
    bodies: Vec<u8>,
    meta_offsets: Vec<u32>,
    metadata: Vec<u8>,
    tokens: u64,
    /// Text bytes added, for splitting large updates into several segments.
    text_bytes: usize,
    /// Per-document scratch: term → positions per field. Reused across docs.
    scratch: HashMap<String, [Vec<u32>; FIELDS]>,
    scratch_free: Vec<[Vec<u32>; FIELDS]>,
}

impl SegmentBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.doc_lens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.doc_lens.is_empty()
    }

    /// Bytes of text (bodies, titles, paths) added so far.
    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    /// Adds a document; returns its ordinal in this segment.
    pub fn add(&mut self, doc: &DocInput<'_>) -> u32 {
        let ord = self.doc_lens.len() as u32;
        let coll = match self.collections.iter().position(|c| c == doc.collection) {
            Some(i) => i,
            None => {
                self.collections.push(doc.collection.to_string());
                self.collections.len() - 1
            }
        };
        let path_field = format!("{}/{}", doc.collection, doc.path);
        let mut doc_len = 0u32;
        for (field, text) in [path_field.as_str(), doc.title, doc.body].into_iter().enumerate() {
            let (scratch, free) = (&mut self.scratch, &mut self.scratch_free);
            analyze(text, |token| {
                doc_len += 1;
                if let Some(slots) = scratch.get_mut(token.term) {
                    slots[field].push(token.position);
                } else {
                    let mut slots = free.pop().unwrap_or_default();
                    slots[field].push(token.position);
                    scratch.insert(token.term.to_string(), slots);
                }
            });
        }
        for (term, mut slots) in self.scratch.drain() {
            let entry = self.terms.entry(term).or_default();
            let delta = if entry.df == 0 { ord } else { ord - entry.last_doc };
            put_vint(&mut entry.postings, u64::from(delta));
            let mask = (0..FIELDS).fold(0u8, |m, f| if slots[f].is_empty() { m } else { m | 1 << f });
            entry.postings.push(mask);
            for positions in slots.iter_mut().filter(|p| !p.is_empty()) {
                put_vint(&mut entry.postings, positions.len() as u64);
                let mut last = 0;
                for &p in positions.iter() {
                    put_vint(&mut entry.positions, u64::from(p - last));
                    last = p;
                }
                positions.clear();
            }
            entry.df += 1;
            entry.last_doc = ord;
            self.scratch_free.push(slots);
        }
        self.doc_lens.push(doc_len);
        self.tokens += u64::from(doc_len);
        self.text_bytes += doc.body.len() + doc.title.len() + doc.path.len();
        self.doc_colls.push(coll as u16);

        self.doc_offsets.push(self.docs.len() as u32);
        put_bytes(&mut self.docs, doc.path.as_bytes());
        put_bytes(&mut self.docs, doc.title.as_bytes());
        self.docs.extend_from_slice(&crate::document::hash_bytes(doc.hash));
        self.docs.extend_from_slice(&doc.modified_ms.to_le_bytes());
        put_vint(&mut self.docs, doc.body.len() as u64);
        let stored = super::body::encode(doc.body);
        put_vint(&mut self.docs, self.bodies.len() as u64);
        put_vint(&mut self.docs, stored.len() as u64);
        self.docs.extend_from_slice(&crc32fast::hash(&stored).to_le_bytes());
        self.bodies.extend_from_slice(&stored);
        self.meta_offsets.push(self.metadata.len() as u32);
        self.metadata.extend_from_slice(&stored::encode(doc.metadata));
        ord
    }

    /// Serialises the segment; returns the file bytes and its metadata
    /// (without deletions) for the manifest.
    pub fn finish(mut self, file: &str) -> Result<(Vec<u8>, SegmentMeta)> {
        let mut terms: Vec<(String, TermPostings)> = self.terms.drain().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));

        let mut fst = fst::MapBuilder::memory();
        let mut terminfo = Vec::with_capacity((terms.len() + 1) * super::TERMINFO_WIDTH);
        let (mut postings, mut positions) = (Vec::new(), Vec::new());
        for (ord, (term, p)) in terms.iter().enumerate() {
            fst.insert(term, ord as u64).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
            let crcs = [crc32fast::hash(&p.postings), crc32fast::hash(&p.positions)];
            push_terminfo(&mut terminfo, p.df, postings.len() as u64, positions.len() as u64, crcs);
            postings.extend_from_slice(&p.postings);
            positions.extend_from_slice(&p.positions);
        }
        push_terminfo(&mut terminfo, 0, postings.len() as u64, positions.len() as u64, [0, 0]);
        let fst = fst.into_inner().map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;

        self.doc_offsets.push(self.docs.len() as u32);
        self.meta_offsets.push(self.metadata.len() as u32);
        let le32 = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let doccoll: Vec<u8> = self.doc_colls.iter().flat_map(|x| x.to_le_bytes()).collect();

        let mut file_bytes = MAGIC.to_vec();
        let mut sections = Vec::new();
        for (name, data) in [
            ("terms", &fst),
            ("terminfo", &terminfo),
            ("postings", &postings),
            ("positions", &positions),
            ("doclen", &le32(&self.doc_lens)),
            ("doccoll", &doccoll),
            ("docoffs", &le32(&self.doc_offsets)),
            ("docs", &self.docs),
            ("bodies", &self.bodies),
            ("metaoffs", &le32(&self.meta_offsets)),
            ("metadata", &self.metadata),
        ] {
            sections.push(Section {
                name: name.to_string(),
                offset: file_bytes.len() as u64,
                len: data.len() as u64,
                crc32: crc32fast::hash(data),
            });
            file_bytes.extend_from_slice(data);
        }
        let meta = SegmentMeta {
            file: file.to_string(),
            docs: self.doc_lens.len() as u32,
            tokens: self.tokens,
            collections: self.collections,
            sections,
            deletes: None,
            deleted: 0,
            deletes_crc32: 0,
        };
        Ok((file_bytes, meta))
    }
}

fn push_terminfo(out: &mut Vec<u8>, df: u32, postings: u64, positions: u64, crcs: [u32; 2]) {
    out.extend_from_slice(&df.to_le_bytes());
    out.extend_from_slice(&postings.to_le_bytes());
    out.extend_from_slice(&positions.to_le_bytes());
    for crc in crcs {
        out.extend_from_slice(&crc.to_le_bytes());
    }
}
