//! A document's [`Extraction`] as a segment stores it, so that filters and
//! `status` read a few bytes per document instead of its whole text: empty
//! for a document with neither metadata nor an error, else a tag byte and
//! the metadata as compact JSON (`m`) or the error text (`e`).

use super::{Extraction, Metadata};

const TAG_METADATA: u8 = b'm';
const TAG_ERROR: u8 = b'e';

pub fn encode(extraction: &Extraction) -> Vec<u8> {
    if let Some(error) = &extraction.error {
        let mut out = vec![TAG_ERROR];
        out.extend_from_slice(error.as_bytes());
        return out;
    }
    if extraction.metadata.is_empty() {
        return Vec::new();
    }
    let mut out = vec![TAG_METADATA];
    out.extend_from_slice(super::to_json(&extraction.metadata).to_string().as_bytes());
    out
}

/// The stored form back; `None` when the bytes are not one that
/// [`encode`] writes (the caller reports damage).
pub fn decode(bytes: &[u8]) -> Option<Extraction> {
    let Some((&tag, rest)) = bytes.split_first() else { return Some(Extraction::default()) };
    match tag {
        TAG_ERROR => {
            Some(Extraction { metadata: Metadata::new(), error: Some(std::str::from_utf8(rest).ok()?.into()) })
        }
        TAG_METADATA => {
            let metadata = super::from_json(serde_json::from_slice(rest).ok()?)?;
            Some(Extraction { metadata, error: None })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::extract;

    #[test]
    fn round_trips_what_extraction_gives() {
        for text in [
            "# none\n",
            "---\ntitle: x\n---\n",
            "---\nqmd:\n  metadata:\n    status: published\n    priority: 3\n    score: 0.25\n    draft: false\n    topics: [rust, wasm]\n    years: [2024, 2025]\n---\n",
            "---\nqmd:\n  metadata:\n    nested: {a: 1}\n---\n",
        ] {
            let extraction = extract("a.md", text);
            assert_eq!(decode(&encode(&extraction)), Some(extraction), "{text}");
        }
        assert!(encode(&extract("a.md", "# none\n")).is_empty(), "no metadata costs no bytes");
    }

    #[test]
    fn refuses_bytes_it_never_writes() {
        for bad in [&b"x"[..], b"m", b"m{}", b"m[1]", b"m{\"a\":null}", b"m{\"a\":[1,\"b\"]}", b"m{\"a\":[]}", b"e\xff"]
        {
            assert_eq!(decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
