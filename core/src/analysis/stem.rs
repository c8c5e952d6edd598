//! The Porter (1980) stemmer exactly as SQLite FTS5's `porter` tokenizer
//! runs it (`fts5_tokenize.c`), so that our terms equal the terms qmd's
//! `porter unicode61` index stores.
//!
//! Faithfulness notes, all deliberate:
//! - FTS5 works on bytes: tokens shorter than 3 or longer than 64 bytes pass
//!   through; every other token is stemmed, including ones with digits
//!   (`mp3s` → `mp3`). Non-ASCII bytes count as consonants and never match a
//!   suffix, so purely non-Latin words come back unchanged.
//! - FTS5's rule tables are the classic ones plus two later Porter revisions
//!   (`bli`→`ble` instead of `abli`→`able`, and `logi`→`log` in step 2).
//! - A rule whose suffix matches but whose condition fails ends the step:
//!   shorter suffixes are not tried (Porter's longest-match rule).
//!
//! The one departure: step 1b's "drop one of a double consonant" is skipped
//! when that byte is not ASCII, since FTS5 would cut a UTF-8 sequence in half
//! there and a Rust `&str` cannot hold the result.

use std::borrow::Cow;

/// Longest token (in bytes) that FTS5 stems; longer ones pass through.
pub const MAX_STEM_BYTES: usize = 64;
/// Shortest token (in bytes) that FTS5 stems.
const MIN_STEM_BYTES: usize = 3;

/// Porter stem of an already-normalised word (Cow: borrowed when unchanged).
pub fn stem(word: &str) -> Cow<'_, str> {
    let mut buf = [0u8; MAX_STEM_BYTES];
    match stem_into(word.as_bytes(), &mut buf) {
        Some(n) if buf[..n] != *word.as_bytes() => match std::str::from_utf8(&buf[..n]) {
            Ok(s) => Cow::Owned(s.to_owned()),
            // Unreachable: every edit touches ASCII bytes only.
            Err(_) => Cow::Borrowed(word),
        },
        _ => Cow::Borrowed(word),
    }
}

/// Stems `word` into `buf` without allocating, for the indexing hot path.
/// Returns the stem's length in `buf`, or `None` when FTS5 would pass the
/// token through untouched (then the caller keeps `word`). The stem is never
/// longer than `word`.
pub fn stem_into(word: &[u8], buf: &mut [u8; MAX_STEM_BYTES]) -> Option<usize> {
    let len = word.len();
    if !(MIN_STEM_BYTES..=MAX_STEM_BYTES).contains(&len) {
        return None;
    }
    buf[..len].copy_from_slice(word);
    let b = &mut buf[..];
    let mut n = len;

    step1a(b, &mut n);
    if step1b(b, &mut n) && !apply_rule(b, &mut n, STEP1B2, always) {
        let c = b[n - 1];
        if n >= 2 && c.is_ascii() && !is_vowel(c, false) && !matches!(c, b'l' | b's' | b'z') && c == b[n - 2] {
            n -= 1;
        } else if m_eq1(&b[..n]) && ostar(&b[..n]) {
            b[n] = b'e';
            n += 1;
        }
    }

    // Step 1c: (*v*) Y -> I.
    if b[n - 1] == b'y' && has_vowel(&b[..n - 1]) {
        b[n - 1] = b'i';
    }

    apply_rule(b, &mut n, STEP2, m_gt0);
    apply_rule(b, &mut n, STEP3, m_gt0);
    apply_step4(b, &mut n);

    // Step 5a: (m>1) E -> ; (m=1 and not *o) E -> .
    if b[n - 1] == b'e' {
        let s = &b[..n - 1];
        if m_gt1(s) || (m_eq1(s) && !ostar(s)) {
            n -= 1;
        }
    }
    // Step 5b: (m>1 and *d and *L) -> single letter.
    if n > 1 && b[n - 1] == b'l' && b[n - 2] == b'l' && m_gt1(&b[..n - 1]) {
        n -= 1;
    }
    Some(n)
}

