//! Reads a segment lazily: nothing at open, each section on first use, and
//! postings and bodies by byte range.

use std::cell::OnceCell;
use std::rc::Rc;

use super::TERMINFO_WIDTH;
use super::postings::{FieldPositions, Posting, decode_positions, decode_postings};
use crate::directory::Directory;
use crate::error::{Error, Result};
use crate::index::codec::{get_bytes, get_vint, u32_at};
use crate::index::manifest::SegmentMeta;
use crate::metadata::{Extraction, stored};

/// Where a term's postings and positions are, with their checksums.
#[derive(Clone, Copy, Debug)]
pub struct TermInfo {
    pub df: u32,
    postings: (u64, u64),
    positions: (u64, u64),
    crcs: [u32; 2],
}

/// A document's stored metadata.
#[derive(Clone, Debug)]
pub struct DocRecord {
    pub collection: String,
    pub path: String,
    pub title: String,
    pub hash: String,
    pub modified_ms: i64,
    pub size: u64,
    body_offset: u64,
    body_len: u64,
    body_crc32: u32,
}

pub struct SegmentReader {
    dir: Rc<dyn Directory>,
    pub meta: SegmentMeta,
    terms: OnceCell<fst::Map<Vec<u8>>>,
    terminfo: OnceCell<Vec<u8>>,
    doclen: OnceCell<Vec<u8>>,
    doccoll: OnceCell<Vec<u8>>,
    docoffs: OnceCell<Vec<u8>>,
    docs: OnceCell<Vec<u8>>,
    metaoffs: OnceCell<Vec<u8>>,
    metadata: OnceCell<Vec<u8>>,
    deleted: OnceCell<Vec<u8>>,
    /// Set once the file was found to be as long as the manifest says.
    size_checked: OnceCell<()>,
    /// Off only for fuzzing the decoders behind the checksums.
    verify_checksums: bool,
}

/// The cell's value, loading it on first use; a failed load leaves the cell
/// empty so the next call tries again.
pub(crate) fn cached<T>(cell: &OnceCell<T>, load: impl FnOnce() -> Result<T>) -> Result<&T> {
    if let Some(value) = cell.get() {
        return Ok(value);
    }
    let value = load()?;
    Ok(cell.get_or_init(|| value))
}

impl SegmentReader {
    pub fn open(dir: Rc<dyn Directory>, meta: SegmentMeta) -> Self {
        SegmentReader {
            dir,
            meta,
            terms: OnceCell::new(),
            terminfo: OnceCell::new(),
            doclen: OnceCell::new(),
            doccoll: OnceCell::new(),
            docoffs: OnceCell::new(),
            docs: OnceCell::new(),
            metaoffs: OnceCell::new(),
            metadata: OnceCell::new(),
            deleted: OnceCell::new(),
            size_checked: OnceCell::new(),
            verify_checksums: true,
        }
    }

    /// A reader that skips checksum comparisons, so a fuzzer's mutations
    /// reach the decoders behind them (which must hold up on their own).
    #[doc(hidden)]
    pub fn without_checksums(mut self) -> Self {
        self.verify_checksums = false;
        self
    }

    fn checksum_matches(&self, data: &[u8], crc32: u32) -> bool {
        !self.verify_checksums || crc32fast::hash(data) == crc32
    }

    fn corrupt(&self, what: &str) -> Error {
        Error::corrupt(&self.dir.describe(&self.meta.file), what)
    }

    fn missing_is_damage(&self, e: Error) -> Error {
        e.missing_is_damage(&self.dir.describe(&self.meta.file))
    }

    /// Bytes of the segment file; a missing or short file is damage. The
    /// first read compares the file's size with the manifest's sections,
    /// so a damaged length never becomes a huge allocation.
    fn read_file(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        cached(&self.size_checked, || {
            let expected = self.meta.sections.last().map_or(0, |s| s.offset + s.len);
            let actual = self.dir.size(&self.meta.file).map_err(|e| self.missing_is_damage(e))?;
            if actual != expected {
                return Err(self.corrupt(&format!("the file has {actual} bytes, the manifest says {expected}")));
            }
            Ok(())
        })?;
        let len = usize::try_from(len).map_err(|_| self.corrupt("section larger than memory"))?;
        self.dir.read_range(&self.meta.file, offset, len).map_err(|e| self.missing_is_damage(e))
    }

