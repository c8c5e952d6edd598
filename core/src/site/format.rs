//! The bundle's binary files, written and read here (one definition, a
//! round-trip test below). Every file is stored gzip-compressed by the
//! host; these are the bytes inside.
//!
//! ```text
//! meta       "QMDSITE2"
//!            vint docs, vint tokens, 8 bytes fragment set id
//!            per doc: vint length in tokens (all fields, as BM25 wants)
//!            8 bytes shard set id; vint shards; per shard: first term
//!            front-coded against the previous shard's (vint shared bytes,
//!            vint-prefixed suffix)
//!            vint filter keys; per key: name, vint values; per value:
//!            name, vint docs, vint doc deltas
//! terms      "QMDTERM1" vint terms; per term: front-coded term, vint df,
//!            vint postings length; then every term's postings, in order
//! positions  "QMDPOSN1" vint terms; per term: vint positions length;
//!            then every term's positions, in order
//! ```
//! A terms or positions file ends with 4 bytes of the sha256 of what comes
//! before (damage is an error, not a wrong result). Postings and positions
//! are the index segment's own encodings
//! ([`crate::index::segment::postings`]). Files are named by the hash of
//! their content (shards: by the hash of the whole set, then their number),
//! so a name never changes meaning and caches keep them forever; the meta
//! names every shard it needs. Shards are numbered rather than each named
//! by its own hash, which would cost the meta 16 bytes a shard that no
//! compression removes: small shards keep a query's bytes small.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::index::codec::{get_bytes, get_vint, put_bytes, put_vint};

pub const META_MAGIC: &[u8] = b"QMDSITE2";
pub const TERMS_MAGIC: &[u8] = b"QMDTERM1";
pub const POSITIONS_MAGIC: &[u8] = b"QMDPOSN1";

/// A file id: the first 8 bytes of the sha256 of its content.
pub type FileId = [u8; 8];

/// Values of one filter key → the documents carrying each.
pub type FilterValues = BTreeMap<String, Vec<u32>>;

/// What a page loads first: statistics, document lengths, the shard table
/// and the filters.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Meta {
    pub docs: u32,
    pub tokens: u64,
    pub fragments: FileId,
    pub doc_lens: Vec<u32>,
    /// Names the shard files (with each shard's number).
    pub shard_set: FileId,
    pub shards: Vec<ShardRef>,
    pub filters: BTreeMap<String, FilterValues>,
    /// The file of the pages' `qmd.metadata` (see [`metadata_name`]),
    /// when any page has some: loaded only by a search with a metadata
    /// filter.
    pub metadata: Option<FileId>,
}

/// Name of the metadata file with id `id`.
pub fn metadata_name(id: &FileId) -> String {
    format!("m/{}.json", id_hex(id))
}

/// One term range: terms from `first` up to the next shard's first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardRef {
    pub first: String,
}

/// The bundle file of shard `shard`'s terms and postings.
pub fn terms_name(set: &FileId, shard: usize) -> String {
    format!("t/{}/{shard}.bin", id_hex(set))
}

/// The bundle file of shard `shard`'s positions (fetched for phrases only).
pub fn positions_name(set: &FileId, shard: usize) -> String {
    format!("p/{}/{shard}.bin", id_hex(set))
}

/// Bytes of a shard file's checksum.
const CHECK_BYTES: usize = 4;

/// `content` with its checksum appended.
fn sealed(mut content: Vec<u8>) -> Vec<u8> {
    let check = file_id(&content);
    content.extend_from_slice(&check[..CHECK_BYTES]);
    content
}

/// The content of a sealed file, its checksum verified and removed.
fn unsealed(mut data: Vec<u8>) -> Parsed<Vec<u8>> {
    let at = data.len().checked_sub(CHECK_BYTES).ok_or(FormatError("file shorter than its checksum"))?;
    if file_id(&data[..at])[..CHECK_BYTES] != data[at..] {
        return Err(FormatError("file content does not match its checksum"));
    }
    data.truncate(at);
    Ok(data)
}

/// One term of a shard, with its postings' place in the shard's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardTerm {
    pub term: String,
    pub df: u32,
    pub postings: Range<usize>,
}

/// A decoded term shard: its terms in order over its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermShard {
    pub terms: Vec<ShardTerm>,
    pub bytes: Vec<u8>,
}

/// A decoded positions shard, aligned with its term shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PositionsShard {
    pub ranges: Vec<Range<usize>>,
    pub bytes: Vec<u8>,
}

/// Why a file could not be read: named, for the page's error line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError(pub &'static str);

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "damaged search index file ({}); rebuild the site", self.0)
    }
}

pub(crate) type Parsed<T> = std::result::Result<T, FormatError>;

/// Lowercase hex of a file id, as it appears in file names.
pub fn id_hex(id: &FileId) -> String {
    crate::document::to_hex(id)
}

