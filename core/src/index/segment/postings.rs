//! The postings and positions encodings, decoded from bytes. One decoder
//! for every reader: index segments and a static site's term shards carry
//! the same per-term bytes.

use super::FIELDS;
use crate::index::codec::get_vint;

/// One posting: a document and the term's frequency in each field.
pub type Posting = (u32, [u32; FIELDS]);

/// Positions of a term in one document, per field.
pub type FieldPositions = [Vec<u32>; FIELDS];

/// Decodes `df` postings (`vint doc delta, u8 field mask, vint tf per field
/// in mask`). `None` if the bytes are truncated or name a document at or
/// past `docs`.
pub fn decode_postings(data: &[u8], df: u32, docs: u32) -> Option<Vec<Posting>> {
    // Each posting takes at least two bytes: a damaged df cannot make
    // this allocate more than the data.
    let mut out = Vec::with_capacity((df as usize).min(data.len() / 2));
    let (mut pos, mut doc) = (0usize, 0u32);
    for i in 0..df {
        let delta = get_vint(data, &mut pos)?;
        let next = if i == 0 { Some(delta) } else { u64::from(doc).checked_add(delta) };
        doc = next.and_then(|d| u32::try_from(d).ok()).filter(|&d| d < docs)?;
        let mask = *data.get(pos)?;
        pos += 1;
        let mut tfs = [0u32; FIELDS];
        for (f, tf) in tfs.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *tf = u32::try_from(get_vint(data, &mut pos)?).ok()?;
            }
        }
        out.push((doc, tfs));
    }
    Some(out)
}

/// Decodes the positions aligned with `postings` (per doc, per field: tf
/// vint position deltas). `None` if the bytes are truncated.
pub fn decode_positions(data: &[u8], postings: &[Posting]) -> Option<Vec<FieldPositions>> {
    let mut pos = 0usize;
    let mut out = Vec::with_capacity(postings.len());
    for (_, tfs) in postings {
        let mut fields: FieldPositions = Default::default();
        for (f, &tf) in tfs.iter().enumerate() {
            let mut last = 0u32;
            // A damaged tf cannot make this allocate more than the data.
            fields[f].reserve((tf as usize).min(data.len()));
            for _ in 0..tf {
                let delta = get_vint(data, &mut pos)?;
                last = u32::try_from(delta).ok().and_then(|d| last.checked_add(d))?;
                fields[f].push(last);
            }
        }
        out.push(fields);
    }
    Some(out)
}
