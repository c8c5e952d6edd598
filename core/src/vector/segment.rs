//! A vector segment file (`vec-NNNNNN.qvec`): the chunk vectors of a set
//! of document contents, keyed by content hash like qmd's `content_vectors`
//! (identical files share vectors; a rename re-embeds nothing).
//!
//! ```text
//! "QMDVEC02"  dim u32  docs u32  rows u32
//! docs × (hash: 64 ASCII bytes, first_row u32, rows u32, crc32 of its f32 rows u32)
//! rows × (pos u32, scale f32)          chunk char offset, int8 scale
//! rows × dim i8                        codes: scanned for every query
//! rows × dim f32                       exact vectors: read for rescoring
//! ```
//! Everything up to the f32 block is loaded at open and checked against the
//! crc32 in the manifest; the f32 rows are read one content at a time, only
//! for candidates, and checked against that content's crc32. A content with no text has zero rows
//! (so it is not pending again). Written once, named by the manifest only
//! after it is complete, like text segments.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::quantize::quantize;
use crate::directory::Directory;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"QMDVEC02";
const HEADER: usize = 8 + 12;
const HASH_LEN: usize = 64;
const DOC_ENTRY: usize = HASH_LEN + 12;
const ROW_ENTRY: usize = 8;

/// qmd's error when the model's dimension differs from the index's.
pub fn dimension_mismatch(existing: usize, produced: usize) -> Error {
    Error::invalid(format!(
        "Embedding dimension mismatch: existing vectors are {existing}d but the current model produces {produced}d. Run 'qmd embed -f' to re-embed with the new model."
    ))
}

/// A vector segment as the manifest lists it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VectorSegmentMeta {
    pub file: String,
    pub docs: u32,
    pub rows: u32,
    /// crc32 of everything before the f32 rows.
    pub crc32: u32,
}

/// One embedded chunk of a document content.
pub struct ChunkVector {
    /// Character offset of the chunk in the body.
    pub pos: u32,
    pub vector: Vec<f32>,
}

#[derive(Default)]
pub struct VectorSegmentBuilder {
    dim: usize,
    docs: Vec<(String, u32, u32)>,
    rows: Vec<(u32, f32)>,
    codes: Vec<i8>,
    floats: Vec<f32>,
}

impl VectorSegmentBuilder {
    pub fn new(dim: usize) -> Self {
        VectorSegmentBuilder { dim, ..Default::default() }
    }

