//! Text → tokens, mirroring FTS5's `unicode61` tokenizer (default options)
//! plus qmd's CJK rule, so that indexing and querying split text the same
//! way qmd's SQLite index does.
//!
//! - Token characters are letters, numbers and private-use characters
//!   (unicode61's `L* N* Co`); everything else separates, so `.`, `-`, `_`,
//!   `'` split words, and so do combining marks such as Indic vowel signs.
//! - Characters are case-folded; Latin letters with one diacritic lose it,
//!   which is what unicode61's `remove_diacritics=1` table covers (Greek,
//!   Cyrillic … keep theirs). The combining diacritics unicode61 knows are
//!   dropped inside a word without splitting it.
//! - qmd spaces out every Han/Hiragana/Katakana/Hangul character before FTS5
//!   sees the text, so each such character is a token of its own.
//!
//! ASCII, the bulk of markdown, goes through a byte loop that copies whole
//! runs of word bytes at once.

use super::stem::stem_in_place;
use unicode_normalization::char::is_combining_mark;

/// One analysed token: `term` is the normalised, stemmed index term;
/// `position` counts tokens from 0; `start..end` are BYTE offsets of the
/// original word in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub term: &'a str,
    pub position: u32,
    pub start: usize,
    pub end: usize,
}

/// Reusable analysis state: keeps the word buffer between documents so the
/// indexer allocates once, not once per document.
#[derive(Debug, Default)]
pub struct Analyzer {
    word: String,
}

impl Analyzer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Streams the stemmed tokens of `text` to `emit` (see [`analyze`]).
    pub fn analyze(&mut self, text: &str, mut emit: impl FnMut(Token<'_>)) {
        let mut position = 0u32;
        scan(text, &mut self.word, |word, cjk, start, end| {
            if !cjk {
                stem_in_place(word);
            }
            emit(Token { term: word, position, start, end });
            position = position.wrapping_add(1);
        });
    }
}

/// Streams tokens of `text` to `emit` without allocating per token (reuse
/// internal buffers).
pub fn analyze(text: &str, emit: impl FnMut(Token<'_>)) {
    Analyzer::new().analyze(text, emit);
}

/// Lowercase + diacritic removal of one word, no stemming (used for prefix
/// expansion and snippets). Characters that are not token characters are
/// kept as they are; no splitting happens here.
pub fn normalize(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if !is_diacritic(c) {
            push_folded(c, &mut out);
        }
    }
    out
}

/// Plain words of `text` (normalised, not stemmed), splitting exactly as
/// `analyze` does, CJK chars as single words.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    scan(text, &mut buf, |word, _, _, _| out.push(word.clone()));
    out
}

/// Han, Hiragana, Katakana and Hangul, by Unicode block. qmd matches these
/// scripts with a regex and makes each character a token of its own.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x2E80..=0x2FDF    // CJK Radicals Supplement, Kangxi Radicals
        | 0x3005 | 0x3007    // ideographic iteration mark, ideographic zero
        | 0x3021..=0x3029    // Hangzhou numerals
        | 0x3038..=0x303B    // more Han numerals / marks
        | 0x3040..=0x309F    // Hiragana
        | 0x30A0..=0x30FF    // Katakana
        | 0x3130..=0x318F    // Hangul Compatibility Jamo
        | 0x31F0..=0x31FF    // Katakana Phonetic Extensions
        | 0x3400..=0x4DBF    // CJK Unified Ideographs Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xA960..=0xA97F    // Hangul Jamo Extended-A
        | 0xAC00..=0xD7FF    // Hangul Syllables, Jamo Extended-B
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F    // halfwidth Katakana
        | 0xFFA0..=0xFFDC    // halfwidth Hangul
        | 0x1AFF0..=0x1B16F  // Kana Extended-B, Kana Supplement, Extended-A, Small Kana
        | 0x20000..=0x3FFFF  // CJK Unified Ideographs Extensions B.. and supplements
    )
}

/// unicode61's token characters: general categories `L*`, `N*` and `Co`.
fn is_word_char(c: char) -> bool {
    is_letter_or_number(c) || is_private_use(c)
}

/// General category `L*` or `N*` (regex `[\p{L}\p{N}]`). `is_alphanumeric`
/// also admits `Other_Alphabetic` marks (Indic and Thai vowel signs …) and
/// enclosed letters, which are neither, so those are excluded.
pub fn is_letter_or_number(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && !is_combining_mark(c) && !is_enclosed_letter(c)
}

