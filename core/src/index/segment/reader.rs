//! Reads a segment lazily: nothing at open, each section on first use, and
//! postings and bodies by byte range.

use std::cell::OnceCell;
use std::rc::Rc;

use super::{FIELDS, TERMINFO_WIDTH};
use crate::directory::Directory;
use crate::error::{Error, Result};
use crate::index::codec::{get_bytes, get_vint, u32_at};
use crate::index::manifest::SegmentMeta;

/// Where a term's postings and positions are.
#[derive(Clone, Copy, Debug)]
pub struct TermInfo {
    pub df: u32,
    postings: (u64, u64),
    positions: (u64, u64),
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
    deleted: OnceCell<Vec<u8>>,
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
            deleted: OnceCell::new(),
        }
    }

    fn corrupt(&self, what: &str) -> Error {
        Error::corrupt(&self.meta.file, what)
    }

    /// Reads a whole section and checks its crc32.
    fn section(&self, name: &str) -> Result<Vec<u8>> {
        let s = self.meta.section(name)?;
        let data = self.dir.read_range(&self.meta.file, s.offset, s.len as usize)?;
        if crc32fast::hash(&data) != s.crc32 {
            return Err(self.corrupt(&format!("checksum mismatch in section {name}")));
        }
        Ok(data)
    }

    fn read_in(&self, section: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        let s = self.meta.section(section)?;
        if end < start || end > s.len {
            return Err(self.corrupt(&format!("range outside section {section}")));
        }
        self.dir.read_range(&self.meta.file, s.offset + start, (end - start) as usize)
    }

    fn fst(&self) -> Result<&fst::Map<Vec<u8>>> {
        cached(&self.terms, || fst::Map::new(self.section("terms")?).map_err(|e| self.corrupt(&e.to_string())))
    }

    fn terminfo_at(&self, ord: u64) -> Result<TermInfo> {
        let table = cached(&self.terminfo, || self.section("terminfo"))?;
        let at = |i: u64| -> Option<(u32, u64, u64)> {
            let b = table.get(i as usize * TERMINFO_WIDTH..(i as usize + 1) * TERMINFO_WIDTH)?;
            Some((
                u32::from_le_bytes(b[0..4].try_into().ok()?),
                u64::from_le_bytes(b[4..12].try_into().ok()?),
                u64::from_le_bytes(b[12..20].try_into().ok()?),
            ))
        };
        let ((df, p0, q0), (_, p1, q1)) =
            at(ord).zip(at(ord + 1)).ok_or_else(|| self.corrupt("term ordinal out of range"))?;
        Ok(TermInfo { df, postings: (p0, p1), positions: (q0, q1) })
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
    pub fn postings(&self, info: &TermInfo) -> Result<Vec<(u32, [u32; FIELDS])>> {
        let data = self.read_in("postings", info.postings.0, info.postings.1)?;
        let mut out = Vec::with_capacity(info.df as usize);
        let (mut pos, mut doc) = (0usize, 0u32);
        for i in 0..info.df {
            let delta = get_vint(&data, &mut pos).ok_or_else(|| self.corrupt("truncated postings"))? as u32;
            doc = if i == 0 { delta } else { doc + delta };
            let mask = *data.get(pos).ok_or_else(|| self.corrupt("truncated postings"))?;
            pos += 1;
            let mut tfs = [0u32; FIELDS];
            for (f, tf) in tfs.iter_mut().enumerate() {
                if mask & (1 << f) != 0 {
                    *tf = get_vint(&data, &mut pos).ok_or_else(|| self.corrupt("truncated postings"))? as u32;
                }
            }
            out.push((doc, tfs));
        }
        Ok(out)
    }

    /// Positions of a term, aligned with [`Self::postings`]: per doc, per field.
    pub fn positions(&self, info: &TermInfo, postings: &[(u32, [u32; FIELDS])]) -> Result<Vec<[Vec<u32>; FIELDS]>> {
        let data = self.read_in("positions", info.positions.0, info.positions.1)?;
        let mut pos = 0usize;
        let mut out = Vec::with_capacity(postings.len());
        for (_, tfs) in postings {
            let mut fields: [Vec<u32>; FIELDS] = Default::default();
            for (f, &tf) in tfs.iter().enumerate() {
                let mut last = 0u32;
                for _ in 0..tf {
                    last += get_vint(&data, &mut pos).ok_or_else(|| self.corrupt("truncated positions"))? as u32;
                    fields[f].push(last);
                }
            }
            out.push(fields);
        }
        Ok(out)
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
        let Some(file) = &self.meta.deletes else { return Ok(false) };
        let bits = cached(&self.deleted, || self.dir.read(file))?;
        Ok(bits.get(doc as usize / 8).is_some_and(|b| b & (1 << (doc % 8)) != 0))
    }

    /// The deleted-docs bitset (empty when none).
    pub fn deleted_bits(&self) -> Result<Vec<u8>> {
        match &self.meta.deletes {
            Some(file) => cached(&self.deleted, || self.dir.read(file)).cloned(),
            None => Ok(Vec::new()),
        }
    }

    pub fn doc(&self, doc: u32) -> Result<DocRecord> {
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
        let collection = self.meta.collections.get(self.doc_collection(doc)? as usize).cloned().ok_or_else(bad)?;
        Ok(DocRecord { collection, path, title, hash, modified_ms, size, body_offset, body_len })
    }

    pub fn body(&self, record: &DocRecord) -> Result<String> {
        let data = self.read_in("bodies", record.body_offset, record.body_offset + record.body_len)?;
        let raw = lz4_flex::decompress_size_prepended(&data).map_err(|e| self.corrupt(&e.to_string()))?;
        String::from_utf8(raw).map_err(|_| self.corrupt("body is not UTF-8"))
    }
}
