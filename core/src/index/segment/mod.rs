//! One immutable segment: a file of sections (layout below), written once by
//! [`SegmentBuilder`] and read lazily by [`SegmentReader`].
//!
//! ```text
//! "QMDSEG2\n"
//! terms      fst: term → ordinal
//! terminfo   per ordinal (+1 sentinel): df u32, postings offset u64, positions offset u64,
//!            crc32 of the term's postings u32, crc32 of its positions u32
//! postings   per term, per doc: vint doc delta, u8 field mask, vint tf per field in mask
//! positions  per term, per doc, per field in mask: tf vint position deltas
//! doclen     per doc: u32 tokens over all fields (FTS5's BM25 uses the row total)
//! doccoll    per doc: u16 collection index (into SegmentMeta::collections)
//! docoffs    per doc (+1 sentinel): u32 offset into `docs`
//! docs       per doc: path, title (vint-prefixed), hash (32 raw bytes), mtime i64,
//!            size, body offset, body length (vints), crc32 of the stored body u32
//! bodies     per doc: lz4 blocks of at most 1 MiB of text (see `body.rs`)
//! metaoffs   per doc (+1 sentinel): u32 offset into `metadata`
//! metadata   per doc: its `qmd.metadata` (see `metadata/stored.rs`); empty
//!            for most. Segments written before it have neither section:
//!            their documents' metadata is read from the stored text.
//! ```
//! Section offsets, lengths and crc32s are in the manifest, so opening an
//! index reads nothing but the manifest. Sections read whole are checked
//! against those; what is read by range (one term's postings and positions,
//! one body) carries its own crc32, so nothing is returned unverified.

pub mod body;
mod builder;
pub mod postings;
pub(crate) mod reader;

pub use builder::{DocInput, SegmentBuilder};
pub use postings::{FieldPositions, Posting};
pub use reader::{DocRecord, SegmentReader, TermInfo};

/// Indexed fields, in BM25 column order.
pub const FIELDS: usize = 3;
pub const FIELD_PATH: usize = 0;
pub const FIELD_TITLE: usize = 1;
pub const FIELD_BODY: usize = 2;

pub(crate) const MAGIC: &[u8] = b"QMDSEG2\n";
pub(crate) const TERMINFO_WIDTH: usize = 28;