    /// Reads a whole section and checks its crc32.
    fn section(&self, name: &str) -> Result<Vec<u8>> {
        let s = self.meta.section(name)?;
        let data = self.read_file(s.offset, s.len)?;
        // The term dictionary is verified even when fuzzing: the fst crate
        // trusts a map's structure once its header checks out, so a damaged
        // one must never get past its checksum.
        let verify = self.verify_checksums || name == "terms";
        if verify && crc32fast::hash(&data) != s.crc32 {
            return Err(self.corrupt(&format!("checksum mismatch in section {name}")));
        }
        Ok(data)
    }

    /// Bytes `start..end` of a section, checked against `crc32`.
    fn read_in(&self, section: &str, start: u64, end: u64, crc32: u32) -> Result<Vec<u8>> {
        let s = self.meta.section(section)?;
        if end < start || end > s.len {
            return Err(self.corrupt(&format!("range outside section {section}")));
        }
        let data = self.read_file(s.offset + start, end - start)?;
        if !self.checksum_matches(&data, crc32) {
            return Err(self.corrupt(&format!("checksum mismatch in section {section}")));
        }
        Ok(data)
    }

    fn fst(&self) -> Result<&fst::Map<Vec<u8>>> {
        cached(&self.terms, || fst::Map::new(self.section("terms")?).map_err(|e| self.corrupt(&e.to_string())))
    }

    fn terminfo_at(&self, ord: u64) -> Result<TermInfo> {
        let table = cached(&self.terminfo, || self.section("terminfo"))?;
        let at = |i: u64| -> Option<(u32, u64, u64, [u32; 2])> {
            let start = usize::try_from(i).ok()?.checked_mul(TERMINFO_WIDTH)?;
            let b = table.get(start..start.checked_add(TERMINFO_WIDTH)?)?;
            let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            Some((
                u32_at(0),
                u64::from_le_bytes(b[4..12].try_into().ok()?),
                u64::from_le_bytes(b[12..20].try_into().ok()?),
                [u32_at(20), u32_at(24)],
            ))
        };
        let ((df, p0, q0, crcs), (_, p1, q1, _)) =
            at(ord).zip(ord.checked_add(1).and_then(at)).ok_or_else(|| self.corrupt("term ordinal out of range"))?;
        Ok(TermInfo { df, postings: (p0, p1), positions: (q0, q1), crcs })
    }

    /// Exact term lookup.
    pub fn term(&self, term: &str) -> Result<Option<TermInfo>> {
        match self.fst()?.get(term) {
            Some(ord) => self.terminfo_at(ord).map(Some),
            None => Ok(None),
        }
    }

    /// Every term starting with `prefix`, in order.
    pub fn terms_with_prefix(&self, prefix: &str) -> Result<Vec<(String, TermInfo)>> {
        use fst::{IntoStreamer, Streamer};
        let map = self.fst()?;
        let mut stream = map.range().ge(prefix).into_stream();
        let mut out = Vec::new();
        while let Some((key, ord)) = stream.next() {
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            out.push((String::from_utf8_lossy(key).into_owned(), self.terminfo_at(ord)?));
        }
        Ok(out)
    }

    /// Decoded postings of a term: `(doc, tf per field)`.
    pub fn postings(&self, info: &TermInfo) -> Result<Vec<Posting>> {
        let data = self.read_in("postings", info.postings.0, info.postings.1, info.crcs[0])?;
        decode_postings(&data, info.df, self.meta.docs)
            .ok_or_else(|| self.corrupt("truncated or out-of-range postings"))
    }

    /// Positions of a term, aligned with [`Self::postings`]: per doc, per field.
    pub fn positions(&self, info: &TermInfo, postings: &[Posting]) -> Result<Vec<FieldPositions>> {
        let data = self.read_in("positions", info.positions.0, info.positions.1, info.crcs[1])?;
        decode_positions(&data, postings).ok_or_else(|| self.corrupt("truncated positions"))
    }