/// The file id whose [`id_hex`] is `hex`: sixteen lowercase hex digits,
/// nothing else (so each name stands for one id).
pub fn parse_id_hex(hex: &str) -> Option<FileId> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = hex.as_bytes();
    if bytes.len() != 16 {
        return None;
    }
    let mut id = [0u8; 8];
    for (byte, pair) in id.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(id)
}

/// The id of `bytes`: its sha256, first 8 bytes.
pub fn file_id(bytes: &[u8]) -> FileId {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    id
}

fn put_front_coded(out: &mut Vec<u8>, previous: &str, term: &str) {
    let shared = previous.bytes().zip(term.bytes()).take_while(|(a, b)| a == b).count();
    put_vint(out, shared as u64);
    put_bytes(out, &term.as_bytes()[shared..]);
}

/// Reads bytes with a cursor; every read names what was truncated. All
/// of the bundle's binary files are read through it.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn open(data: &'a [u8], magic: &[u8], what: &'static str) -> Parsed<Self> {
        if !data.starts_with(magic) {
            return Err(FormatError(what));
        }
        Ok(Cursor { data, pos: magic.len() })
    }

    pub(crate) fn vint(&mut self) -> Parsed<u64> {
        get_vint(self.data, &mut self.pos).ok_or(FormatError("truncated number"))
    }

    pub(crate) fn usize(&mut self) -> Parsed<usize> {
        usize::try_from(self.vint()?).map_err(|_| FormatError("number out of range"))
    }

    pub(crate) fn u32(&mut self) -> Parsed<u32> {
        u32::try_from(self.vint()?).map_err(|_| FormatError("number out of range"))
    }

    /// A count of items each taking at least `min_bytes`: bounded by the
    /// data, so a damaged count cannot make a reader allocate.
    pub(crate) fn count(&mut self, min_bytes: usize) -> Parsed<usize> {
        let n = usize::try_from(self.vint()?).map_err(|_| FormatError("count out of range"))?;
        if n.saturating_mul(min_bytes) > self.data.len() - self.pos {
            return Err(FormatError("count past the end"));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Parsed<&'a [u8]> {
        get_bytes(self.data, &mut self.pos).ok_or(FormatError("truncated bytes"))
    }

    pub(crate) fn string(&mut self) -> Parsed<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| FormatError("text is not UTF-8"))
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Parsed<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(FormatError("length out of range"))?;
        let bytes = self.data.get(self.pos..end).ok_or(FormatError("truncated data"))?;
        self.pos = end;
        Ok(bytes)
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.data.len()
    }

    pub(crate) fn f32(&mut self) -> Parsed<f32> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub(crate) fn id(&mut self) -> Parsed<FileId> {
        Ok(self.take(8)?.try_into().expect("8 bytes"))
    }

    fn front_coded(&mut self, previous: &str) -> Parsed<String> {
        let shared = usize::try_from(self.vint()?).map_err(|_| FormatError("term prefix out of range"))?;
        let prefix = previous.as_bytes().get(..shared).ok_or(FormatError("term prefix out of range"))?;
        let mut term = prefix.to_vec();
        term.extend_from_slice(self.bytes()?);
        String::from_utf8(term).map_err(|_| FormatError("term is not UTF-8"))
    }
}

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = META_MAGIC.to_vec();
        put_vint(&mut out, u64::from(self.docs));
        put_vint(&mut out, self.tokens);
        out.extend_from_slice(&self.fragments);
        for &len in &self.doc_lens {
            put_vint(&mut out, u64::from(len));
        }
        out.extend_from_slice(&self.shard_set);
        put_vint(&mut out, self.shards.len() as u64);
        let mut previous = "";
        for shard in &self.shards {
            put_front_coded(&mut out, previous, &shard.first);
            previous = &shard.first;
        }
        put_vint(&mut out, self.filters.len() as u64);
        for (key, values) in &self.filters {
            put_bytes(&mut out, key.as_bytes());
            put_vint(&mut out, values.len() as u64);
            for (value, docs) in values {
                put_bytes(&mut out, value.as_bytes());
                put_vint(&mut out, docs.len() as u64);
                let mut last = 0;
                for &doc in docs {
                    put_vint(&mut out, u64::from(doc - last));
                    last = doc;
                }
            }
        }
        // Optional and last, so a bundle without metadata is byte for byte
        // what it was before metadata existed.
        if let Some(id) = &self.metadata {
            put_vint(&mut out, 1);
            out.extend_from_slice(id);
        }
        out
    }

    pub fn decode(data: &[u8]) -> Parsed<Meta> {
        let mut c = Cursor::open(data, META_MAGIC, "not a qmd site meta file, or another version")?;
        let docs = c.u32()?;
        let tokens = c.vint()?;
        let fragments = c.id()?;
        if docs as usize > data.len() {
            return Err(FormatError("document count past the end"));
        }
        let doc_lens = (0..docs).map(|_| c.u32()).collect::<Parsed<Vec<_>>>()?;
        let shard_set = c.id()?;
        let shard_count = c.count(2)?;
        let mut shards: Vec<ShardRef> = Vec::with_capacity(shard_count);
        for _ in 0..shard_count {
            let first = c.front_coded(shards.last().map_or("", |s| &s.first))?;
            if shards.last().is_some_and(|s| s.first >= first) {
                return Err(FormatError("shards out of order"));
            }
            shards.push(ShardRef { first });
        }
        let mut filters = BTreeMap::new();
        for _ in 0..c.count(2)? {
            let key = c.string()?;
            let mut values = BTreeMap::new();
            for _ in 0..c.count(2)? {
                let value = c.string()?;
                let n = c.count(1)?;
                let mut list = Vec::with_capacity(n);
                let mut doc = 0u32;
                for _ in 0..n {
                    doc = doc
                        .checked_add(c.u32()?)
                        .filter(|&d| d < docs)
                        .ok_or(FormatError("filter doc out of range"))?;
                    list.push(doc);
                }
                values.insert(value, list);
            }
            filters.insert(key, values);
        }
        let metadata = match c.at_end() {
            true => None,
            false if c.vint()? == 1 => Some(c.id()?),
            false => return Err(FormatError("unknown field after the filters")),
        };
        Ok(Meta { docs, tokens, fragments, doc_lens, shard_set, shards, filters, metadata })
    }

    /// The shard whose range holds `term`.
    pub fn shard_of(&self, term: &str) -> Option<usize> {
        self.shards.partition_point(|s| s.first.as_str() <= term).checked_sub(1)
    }

    /// Shards holding terms that start with `prefix`.
    pub fn shards_with_prefix(&self, prefix: &str) -> Range<usize> {
        let start = self.shard_of(prefix).unwrap_or(0);
        let end = (start + 1..self.shards.len()).find(|&j| !self.shards[j].first.starts_with(prefix));
        start..end.unwrap_or(self.shards.len())
    }
}