/// Private-use characters (category `Co`).
fn is_private_use(c: char) -> bool {
    matches!(c as u32, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

/// Circled, parenthesised and squared Latin letters: `So` symbols that
/// Unicode nonetheless calls alphabetic.
fn is_enclosed_letter(c: char) -> bool {
    matches!(c as u32, 0x24B6..=0x24E9 | 0x1F130..=0x1F149 | 0x1F150..=0x1F169 | 0x1F170..=0x1F189)
}

/// The combining marks unicode61 treats as removable diacritics
/// (`sqlite3Fts5UnicodeIsdiacritic`): inside a word they are dropped without
/// splitting it; every other mark separates words.
fn is_diacritic(c: char) -> bool {
    const MASK_LO: u32 = 0x0802_9FDF; // U+0300..=U+031F
    const MASK_HI: u32 = 0x0003_61F8; // U+0320..=U+0331
    match c as u32 {
        cp @ 0x0300..=0x031F => MASK_LO & (1 << (cp - 0x0300)) != 0,
        cp @ 0x0320..=0x0331 => MASK_HI & (1 << (cp - 0x0320)) != 0,
        _ => false,
    }
}

/// unicode61 folds with simple case folding, which differs from lowercase
/// for these lowercase variants (final sigma, Greek symbol forms, long s …).
fn case_fold_variant(c: char) -> char {
    match c {
        'ς' => 'σ',
        'ϐ' => 'β',
        'ϑ' => 'θ',
        'ϕ' => 'φ',
        'ϖ' => 'π',
        'ϰ' => 'κ',
        'ϱ' => 'ρ',
        'ϵ' => 'ε',
        'µ' => 'μ',
        'ſ' => 's',
        'ẛ' => 'ṡ',
        '\u{1FBE}' => 'ι',
        _ => c,
    }
}

/// Appends the folded form of the non-ASCII token char `c`: case-folded,
/// and a Latin letter with exactly one diacritic reduced to its ASCII base
/// (`é` → `e`, but `ǘ`, `ǣ` stay, as in unicode61).
fn push_folded(c: char, out: &mut String) {
    for lc in c.to_lowercase() {
        let lc = case_fold_variant(lc);
        if is_diacritic(lc) {
            continue; // e.g. the dot of `İ` → `i̇`
        }
        out.push(latin_base(lc).unwrap_or(lc));
    }
}

/// The ASCII base of a precomposed Latin letter with exactly one
/// diacritic: its canonical decomposition is that letter and one combining
/// mark. A table rather than the decomposition itself, which would ship
/// Unicode's whole decomposition data (~30 KB) in the site engine; the test
/// `latin_bases_are_the_canonical_decompositions` derives it again.
fn latin_base(c: char) -> Option<char> {
    let table = match c as u32 {
        cp @ 0x00C0..=0x024F => LATIN_1_TO_EXTENDED_B.as_bytes()[(cp - 0x00C0) as usize],
        cp @ 0x1E00..=0x1EFF => LATIN_EXTENDED_ADDITIONAL.as_bytes()[(cp - 0x1E00) as usize],
        _ => return None,
    };
    (table != b'-').then_some(char::from(table))
}

/// U+00C0..=U+024F, one byte each: the ASCII base, or `-` for none.
const LATIN_1_TO_EXTENDED_B: &str = concat!(
    "AAAAAA-CEEEEIIII-NOOOOO--UUUUY--aaaaaa-ceeeeiiii-nooooo--uuuuy-y",
    "AaAaAaCcCcCcCcDd--EeEeEeEeEeGgGgGgGgHh--IiIiIiIiI---JjKk-LlLlLl-",
    "---NnNnNn---OoOoOo--RrRrRrSsSsSsSsTtTt--UuUuUuUuUuUuWwYyYZzZzZz-",
    "--------------------------------Oo-------------Uu---------------",
    "-------------AaIiOoUu-----------------GgKkOo----j---Gg--Nn------",
    "AaAaEeEeIiIiOoOoRrRrUuUuSsTt--Hh------AaEe----Oo--Yy------------",
    "----------------",
);

/// U+1E00..=U+1EFF, as above.
const LATIN_EXTENDED_ADDITIONAL: &str = concat!(
    "AaBbBbBb--DdDdDdDdDd----EeEe--FfGgHhHhHhHhHhIi--KkKkKkLl--LlLlMm",
    "MmMmNnNnNnNn--------PpPpRrRr--RrSsSs------TtTtTtTtUuUuUu----VvVv",
    "WwWwWwWwWwXxXxYyZzZzZzhtwy------AaAa--------------------EeEeEe--",
    "--------IiIiOoOo--------------------UuUu----------YyYyYyYy------",
);

/// Bytes that are ASCII token characters (false for every non-ASCII byte,
/// so the hot loop needs a single lookup per byte).
const fn ascii_word_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    t
}
static ASCII_WORD: [bool; 256] = ascii_word_table();

/// The shared splitter: calls `f(normalised_word, is_cjk, start, end)` for
/// every word, with byte offsets into `text`. The word lives in `buf`, which
/// `f` may modify (stemming in place); it is cleared after each word.
fn scan(text: &str, buf: &mut String, mut f: impl FnMut(&mut String, bool, usize, usize)) {
    let bytes = text.as_bytes();
    // Byte offsets of the open word; `start == usize::MAX` when none is open.
    let mut start = usize::MAX;
    let mut end = 0;
    buf.clear();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if ASCII_WORD[usize::from(b)] {
                // Copy the whole ASCII word run in one go.
                let run_start = i;
                i += bytes[i..].iter().position(|&c| !ASCII_WORD[usize::from(c)]).unwrap_or(bytes.len() - i);
                if start == usize::MAX {
                    start = run_start;
                }
                let from = buf.len();
                buf.push_str(&text[run_start..i]);
                if let Some(s) = buf.get_mut(from..) {
                    s.make_ascii_lowercase();
                }
                end = i;
            } else {
                flush(buf, &mut start, end, &mut f);
                i += 1;
            }
            continue;
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        let next = i + c.len_utf8();
        if is_cjk(c) {
            flush(buf, &mut start, end, &mut f);
            if is_word_char(c) {
                buf.push(c);
                f(buf, true, i, next);
                buf.clear();
            }
        } else if is_diacritic(c) && start != usize::MAX {
            // Continues (and is dropped from) the open word.
            end = next;
        } else if is_word_char(c) {
            if start == usize::MAX {
                start = i;
            }
            push_folded(c, buf);
            end = next;
        } else {
            flush(buf, &mut start, end, &mut f);
        }
        i = next;
    }
    flush(buf, &mut start, end, &mut f);
}

