//! The pairwise merge llama.cpp's SentencePiece and BPE tokenizers share
//! (`llm_tokenizer_spm_session`, `llm_tokenizer_bpe_session`): a word's
//! characters start as symbols, and the adjacent pair with the highest
//! priority merges first, the leftmost of equals, until no adjacent pair
//! has one. The vocabularies differ only in the priority: a piece's score
//! (SentencePiece) or a merge's rank (BPE).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// The byte ranges of `text`'s symbols after merging, in order.
/// `priority(left, right, joined)` is the pair's priority (`joined` is the
/// two side by side), `None` where it cannot merge.
pub fn merge_pairs<P: Ord>(text: &str, mut priority: impl FnMut(&str, &str, &str) -> Option<P>) -> Vec<Range<usize>> {
    // Symbols are byte ranges of `text`, linked so merged ones drop out.
    let mut symbols: Vec<Symbol> = Vec::new();
    for (start, c) in text.char_indices() {
        let i = symbols.len();
        symbols.push(Symbol { start, len: c.len_utf8(), prev: i.checked_sub(1), next: Some(i + 1) });
    }
    if let Some(last) = symbols.last_mut() {
        last.next = None;
    }
    let mut pair = |symbols: &[Symbol], left: Option<usize>, right: Option<usize>| {
        let (left, right) = (left?, right?);
        let (l, r) = (&symbols[left], &symbols[right]);
        let (l_text, r_text) = (&text[l.start..l.start + l.len], &text[r.start..r.start + r.len]);
        let p = priority(l_text, r_text, &text[l.start..r.start + r.len])?;
        Some((p, Reverse(left), right, l.len + r.len))
    };
    let mut queue = BinaryHeap::new();
    for i in 1..symbols.len() {
        queue.extend(pair(&symbols, Some(i - 1), Some(i)));
    }
    while let Some((_, Reverse(left), right, len)) = queue.pop() {
        let (l, r) = (&symbols[left], &symbols[right]);
        // Stale: one side has merged since this pair was queued.
        if l.len == 0 || r.len == 0 || l.len + r.len != len {
            continue;
        }
        let right_next = r.next;
        symbols[left].len = len;
        symbols[right].len = 0;
        symbols[left].next = right_next;
        if let Some(n) = right_next {
            symbols[n].prev = Some(left);
        }
        queue.extend(pair(&symbols, symbols[left].prev, Some(left)));
        queue.extend(pair(&symbols, Some(left), right_next));
    }
    let mut out = Vec::new();
    let mut at = (!symbols.is_empty()).then_some(0);
    while let Some(i) = at {
        out.push(symbols[i].start..symbols[i].start + symbols[i].len);
        at = symbols[i].next;
    }
    out
}

struct Symbol {
    start: usize,
    /// Bytes; 0 once merged into the symbol on its left.
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}
