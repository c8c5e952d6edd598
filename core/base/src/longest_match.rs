//! WordPiece's split of one word: greedy longest-match-first pieces, every
//! piece after the first looked up with the continuation prefix (`##`).
//! The one implementation for the page's vocabulary and the models' GGUF
//! WordPiece vocabularies.
//!
//! Candidates are never longer than the vocabulary's longest entry, as in
//! llama.cpp: the pieces are the same as the unbounded search (a longer
//! candidate cannot be in the vocabulary), but a word costs its length
//! times that bound, where trying every end from the word's last
//! character made one 8,000-character word take 13 s (cubic in its
//! length).

/// A word's pieces as `(id, start, end)` byte ranges of `word`, appended to
/// `out`; `false` (with `out` as it was) when some part of the word matches
/// no piece. `longest` is the longest vocabulary entry in bytes.
pub fn longest_match_first(
    word: &str,
    prefix: &str,
    longest: usize,
    lookup: impl Fn(&str) -> Option<u32>,
    out: &mut Vec<(u32, usize, usize)>,
) -> bool {
    let before = out.len();
    let mut candidate = String::new();
    let mut start = 0;
    while start < word.len() {
        let mut end = floor_char_boundary(word, start.saturating_add(longest).min(word.len()));
        let mut found = None;
        while end > start {
            candidate.clear();
            if start > 0 {
                candidate.push_str(prefix);
            }
            candidate.push_str(&word[start..end]);
            if let Some(id) = lookup(&candidate) {
                found = Some(id);
                break;
            }
            end = floor_char_boundary(word, end - 1);
        }
        match found {
            Some(id) => out.push((id, start, end)),
            None => {
                out.truncate(before);
                return false;
            }
        }
        start = end;
    }
    true
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn vocabulary(pieces: &[&str]) -> HashMap<String, u32> {
        pieces.iter().enumerate().map(|(i, p)| (p.to_string(), i as u32)).collect()
    }

    fn split(word: &str, vocab: &HashMap<String, u32>) -> Option<Vec<u32>> {
        let longest = vocab.keys().map(String::len).max().unwrap_or(0);
        let mut out = vec![(99, 0, 0)];
        let whole = longest_match_first(word, "##", longest, |p| vocab.get(p).copied(), &mut out);
        assert_eq!(out[0], (99, 0, 0), "what was in out stays");
        whole.then(|| out[1..].iter().map(|p| p.0).collect())
    }

    #[test]
    fn longest_pieces_first_continuations_prefixed() {
        let vocab = vocabulary(&["un", "una", "##ff", "##able", "##a", "é", "##té", "##b"]);
        assert_eq!(split("unaffable", &vocab), Some(vec![1, 2, 3]));
        assert_eq!(split("éété", &vocab), None, "no piece for the second é");
        assert_eq!(split("étéb", &vocab), Some(vec![5, 6, 7]), "multi-byte pieces cut at characters");
        assert_eq!(split("unx", &vocab), None);
        assert_eq!(split("", &vocab), Some(vec![]));
    }

    /// The bound changes no piece: the same split as trying every end.
    #[test]
    fn bounded_candidates_give_the_unbounded_split() {
        let vocab = vocabulary(&["a", "ab", "abc", "##a", "##b", "##bc", "##cab", "##c"]);
        let unbounded = |word: &str| {
            let mut out = Vec::new();
            longest_match_first(word, "##", usize::MAX, |p| vocab.get(p).copied(), &mut out).then_some(out)
        };
        let mut word = String::new();
        for i in 0..200 {
            word.push(['a', 'b', 'c'][(i * 7 + i / 3) % 3]);
            let longest = vocab.keys().map(String::len).max().unwrap();
            let mut bounded = Vec::new();
            let ok = longest_match_first(&word, "##", longest, |p| vocab.get(p).copied(), &mut bounded);
            assert_eq!(ok.then_some(bounded), unbounded(&word), "{word}");
        }
    }

    /// A word costs its length times the longest piece: 2 MB of one word
    /// is split in well under a second (the unbounded search took 13 s for
    /// 8 KB).
    #[test]
    fn one_long_word_costs_its_length() {
        let vocab = vocabulary(&["x", "##x", "##y", "##xy"]);
        let word = "xy".repeat(1 << 20);
        let started = std::time::Instant::now();
        let pieces = split(&word, &vocab).expect("splits");
        assert_eq!(pieces.len(), (1 << 20) + 1, "x, ##y, then ##xy");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
    }
}
