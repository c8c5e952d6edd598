//! How a document body is stored: lz4 blocks of at most [`BLOCK`] bytes of
//! text each, `vint text length, vint compressed length, bytes` per block.
//!
//! Blocks keep every length far from 32-bit limits: lz4's worst-case output
//! size of one 40 MB input overflows `usize` on wasm32 (the engine runs
//! there), and a bounded block bounds what a damaged length can make the
//! decoder allocate.

use crate::index::codec::{get_bytes, get_vint, put_bytes, put_vint};

/// Text bytes per lz4 block.
pub const BLOCK: usize = 1 << 20;

/// Compresses `text` into the stored form.
pub fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 2 + 16);
    for block in text.as_bytes().chunks(BLOCK) {
        put_vint(&mut out, block.len() as u64);
        put_bytes(&mut out, &lz4_flex::block::compress(block));
    }
    out
}

/// The text of a stored body; `Err` names what is wrong with it.
pub fn decode(stored: &[u8]) -> Result<String, String> {
    let mut text = Vec::new();
    let mut pos = 0;
    while pos < stored.len() {
        let len = get_vint(stored, &mut pos).ok_or("truncated body block")? as usize;
        if len > BLOCK {
            return Err(format!("body block of {len} bytes exceeds {BLOCK}"));
        }
        let block = get_bytes(stored, &mut pos).ok_or("truncated body block")?;
        let raw = lz4_flex::block::decompress(block, len).map_err(|e| format!("body block: {e}"))?;
        if raw.len() != len {
            return Err("body block has the wrong length".into());
        }
        text.extend_from_slice(&raw);
    }
    String::from_utf8(text).map_err(|_| "body is not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_across_blocks() {
        for text in ["", "hello", &"abcdefgh".repeat(BLOCK / 3)] {
            assert_eq!(decode(&encode(text)).unwrap(), text);
        }
        let long = "x".repeat(BLOCK * 2 + 5);
        let stored = encode(&long);
        assert_eq!(decode(&stored).unwrap(), long);
        assert!(decode(&stored[..stored.len() - 1]).is_err(), "a truncated body is refused");
    }

    #[test]
    fn damaged_lengths_are_refused_without_allocating() {
        let mut stored = Vec::new();
        put_vint(&mut stored, u64::MAX);
        put_bytes(&mut stored, b"x");
        assert!(decode(&stored).unwrap_err().contains("exceeds"));
    }
}