/// The longest word that is a term (Lucene's default token limit).
/// Longer runs (a hex dump, a pasted base64 image) are no words anyone
/// searches for; indexed, one 40 MB run cost 3.3 GB in the term
/// dictionary's builder and then failed the whole update. They are
/// skipped, on both the index and the query side.
pub const MAX_TERM_BYTES: usize = 255;

/// Emits the open word, if any, and resets the buffer.
fn flush(buf: &mut String, start: &mut usize, end: usize, f: &mut impl FnMut(&mut String, bool, usize, usize)) {
    if *start != usize::MAX {
        if !buf.is_empty() && buf.len() <= MAX_TERM_BYTES {
            f(buf, false, *start, end);
        }
        buf.clear();
        *start = usize::MAX;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stem;

    #[test]
    fn latin_bases_are_the_canonical_decompositions() {
        use unicode_normalization::char::decompose_canonical;
        for c in (0x00B0..=0x0260).chain(0x1DF0..=0x1F10).filter_map(char::from_u32) {
            let mut parts = Vec::new();
            decompose_canonical(c, |d| parts.push(d));
            let expected = match parts[..] {
                [base, mark] if base.is_ascii() && is_combining_mark(mark) => Some(base),
                _ => None,
            };
            assert_eq!(latin_base(c), expected, "U+{:04X}", c as u32);
        }
    }

    /// A word past [`MAX_TERM_BYTES`] is no term; the words around it are.
    #[test]
    fn runs_longer_than_any_word_are_skipped() {
        let longest = "a".repeat(MAX_TERM_BYTES);
        let text = format!("zulu {} {longest} kilo", "f".repeat(4 << 20));
        assert_eq!(terms(&text), ["zulu", longest.as_str(), "kilo"]);
        assert_eq!(words(&format!("x {} y", "ж".repeat(200))), ["x", "y"], "counted in bytes");
    }

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        analyze(text, |t| out.push(t.term.to_owned()));
        out
    }

    fn tokens(text: &str) -> Vec<(String, u32, usize, usize)> {
        let mut out = Vec::new();
        analyze(text, |t| out.push((t.term.to_owned(), t.position, t.start, t.end)));
        out
    }

    #[test]
    fn splits_on_non_alphanumerics() {
        assert_eq!(terms("foo.bar-baz_qux don't"), ["foo", "bar", "baz", "qux", "don", "t"]);
        assert_eq!(terms("  hello,   world!  "), ["hello", "world"]);
        assert_eq!(terms(""), Vec::<String>::new());
        assert_eq!(terms("!!! --- ..."), Vec::<String>::new());
    }

    #[test]
    fn lowercases_and_stems() {
        assert_eq!(terms("Running PERFORMANCE Tests"), ["run", "perform", "test"]);
        assert_eq!(terms("Multi-Agent memories"), ["multi", "agent", "memori"]);
        // Digits are token characters and stemmed as FTS5 does.
        assert_eq!(terms("gpt-4 v2026 mp3s"), ["gpt", "4", "v2026", "mp3"]);
    }

    #[test]
    fn positions_and_byte_offsets() {
        let text = "Héllo, wörld café";
        let toks = tokens(text);
        assert_eq!(
            toks,
            [("hello".to_owned(), 0, 0, 6), ("world".to_owned(), 1, 8, 14), ("cafe".to_owned(), 2, 15, 20),]
        );
        assert_eq!(&text[8..14], "wörld");
        assert_eq!(&text[15..20], "café");
    }

    #[test]
    fn removes_latin_diacritics_only() {
        assert_eq!(normalize("ÉCOLE"), "ecole");
        assert_eq!(normalize("Über"), "uber");
        assert_eq!(normalize("naïve façade"), "naive facade");
        assert_eq!(normalize("Ångström"), "angstrom");
        // No decomposition: stays as is (unicode61 keeps these too).
        assert_eq!(normalize("øre"), "øre");
        assert_eq!(normalize("straße"), "straße");
        // Greek and Cyrillic are lowercased but keep their accents.
        assert_eq!(normalize("ΆΛΦΑ"), "άλφα");
        assert_eq!(normalize("Йод"), "йод");
    }

    #[test]
    fn combining_marks_join_not_split() {
        // Decomposed "résumé": marks are dropped, the word stays whole.
        let text = "re\u{301}sume\u{301} x";
        let toks = tokens(text);
        assert_eq!(toks[0], ("resum".to_owned(), 0, 0, 10));
        assert_eq!(toks[1].0, "x");
        // A mark with no word before it is a separator.
        assert_eq!(terms("\u{301}abc"), ["abc"]);
    }

    #[test]
    fn cjk_chars_are_single_tokens() {
        assert_eq!(terms("東京タワー"), ["東", "京", "タ", "ワ", "ー"]);
        assert_eq!(terms("abc中文def"), ["abc", "中", "文", "def"]);
        assert_eq!(terms("한국어 검색"), ["한", "국", "어", "검", "색"]);
        let toks = tokens("a日b");
        assert_eq!(toks[1], ("日".to_owned(), 1, 1, 4));
        assert_eq!(toks[2], ("b".to_owned(), 2, 4, 5));
        // CJK punctuation is not a token.
        assert_eq!(terms("日本。語"), ["日", "本", "語"]);
    }

    #[test]
    fn is_cjk_ranges() {
        for c in ['中', '京', 'ひ', 'カ', 'ｶ', '한', 'ㄱ', '𠀀', '々'] {
            assert!(is_cjk(c), "{c:?}");
        }
        for c in ['a', 'é', 'Ж', 'α', '1', '。', '!'] {
            assert!(!is_cjk(c), "{c:?}");
        }
    }

    #[test]
    fn other_scripts_and_private_use() {
        assert_eq!(terms("Привет, мир"), ["привет", "мир"]);
        assert_eq!(terms("x\u{E000}y z"), ["x\u{E000}y", "z"]);
        assert_eq!(terms("٣٤ x²"), ["٣٤", "x²"]);
    }

    #[test]
    fn words_match_analyze_split() {
        let text = "The Runner's naïve-approach: 2026.4.10 東京 foo_bar Über";
        let ws = words(text);
        assert_eq!(
            ws,
            ["the", "runner", "s", "naive", "approach", "2026", "4", "10", "東", "京", "foo", "bar", "uber"]
        );
        let stemmed: Vec<String> = ws.iter().map(|w| stem(w).into_owned()).collect();
        assert_eq!(stemmed, terms(text));
    }

    #[test]
    fn long_tokens_are_not_stemmed() {
        let long = format!("{}ing", "x".repeat(70));
        assert_eq!(terms(&long), [long.as_str()]);
    }

    #[test]
    fn analyzer_reuse_restarts_positions() {
        let mut a = Analyzer::new();
        let mut first = Vec::new();
        a.analyze("alpha beta", |t| first.push(t.position));
        let mut second = Vec::new();
        a.analyze("gamma", |t| second.push((t.term.to_owned(), t.position)));
        assert_eq!(first, [0, 1]);
        assert_eq!(second, [("gamma".to_owned(), 0)]);
    }
}
