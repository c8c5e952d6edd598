//! Exact nearest-neighbour search over one index's vectors.
//!
//! Every allowed row is scored by its int8 codes (one pass over contiguous
//! memory); the best few candidates per requested result are rescored with
//! their f32 vectors. Results are per content (its best chunk), as qmd's
//! vector search returns the best chunk per document.

use std::collections::HashMap;

use super::VectorSet;
use super::quantize::{dot_f32, dot_i8, quantize};
use crate::error::Result;

/// Candidates rescored exactly, per result asked for.
const RESCORE_FACTOR: usize = 4;

#[derive(Clone, Debug, PartialEq)]
pub struct VectorMatch {
    pub hash: String,
    /// Cosine similarity of the best chunk (vectors are unit length).
    pub score: f32,
    /// Character offset of that chunk in the body.
    pub pos: u32,
}

/// The `limit` contents nearest to `query` (a unit vector), among those
/// `allowed` accepts.
pub fn search(
    set: &VectorSet,
    query: &[f32],
    allowed: &dyn Fn(&str) -> bool,
    limit: usize,
) -> Result<Vec<VectorMatch>> {
    let (query_codes, query_scale) = quantize(query);
    // (approximate score, segment, content index), best chunk per content.
    let mut approx: Vec<(f32, usize, usize)> = Vec::new();
    for (s, segment) in set.segments.iter().enumerate() {
        for (c, content) in segment.contents.iter().enumerate() {
            if content.rows == 0 || !allowed(&content.hash) {
                continue;
            }
            let best = (content.first..content.first + content.rows)
                .map(|r| dot_i8(segment.codes(r as usize), &query_codes) as f32 * segment.scales[r as usize])
                .fold(f32::MIN, f32::max);
            approx.push((best * query_scale, s, c));
        }
    }
    let keep = (limit * RESCORE_FACTOR).min(approx.len());
    if keep < approx.len() {
        approx.select_nth_unstable_by(keep, |a, b| b.0.total_cmp(&a.0));
        approx.truncate(keep);
    }
    let mut exact: HashMap<&str, VectorMatch> = HashMap::new();
    for (_, s, c) in approx {
        let segment = &set.segments[s];
        let content = &segment.contents[c];
        for (r, vector) in (content.first..).zip(segment.exact(content)?) {
            let score = dot_f32(&vector, query);
            let entry = exact.entry(content.hash.as_str()).or_insert(VectorMatch {
                hash: content.hash.clone(),
                score: f32::MIN,
                pos: 0,
            });
            if score > entry.score {
                entry.score = score;
                entry.pos = segment.positions[r as usize];
            }
        }
    }
    let mut matches: Vec<VectorMatch> = exact.into_values().collect();
    matches.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.hash.cmp(&b.hash)));
    matches.truncate(limit);
    Ok(matches)
}