/// Encodes one term shard and its positions shard from `(term, df,
/// postings, positions)` in term order, each sealed with its checksum.
pub fn encode_shard(terms: &[(String, u32, Vec<u8>, Vec<u8>)]) -> (Vec<u8>, Vec<u8>) {
    let mut head = TERMS_MAGIC.to_vec();
    let mut pos_head = POSITIONS_MAGIC.to_vec();
    put_vint(&mut head, terms.len() as u64);
    put_vint(&mut pos_head, terms.len() as u64);
    let mut previous = "";
    for (term, df, postings, positions) in terms {
        put_front_coded(&mut head, previous, term);
        put_vint(&mut head, u64::from(*df));
        put_vint(&mut head, postings.len() as u64);
        put_vint(&mut pos_head, positions.len() as u64);
        previous = term;
    }
    for (_, _, postings, positions) in terms {
        head.extend_from_slice(postings);
        pos_head.extend_from_slice(positions);
    }
    (sealed(head), sealed(pos_head))
}

/// Lengths laid end to end from `start`, checked against `total`.
fn ranges(lengths: &[usize], start: usize, total: usize) -> Parsed<Vec<Range<usize>>> {
    let mut at = start;
    let mut out = Vec::with_capacity(lengths.len());
    for &len in lengths {
        let end = at.checked_add(len).filter(|&e| e <= total).ok_or(FormatError("term data past the end"))?;
        out.push(at..end);
        at = end;
    }
    Ok(out)
}

impl TermShard {
    pub fn decode(data: Vec<u8>) -> Parsed<TermShard> {
        let data = unsealed(data)?;
        let mut c = Cursor::open(&data, TERMS_MAGIC, "not a qmd terms file, or another version")?;
        let n = c.count(4)?;
        let mut heads = Vec::with_capacity(n);
        let mut previous = String::new();
        for _ in 0..n {
            let term = c.front_coded(&previous)?;
            let df = c.u32()?;
            let len = usize::try_from(c.vint()?).map_err(|_| FormatError("length out of range"))?;
            previous.clone_from(&term);
            heads.push((term, df, len));
        }
        let lengths: Vec<usize> = heads.iter().map(|h| h.2).collect();
        let ranges = ranges(&lengths, c.pos, data.len())?;
        let terms =
            heads.into_iter().zip(ranges).map(|((term, df, _), postings)| ShardTerm { term, df, postings }).collect();
        Ok(TermShard { terms, bytes: data })
    }

    /// Index of `term` in this shard.
    pub fn find(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| t.term.as_str().cmp(term)).ok()
    }
}

