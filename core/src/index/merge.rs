//! When to merge segments: a small tiered policy. Merging happens inside an
//! update, before its manifest is written, so a merge is as atomic as any
//! other commit.

use super::SegmentMeta;

/// Above this many segments, the smallest are merged.
pub const MAX_SEGMENTS: usize = 8;

/// Text a segment holds before the writer starts another: keeps every
/// segment (built in memory, in a 32-bit address space in wasm) and every
/// merge bounded, however large the files being indexed.
pub const SEGMENT_TEXT_BYTES: usize = 128 << 20;

/// A segment file this large is left alone unless mostly deleted: merging
/// full segments would only rewrite them (the writer splits at
/// [`SEGMENT_TEXT_BYTES`] of text).
pub const FULL_SEGMENT_BYTES: u64 = (SEGMENT_TEXT_BYTES / 2) as u64;

/// Indices of segments to merge into one (empty: nothing to do). Picks
/// segments that are mostly deleted, and when there are too many segments,
/// the smallest ones until at most half the limit would remain.
pub fn merge_candidates(segments: &[SegmentMeta]) -> Vec<usize> {
    let mut picked: Vec<usize> =
        (0..segments.len()).filter(|&i| u64::from(segments[i].deleted) * 2 > u64::from(segments[i].docs)).collect();
    let remaining = segments.len() - picked.len();
    if remaining > MAX_SEGMENTS {
        let mut by_size: Vec<usize> =
            (0..segments.len()).filter(|&i| !picked.contains(&i) && segments[i].bytes() < FULL_SEGMENT_BYTES).collect();
        by_size.sort_by_key(|&i| segments[i].alive());
        picked.extend(by_size.into_iter().take(remaining - MAX_SEGMENTS / 2 + 1));
    }
    if picked.len() == 1 && segments[picked[0]].deleted == 0 {
        picked.clear();
    }
    picked.sort_unstable();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(docs: u32, deleted: u32) -> SegmentMeta {
        SegmentMeta {
            file: String::new(),
            docs,
            tokens: 0,
            collections: vec![],
            sections: vec![],
            deletes: None,
            deleted,
            deletes_crc32: 0,
        }
    }

    #[test]
    fn policy() {
        assert!(merge_candidates(&[seg(10, 0), seg(5, 1)]).is_empty());
        assert_eq!(merge_candidates(&[seg(10, 0), seg(5, 4)]), vec![1], "mostly deleted gets rewritten");
        let many: Vec<SegmentMeta> = (1..=10).map(|i| seg(i * 10, 0)).collect();
        let picked = merge_candidates(&many);
        assert_eq!(picked, vec![0, 1, 2, 3, 4, 5, 6]);
        assert!(many.len() - picked.len() < MAX_SEGMENTS);
    }
}