    /// A term's stored postings and positions bytes, checked, undecoded
    /// (what a static site's term shard carries).
    pub fn raw_term(&self, info: &TermInfo) -> Result<(Vec<u8>, Vec<u8>)> {
        Ok((
            self.read_in("postings", info.postings.0, info.postings.1, info.crcs[0])?,
            self.read_in("positions", info.positions.0, info.positions.1, info.crcs[1])?,
        ))
    }

    /// Tokens of a doc over all fields.
    pub fn doc_len(&self, doc: u32) -> Result<u32> {
        let data = cached(&self.doclen, || self.section("doclen"))?;
        u32_at(data, doc as usize).ok_or_else(|| self.corrupt("doc out of range"))
    }

    /// Collection index of a doc (into `meta.collections`).
    pub fn doc_collection(&self, doc: u32) -> Result<u16> {
        let data = cached(&self.doccoll, || self.section("doccoll"))?;
        let at = doc as usize * 2;
        data.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or_else(|| self.corrupt("doc out of range"))
    }

    /// Live docs per collection index (into `meta.collections`), from the
    /// collection column and the deletions alone.
    pub fn live_per_collection(&self) -> Result<Vec<u32>> {
        let mut counts = vec![0u32; self.meta.collections.len()];
        for doc in 0..self.meta.docs {
            if !self.is_deleted(doc)? {
                let c = self.doc_collection(doc)? as usize;
                *counts.get_mut(c).ok_or_else(|| self.corrupt("collection index out of range"))? += 1;
            }
        }
        Ok(counts)
    }

    pub fn is_deleted(&self, doc: u32) -> Result<bool> {
        let Some(bits) = self.deletions()? else { return Ok(false) };
        Ok(bits.get(doc as usize / 8).is_some_and(|b| b & (1 << (doc % 8)) != 0))
    }

    /// Checks every byte of the segment file, for `qmd doctor`: its length,
    /// the magic before the first section, and each section against its
    /// crc32 (read in pieces, so a large bodies section is never in memory
    /// whole), then the deletions file. Search reads postings, positions
    /// and bodies by range, each checked by its own crc32, so a damaged
    /// byte there would otherwise surface only when a query reaches it.
    pub fn verify_file(&self) -> Result<()> {
        const PIECE: u64 = 8 << 20;
        let first = self.meta.sections.first().map_or(0, |s| s.offset);
        if self.read_file(0, first)? != super::MAGIC {
            return Err(self.corrupt("not a segment file (bad magic)"));
        }
        let mut end = first;
        for s in &self.meta.sections {
            if s.offset != end {
                return Err(self.corrupt(&format!("section {} is not where the previous one ends", s.name)));
            }
            let mut crc = crc32fast::Hasher::new();
            let mut at = 0;
            while at < s.len {
                let len = (s.len - at).min(PIECE);
                crc.update(&self.read_file(s.offset + at, len)?);
                at += len;
            }
            if crc.finalize() != s.crc32 {
                return Err(self.corrupt(&format!("checksum mismatch in section {}", s.name)));
            }
            end = s.offset + s.len;
        }
        self.deletions()?;
        Ok(())
    }

    /// The deleted-docs bitset (empty when none).
    pub fn deleted_bits(&self) -> Result<Vec<u8>> {
        Ok(self.deletions()?.cloned().unwrap_or_default())
    }

    /// The deletions file, checked against the manifest: its crc32, one
    /// bit per document, as many set as the manifest counts.
    fn deletions(&self) -> Result<Option<&Vec<u8>>> {
        let Some(file) = &self.meta.deletes else { return Ok(None) };
        let shown = self.dir.describe(file);
        let damaged = |why: &str| Error::corrupt(&shown, why);
        cached(&self.deleted, || {
            // The size first: a damaged file must not become a huge read.
            let size = self.dir.size(file).map_err(|e| e.missing_is_damage(&shown))?;
            if size != self.meta.docs.div_ceil(8) as u64 {
                return Err(damaged("does not match the manifest"));
            }
            let bits = self.dir.read(file).map_err(|e| e.missing_is_damage(&shown))?;
            if !self.checksum_matches(&bits, self.meta.deletes_crc32) {
                return Err(damaged("checksum mismatch"));
            }
            let ones: u32 = bits.iter().map(|b| b.count_ones()).sum();
            if bits.len() != self.meta.docs.div_ceil(8) as usize || ones != self.meta.deleted {
                return Err(damaged("does not match the manifest"));
            }
            Ok(bits)
        })
        .map(Some)
    }