/// `(suffix, replacement)` pairs in FTS5's order; the first suffix that
/// matches (leaving a non-empty stem) decides the step.
type Rules = &'static [(&'static [u8], &'static [u8])];

const STEP1B2: Rules = &[(b"at", b"ate"), (b"bl", b"ble"), (b"iz", b"ize")];

const STEP2: Rules = &[
    (b"ational", b"ate"),
    (b"tional", b"tion"),
    (b"enci", b"ence"),
    (b"anci", b"ance"),
    (b"izer", b"ize"),
    (b"logi", b"log"),
    (b"bli", b"ble"),
    (b"alli", b"al"),
    (b"entli", b"ent"),
    (b"eli", b"e"),
    (b"ousli", b"ous"),
    (b"ization", b"ize"),
    (b"ation", b"ate"),
    (b"ator", b"ate"),
    (b"alism", b"al"),
    (b"iveness", b"ive"),
    (b"fulness", b"ful"),
    (b"ousness", b"ous"),
    (b"aliti", b"al"),
    (b"iviti", b"ive"),
    (b"biliti", b"ble"),
];

const STEP3: Rules = &[
    (b"ical", b"ic"),
    (b"ness", b""),
    (b"icate", b"ic"),
    (b"iciti", b"ic"),
    (b"ful", b""),
    (b"ative", b""),
    (b"alize", b"al"),
];

/// Step 4 suffixes, all deleted under (m>1); `ion` additionally needs the
/// stem to end in `s` or `t`.
const STEP4: &[&[u8]] = &[
    b"al", b"ance", b"ence", b"er", b"ic", b"able", b"ible", b"ant", b"ement", b"ment", b"ent",
    b"ion", b"ou", b"ism", b"ate", b"iti", b"ous", b"ive", b"ize",
];

/// Index of the first rule whose suffix ends the word with a non-empty stem.
/// Suffixes in FTS5's switch differ in their second-to-last letter across
/// cases, so a flat first-match list picks the same rule as the switch.
fn find_suffix<'r>(b: &[u8], n: usize, mut suffixes: impl Iterator<Item = &'r [u8]>) -> Option<usize> {
    suffixes.position(|s| n > s.len() && b[..n].ends_with(s))
}

/// Applies the deciding rule of `rules` if its condition holds; reports
/// whether it fired.
fn apply_rule(b: &mut [u8], n: &mut usize, rules: Rules, cond: fn(&[u8]) -> bool) -> bool {
    let Some(i) = find_suffix(b, *n, rules.iter().map(|r| r.0)) else {
        return false;
    };
    let (suffix, repl) = rules[i];
    let stem = *n - suffix.len();
    if !cond(&b[..stem]) {
        return false;
    }
    b[stem..stem + repl.len()].copy_from_slice(repl);
    *n = stem + repl.len();
    true
}

fn always(_: &[u8]) -> bool {
    true
}

fn apply_step4(b: &mut [u8], n: &mut usize) {
    if let Some(i) = find_suffix(b, *n, STEP4.iter().copied()) {
        let stem = &b[..*n - STEP4[i].len()];
        let ok = if STEP4[i] == b"ion" {
            matches!(stem.last(), Some(b's' | b't')) && m_gt1(stem)
        } else {
            m_gt1(stem)
        };
        if ok {
            *n = stem.len();
        }
    }
}

/// Step 1a: SSES -> SS, IES -> I, SS -> SS, S -> . (FTS5 needs a non-empty
/// stem before `sses`/`ies`, so a bare `ies` only loses its `s`.)
fn step1a(b: &[u8], n: &mut usize) {
    let len = *n;
    if b[len - 1] != b's' {
        return;
    }
    if b[len - 2] == b'e' {
        if (len > 4 && &b[len - 4..len - 2] == b"ss") || (len > 3 && b[len - 3] == b'i') {
            *n = len - 2;
        } else {
            *n = len - 1;
        }
    } else if b[len - 2] != b's' {
        *n = len - 1;
    }
}