    pub fn add(&mut self, hash: &str, chunks: &[ChunkVector]) -> Result<()> {
        if hash.len() != HASH_LEN {
            return Err(Error::invalid(format!("content hash must be {HASH_LEN} hex characters: {hash}")));
        }
        if let Some(chunk) = chunks.iter().find(|c| c.vector.len() != self.dim) {
            return Err(dimension_mismatch(self.dim, chunk.vector.len()));
        }
        self.docs.push((hash.to_string(), self.rows.len() as u32, chunks.len() as u32));
        for chunk in chunks {
            let (codes, scale) = quantize(&chunk.vector);
            self.rows.push((chunk.pos, scale));
            self.codes.extend(codes);
            self.floats.extend(&chunk.vector);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn finish(self, file: &str) -> (Vec<u8>, VectorSegmentMeta) {
        let rows = self.rows.len();
        let mut out = Vec::with_capacity(HEADER + self.docs.len() * DOC_ENTRY + rows * (ROW_ENTRY + self.dim * 5));
        out.extend(MAGIC);
        for n in [self.dim, self.docs.len(), rows] {
            out.extend((n as u32).to_le_bytes());
        }
        let floats: Vec<u8> = self.floats.iter().flat_map(|f| f.to_le_bytes()).collect();
        let row_bytes = self.dim * 4;
        for (hash, first, n) in &self.docs {
            out.extend(hash.as_bytes());
            out.extend(first.to_le_bytes());
            out.extend(n.to_le_bytes());
            let rows = &floats[*first as usize * row_bytes..(*first + *n) as usize * row_bytes];
            out.extend(crc32fast::hash(rows).to_le_bytes());
        }
        for (pos, scale) in &self.rows {
            out.extend(pos.to_le_bytes());
            out.extend(scale.to_le_bytes());
        }
        out.extend(self.codes.iter().map(|c| *c as u8));
        let crc32 = crc32fast::hash(&out);
        out.extend(floats);
        let meta = VectorSegmentMeta { file: file.to_string(), docs: self.docs.len() as u32, rows: rows as u32, crc32 };
        (out, meta)
    }
}

/// One content's rows in a segment.
#[derive(Clone, Debug)]
pub struct ContentRows {
    pub hash: String,
    pub first: u32,
    pub rows: u32,
    crc32: u32,
}

/// An open vector segment: tables and int8 codes in memory.
pub struct VectorSegment {
    dir: Rc<dyn Directory>,
    pub meta: VectorSegmentMeta,
    pub dim: usize,
    pub contents: Vec<ContentRows>,
    pub positions: Vec<u32>,
    pub scales: Vec<f32>,
    pub codes: Vec<i8>,
    floats_at: u64,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

impl VectorSegment {
    pub fn open(dir: Rc<dyn Directory>, meta: VectorSegmentMeta, dim: usize) -> Result<VectorSegment> {
        let shown = dir.describe(&meta.file);
        let corrupt = |why: &str| Error::corrupt(&shown, why.to_string());
        let (docs, rows) = (meta.docs as u64, meta.rows as u64);
        let tables = HEADER as u64 + docs * DOC_ENTRY as u64 + rows * ROW_ENTRY as u64;
        let total = tables + rows * dim as u64 * 5;
        // The size first: a damaged count must not become a huge read.
        let size = dir.size(&meta.file).map_err(|e| e.missing_is_damage(&shown))?;
        if size != total {
            return Err(corrupt(&format!("the file has {size} bytes, the manifest says {total}")));
        }
        usize::try_from(total).map_err(|_| corrupt("the file is larger than memory"))?;
        let (docs, rows, tables) = (docs as usize, rows as usize, tables as usize);
        let bytes = dir.read_range(&meta.file, 0, tables + rows * dim)?;
        if crc32fast::hash(&bytes) != meta.crc32 {
            return Err(corrupt("checksum mismatch"));
        }
        if bytes.len() != tables + rows * dim || &bytes[..8] != MAGIC {
            return Err(corrupt("not a vector segment, or truncated"));
        }
        if [u32_at(&bytes, 8) as usize, u32_at(&bytes, 12) as usize, u32_at(&bytes, 16) as usize] != [dim, docs, rows] {
            return Err(corrupt("header does not match the manifest"));
        }
        let mut contents = Vec::with_capacity(docs);
        for d in 0..docs {
            let at = HEADER + d * DOC_ENTRY;
            let hash = std::str::from_utf8(&bytes[at..at + HASH_LEN]).map_err(|_| corrupt("bad content hash"))?;
            let (first, n) = (u32_at(&bytes, at + HASH_LEN), u32_at(&bytes, at + HASH_LEN + 4));
            // In u64: on wasm32 a usize sum of two u32s can wrap.
            if first as u64 + n as u64 > rows as u64 {
                return Err(corrupt("row range out of bounds"));
            }
            let crc32 = u32_at(&bytes, at + HASH_LEN + 8);
            contents.push(ContentRows { hash: hash.to_string(), first, rows: n, crc32 });
        }
        let row_table = HEADER + docs * DOC_ENTRY;
        let positions = (0..rows).map(|r| u32_at(&bytes, row_table + r * ROW_ENTRY)).collect();
        let scales: Vec<f32> =
            (0..rows).map(|r| f32::from_bits(u32_at(&bytes, row_table + r * ROW_ENTRY + 4))).collect();
        // A scale multiplies every score of its row: one infinite scale
        // would rank its content first for every query.
        if let Some(row) = scales.iter().position(|s| !s.is_finite()) {
            return Err(corrupt(&format!("row {row}'s scale is not a finite number")));
        }
        let codes = bytes[tables..].iter().map(|b| *b as i8).collect();
        Ok(VectorSegment {
            dir,
            meta,
            dim,
            contents,
            positions,
            scales,
            codes,
            floats_at: (tables + rows * dim) as u64,
        })
    }

    pub fn codes(&self, row: usize) -> &[i8] {
        &self.codes[row * self.dim..(row + 1) * self.dim]
    }

    /// The exact vectors of one content's rows: one read, as its rows are
    /// contiguous in the file.
    pub fn exact(&self, content: &ContentRows) -> Result<Vec<Vec<f32>>> {
        let (first, rows) = (content.first as usize, content.rows as usize);
        let len = rows * self.dim * 4;
        let bytes = self.dir.read_range(&self.meta.file, self.floats_at + (first * self.dim * 4) as u64, len)?;
        if bytes.len() != len || crc32fast::hash(&bytes) != content.crc32 {
            return Err(Error::corrupt(&self.dir.describe(&self.meta.file), "checksum mismatch in vector rows"));
        }
        let floats: Vec<f32> =
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
        if floats.iter().any(|x| !x.is_finite()) {
            return Err(Error::corrupt(
                &self.dir.describe(&self.meta.file),
                "a vector row holds a number that is not finite",
            ));
        }
        Ok(floats.chunks(self.dim.max(1)).map(<[f32]>::to_vec).collect())
    }

    /// All rows of one content, exact (for merging).
    pub fn content_vectors(&self, content: &ContentRows) -> Result<Vec<ChunkVector>> {
        let vectors = self.exact(content)?;
        let positions = &self.positions[content.first as usize..(content.first + content.rows) as usize];
        Ok(positions.iter().zip(vectors).map(|(&pos, vector)| ChunkVector { pos, vector }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RamDirectory;

    #[test]
    fn round_trip() {
        let dir: Rc<dyn Directory> = Rc::new(RamDirectory::new());
        let mut builder = VectorSegmentBuilder::new(3);
        let h = |c: char| c.to_string().repeat(64);
        builder.add(&h('a'), &[ChunkVector { pos: 0, vector: vec![1.0, 0.0, 0.0] }]).unwrap();
        builder.add(&h('b'), &[]).unwrap();
        builder
            .add(
                &h('c'),
                &[
                    ChunkVector { pos: 0, vector: vec![0.0, 0.6, 0.8] },
                    ChunkVector { pos: 700, vector: vec![0.0, -1.0, 0.0] },
                ],
            )
            .unwrap();
        let err = builder.add(&h('d'), &[ChunkVector { pos: 0, vector: vec![1.0] }]).unwrap_err();
        assert!(err.to_string().contains("Embedding dimension mismatch: existing vectors are 3d"), "{err}");
        let (bytes, meta) = builder.finish("vec-000001.qvec");
        dir.write(&meta.file, &bytes).unwrap();
        let segment = VectorSegment::open(dir.clone(), meta.clone(), 3).unwrap();
        assert_eq!(segment.contents.len(), 3, "the refused content is not added");
        assert_eq!(segment.contents[2].rows, 2);
        assert_eq!(segment.positions, vec![0, 0, 700]);
        assert_eq!(segment.exact(&segment.contents[2]).unwrap()[0], vec![0.0, 0.6, 0.8]);
        assert_eq!(segment.codes(2), &[0, -127, 0]);
        assert!(VectorSegment::open(dir, meta, 4).is_err(), "wrong dimension is refused");
    }

    /// A hand-made file whose checksums are right but whose numbers are
    /// not: row ranges that wrap a 32-bit sum, scales and rows that are not
    /// finite. Each is refused as damage, never used.
    #[test]
    fn forged_counts_and_numbers_are_damage() {
        let mut builder = VectorSegmentBuilder::new(2);
        builder.add(&"a".repeat(64), &[ChunkVector { pos: 0, vector: vec![0.6, 0.8] }]).unwrap();
        let (bytes, meta) = builder.finish("vec-000001.qvec");
        let tables = HEADER + DOC_ENTRY + ROW_ENTRY;
        let open = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut forged = bytes.clone();
            edit(&mut forged);
            let mut meta = meta.clone();
            meta.crc32 = crc32fast::hash(&forged[..tables + 2]);
            let dir: Rc<dyn Directory> = Rc::new(RamDirectory::new());
            dir.write(&meta.file, &forged).unwrap();
            let segment = VectorSegment::open(dir, meta, 2)?;
            let content = segment.contents[0].clone();
            segment.exact(&content).map(|_| ())
        };
        let put = |at: usize, value: u32| move |b: &mut Vec<u8>| b[at..at + 4].copy_from_slice(&value.to_le_bytes());
        open(&|_| {}).unwrap();
        let first = HEADER + HASH_LEN;
        let wrapped = open(&|b| {
            put(first, u32::MAX)(b);
            put(first + 4, 1)(b);
        });
        assert!(wrapped.unwrap_err().to_string().contains("row range out of bounds"));
        let scale = open(&put(HEADER + DOC_ENTRY + 4, f32::INFINITY.to_bits())).unwrap_err();
        assert!(scale.to_string().contains("scale is not a finite number"), "{scale}");
        // The exact row is checked by its content's crc: forge that too.
        let row = open(&|b| {
            put(tables + 2, f32::NAN.to_bits())(b);
            let crc = crc32fast::hash(&b[tables + 2..tables + 10]);
            put(first + 8, crc)(b);
        });
        assert!(row.unwrap_err().to_string().contains("not finite"));
    }
}