    pub fn doc(&self, doc: u32) -> Result<DocRecord> {
        if doc >= self.meta.docs {
            return Err(self.corrupt("doc out of range"));
        }
        let offsets = cached(&self.docoffs, || self.section("docoffs"))?;
        let docs = cached(&self.docs, || self.section("docs"))?;
        let start = u32_at(offsets, doc as usize).ok_or_else(|| self.corrupt("doc out of range"))? as usize;
        let bad = || self.corrupt("bad document record");
        let mut pos = start;
        let text = |pos: &mut usize| get_bytes(docs, pos).map(|b| String::from_utf8_lossy(b).into_owned());
        let path = text(&mut pos).ok_or_else(bad)?;
        let title = text(&mut pos).ok_or_else(bad)?;
        let hash_bytes = docs.get(pos..pos + 32).ok_or_else(bad)?;
        let hash = crate::document::to_hex(hash_bytes);
        pos += 32;
        let modified_ms = i64::from_le_bytes(docs.get(pos..pos + 8).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        pos += 8;
        let size = get_vint(docs, &mut pos).ok_or_else(bad)?;
        let body_offset = get_vint(docs, &mut pos).ok_or_else(bad)?;
        let body_len = get_vint(docs, &mut pos).ok_or_else(bad)?;
        let body_crc32 = u32_at(docs.get(pos..).ok_or_else(bad)?, 0).ok_or_else(bad)?;
        let collection = self.meta.collections.get(self.doc_collection(doc)? as usize).cloned().ok_or_else(bad)?;
        Ok(DocRecord { collection, path, title, hash, modified_ms, size, body_offset, body_len, body_crc32 })
    }

    /// A document's `qmd.metadata`: as the segment stored it, or, for a
    /// segment written before segments stored it, read from its text
    /// (`body` when the caller holds it already).
    pub fn metadata(&self, doc: u32, body: Option<&str>) -> Result<Extraction> {
        if let Some(stored) = self.stored_metadata(doc)? {
            return Ok(stored);
        }
        let record = self.doc(doc)?;
        let text = match body {
            Some(body) => std::borrow::Cow::Borrowed(body),
            None => std::borrow::Cow::Owned(self.body(&record)?),
        };
        Ok(crate::metadata::extract(&record.path, &text))
    }

    /// A document's stored `qmd.metadata`; `None` for a segment written
    /// before segments stored it.
    pub(crate) fn stored_metadata(&self, doc: u32) -> Result<Option<Extraction>> {
        if !self.meta.sections.iter().any(|s| s.name == "metadata") {
            return Ok(None);
        }
        let offsets = cached(&self.metaoffs, || self.section("metaoffs"))?;
        let data = cached(&self.metadata, || self.section("metadata"))?;
        let bad = || self.corrupt("bad metadata record");
        let (start, end) = u32_at(offsets, doc as usize).zip(u32_at(offsets, doc as usize + 1)).ok_or_else(bad)?;
        let bytes = data.get(start as usize..end as usize).ok_or_else(bad)?;
        stored::decode(bytes).map(Some).ok_or_else(bad)
    }

    /// A document's text, verified against its checksum.
    pub fn body(&self, record: &DocRecord) -> Result<String> {
        let end = record.body_offset.checked_add(record.body_len).ok_or_else(|| self.corrupt("bad body range"))?;
        let stored = self.read_in("bodies", record.body_offset, end, record.body_crc32)?;
        super::body::decode(&stored).map_err(|why| self.corrupt(&why))
    }
}