/// Step 1b: (m>0) EED -> EE; (*v*) ED -> ; (*v*) ING -> . Returns true when
/// ED or ING was removed (the cue for the step 1b clean-up rules).
fn step1b(b: &mut [u8], n: &mut usize) -> bool {
    let len = *n;
    if len > 3 && b[..len].ends_with(b"eed") {
        if m_gt0(&b[..len - 3]) {
            *n = len - 1;
        }
        false
    } else if len > 2 && b[..len].ends_with(b"ed") {
        remove_if_vowel(b, n, 2)
    } else if len > 3 && b[..len].ends_with(b"ing") {
        remove_if_vowel(b, n, 3)
    } else {
        false
    }
}

fn remove_if_vowel(b: &[u8], n: &mut usize, suffix_len: usize) -> bool {
    let stem = *n - suffix_len;
    if has_vowel(&b[..stem]) {
        *n = stem;
        true
    } else {
        false
    }
}

/// `y` is a vowel after a consonant (FTS5 passes "previous was consonant").
fn is_vowel(c: u8, y_is_vowel: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (y_is_vowel && c == b'y')
}

/// Skips one vowel run then one consonant run; returns the index just past
/// the first consonant of that run, or 0 when there is no such VC pair.
fn gobble_vc(s: &[u8], prev_cons: bool) -> usize {
    let mut cons = prev_cons;
    let mut i = 0;
    while i < s.len() {
        cons = !is_vowel(s[i], cons);
        if !cons {
            break;
        }
        i += 1;
    }
    i += 1;
    while i < s.len() {
        cons = !is_vowel(s[i], cons);
        if cons {
            return i + 1;
        }
        i += 1;
    }
    0
}

/// Porter's measure m > 0.
fn m_gt0(s: &[u8]) -> bool {
    gobble_vc(s, false) != 0
}

/// Porter's measure m > 1.
fn m_gt1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) != 0
}

/// Porter's measure m == 1.
fn m_eq1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) == 0
}

/// `*o`: the stem ends consonant-vowel-consonant, the last not w, x or y.
fn ostar(s: &[u8]) -> bool {
    match s.last() {
        None | Some(b'w' | b'x' | b'y') => false,
        Some(_) => {
            let mut mask = 0u32;
            let mut cons = false;
            for &c in s {
                cons = !is_vowel(c, cons);
                mask = (mask << 1) | u32::from(cons);
            }
            mask & 0b111 == 0b101
        }
    }
}