impl PositionsShard {
    pub fn decode(data: Vec<u8>) -> Parsed<PositionsShard> {
        let data = unsealed(data)?;
        let mut c = Cursor::open(&data, POSITIONS_MAGIC, "not a qmd positions file, or another version")?;
        let n = c.count(1)?;
        let lengths = (0..n)
            .map(|_| usize::try_from(c.vint()?).map_err(|_| FormatError("length out of range")))
            .collect::<Parsed<Vec<_>>>()?;
        let ranges = ranges(&lengths, c.pos, data.len())?;
        Ok(PositionsShard { ranges, bytes: data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        let mut filters = BTreeMap::new();
        filters.insert("platform".to_string(), BTreeMap::from([("linux".to_string(), vec![0, 2])]));
        Meta {
            docs: 3,
            tokens: 42,
            fragments: [7; 8],
            doc_lens: vec![10, 20, 12],
            shard_set: [1; 8],
            shards: ["", "file", "files", "zip"].map(|first| ShardRef { first: first.into() }).to_vec(),
            filters,
            metadata: Some([11; 8]),
        }
    }

    #[test]
    fn meta_round_trips_and_finds_shards() {
        let m = meta();
        assert_eq!(Meta::decode(&m.encode()).unwrap(), m);
        assert_eq!(m.shard_of("apple"), Some(0));
        assert_eq!(m.shard_of("file"), Some(1));
        assert_eq!(m.shard_of("filet"), Some(2));
        assert_eq!(m.shard_of("zzz"), Some(3));
        assert_eq!(m.shards_with_prefix("fil"), 0..3, "a prefix spans every shard its terms may be in");
        assert_eq!(m.shards_with_prefix("zip"), 3..4);
    }

    #[test]
    fn file_ids_parse_back_from_their_names_alone() {
        for seed in 0..64u8 {
            let id = file_id(&[seed; 3]);
            assert_eq!(parse_id_hex(&id_hex(&id)), Some(id));
        }
        let hex = id_hex(&[0xab, 0x01, 0xff, 0, 0x10, 0x9c, 0x7e, 0x5d]);
        assert_eq!(hex, "ab01ff00109c7e5d");
        // One spelling per id: no capitals, signs, spaces or other lengths.
        for other in [
            "AB01FF00109C7E5D",
            "ab01ff00109c7e5",
            "ab01ff00109c7e5d0",
            "+b01ff00109c7e5d",
            "ab01ff00109c7e5g",
            " b01ff00109c7e5d",
            "",
        ] {
            assert_eq!(parse_id_hex(other), None, "{other:?}");
        }
    }

    #[test]
    fn shards_round_trip() {
        let terms = vec![
            ("file".to_string(), 2, vec![0, 1, 3, 1, 1, 1], vec![0, 4, 2]),
            ("filenam".to_string(), 1, vec![2, 4, 1], vec![7]),
        ];
        let (t, p) = encode_shard(&terms);
        let shard = TermShard::decode(t).unwrap();
        assert_eq!(shard.terms.len(), 2);
        assert_eq!(shard.terms[1].term, "filenam");
        assert_eq!(&shard.bytes[shard.terms[0].postings.clone()], &terms[0].2[..]);
        assert_eq!(shard.find("filenam"), Some(1));
        let positions = PositionsShard::decode(p).unwrap();
        assert_eq!(&positions.bytes[positions.ranges[1].clone()], &[7]);
    }

    #[test]
    fn damaged_files_are_errors_not_panics() {
        let bytes = meta().encode();
        // The one cut that decodes: just before the optional metadata
        // field, which a bundle without metadata leaves out.
        let without = Meta { metadata: None, ..meta() };
        let optional_from = without.encode().len();
        for cut in 0..bytes.len() {
            match cut == optional_from {
                true => assert_eq!(Meta::decode(&bytes[..cut]).unwrap(), without),
                false => assert!(Meta::decode(&bytes[..cut]).is_err(), "cut at {cut}"),
            }
        }
        let mut unknown = without.encode();
        unknown.push(2);
        assert!(Meta::decode(&unknown).is_err(), "an unknown trailing field");
        for i in META_MAGIC.len()..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0xff;
            let _ = Meta::decode(&damaged);
        }
        let (t, _) = encode_shard(&[("a".into(), 1, vec![0, 4, 1], vec![0])]);
        for cut in 0..t.len() {
            assert!(TermShard::decode(t[..cut].to_vec()).is_err());
        }
        assert!(TermShard::decode(sealed(b"QMDTERM1\xff\xff\xff\xff\x0f".to_vec())).is_err());
        for i in 0..t.len() {
            let mut flipped = t.clone();
            flipped[i] ^= 0x10;
            assert!(TermShard::decode(flipped).is_err(), "byte {i} changed");
        }
    }
}