/// `*v*`: the stem contains a vowel (FTS5 counts any non-initial `y`).
fn has_vowel(s: &[u8]) -> bool {
    s.iter().enumerate().any(|(i, &c)| is_vowel(c, i > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Classic Porter examples (Porter 1980 and the reference vocabulary).
    const CLASSIC: &[(&str, &str)] = &[
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("ties", "ti"),
        ("caress", "caress"),
        ("cats", "cat"),
        ("feed", "feed"),
        ("agreed", "agre"),
        ("plastered", "plaster"),
        ("motoring", "motor"),
        ("sing", "sing"),
        ("conflated", "conflat"),
        ("troubled", "troubl"),
        ("sized", "size"),
        ("hopping", "hop"),
        ("tanned", "tan"),
        ("falling", "fall"),
        ("hissing", "hiss"),
        ("fizzed", "fizz"),
        ("failing", "fail"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("conditional", "condit"),
        ("rational", "ration"),
        ("valenci", "valenc"),
        ("digitizer", "digit"),
        ("conformabli", "conform"),
        ("radicalli", "radic"),
        ("differentli", "differ"),
        ("vileli", "vile"),
        ("analogousli", "analog"),
        ("vietnamization", "vietnam"),
        ("predication", "predic"),
        ("operator", "oper"),
        ("feudalism", "feudal"),
        ("decisiveness", "decis"),
        ("hopefulness", "hope"),
        ("callousness", "callous"),
        ("formaliti", "formal"),
        ("sensitiviti", "sensit"),
        ("sensibiliti", "sensibl"),
        ("triplicate", "triplic"),
        ("formative", "form"),
        ("formalize", "formal"),
        ("electriciti", "electr"),
        ("electrical", "electr"),
        ("hopeful", "hope"),
        ("goodness", "good"),
        ("revival", "reviv"),
        ("allowance", "allow"),
        ("inference", "infer"),
        ("airliner", "airlin"),
        ("gyroscopic", "gyroscop"),
        ("adjustable", "adjust"),
        ("defensible", "defens"),
        ("irritant", "irrit"),
        ("replacement", "replac"),
        ("adjustment", "adjust"),
        ("dependent", "depend"),
        ("adoption", "adopt"),
        ("homologou", "homolog"),
        ("communism", "commun"),
        ("activate", "activ"),
        ("angulariti", "angular"),
        ("homologous", "homolog"),
        ("effective", "effect"),
        ("bowdlerize", "bowdler"),
        ("probate", "probat"),
        ("rate", "rate"),
        ("cease", "ceas"),
        ("controll", "control"),
        ("roll", "roll"),
        ("generalizations", "gener"),
        ("oscillators", "oscil"),
        ("performance", "perform"),
        ("running", "run"),
        ("theorem", "theorem"),
    ];

    #[test]
    fn classic_porter_table() {
        for &(word, want) in CLASSIC {
            assert_eq!(stem(word), want, "stem({word})");
        }
    }

    #[test]
    fn more_reference_vocabulary() {
        let cases = [
            ("connection", "connect"),
            ("connections", "connect"),
            ("connecting", "connect"),
            ("generously", "gener"),
            ("searching", "search"),
            ("searches", "search"),
            ("memory", "memori"),
            ("memories", "memori"),
            ("athlete", "athlet"),
            ("sports", "sport"),
            ("agents", "agent"),
            ("archaeology", "archaeolog"),
            ("meeting", "meet"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "stem({word})");
        }
    }

    #[test]
    fn fts5_length_limits() {
        // Under 3 bytes: untouched (classic Porter would make "as" -> "a").
        assert_eq!(stem("as"), "as");
        assert_eq!(stem("is"), "is");
        // Exactly 64 bytes is stemmed, 65 is not.
        let w64 = format!("{}ing", "b".repeat(60) + "a");
        assert_eq!(w64.len(), 64);
        assert_eq!(stem(&w64), format!("{}a", "b".repeat(60)));
        let w65 = format!("c{w64}");
        assert_eq!(stem(&w65), w65.as_str());
        // FTS5's bare "ies" keeps the "ie" (its sses/ies rules need a stem).
        assert_eq!(stem("ies"), "ie");
    }

    #[test]
    fn digits_and_non_ascii_follow_fts5() {
        assert_eq!(stem("mp3s"), "mp3");
        assert_eq!(stem("2020s"), "2020");
        assert_eq!(stem("0054"), "0054");
        // Non-ASCII bytes are consonants and never match a suffix.
        assert_eq!(stem("привет"), "привет");
        assert_eq!(stem("東京"), "東京");
        // A double non-ASCII byte at the end of a step-1b stem stays intact
        // (FTS5 would split the UTF-8 sequence): U+2082 is E2 82 82.
        assert_eq!(stem("a\u{2082}ed"), "a\u{2082}");
    }

    #[test]
    fn borrowed_when_unchanged() {
        assert!(matches!(stem("theorem"), Cow::Borrowed(_)));
        assert!(matches!(stem("running"), Cow::Owned(_)));
    }

    #[test]
    fn stem_into_never_grows() {
        let mut buf = [0u8; MAX_STEM_BYTES];
        for &(word, want) in CLASSIC {
            let n = stem_into(word.as_bytes(), &mut buf).expect("stemmed");
            assert!(n <= word.len());
            assert_eq!(&buf[..n], want.as_bytes());
        }
        assert_eq!(stem_into(b"ab", &mut buf), None);
    }
}
