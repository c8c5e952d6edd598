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
    if !(MIN_STEM_BYTES..=MAX_STEM_BYTES).contains(&word.len()) {
        return Cow::Borrowed(word);
    }
    let mut s = word.to_owned();
    stem_in_place(&mut s);
    if s == word { Cow::Borrowed(word) } else { Cow::Owned(s) }
}

/// Stems the word `w` in place, for the indexing hot path: no allocation, no
/// copy. Every edit replaces an ASCII suffix with ASCII bytes, so the
/// `truncate`/`push` calls below always land on char boundaries.
pub fn stem_in_place(w: &mut String) {
    if !(MIN_STEM_BYTES..=MAX_STEM_BYTES).contains(&w.len()) {
        return;
    }
    step1a(w);
    if step1b(w) && !apply_rule(w, step1b2_rules(penult(w.as_bytes())), |_| true) {
        let b = w.as_bytes();
        let n = b.len();
        let c = b[n - 1];
        if n >= 2 && c.is_ascii() && !is_vowel(c, false) && !matches!(c, b'l' | b's' | b'z') && c == b[n - 2] {
            w.pop();
        } else if m_eq1(b) && ostar(b) {
            w.push('e');
        }
    }

    // Step 1c: (*v*) Y -> I.
    if let Some((&b'y', stem)) = w.as_bytes().split_last()
        && has_vowel(stem)
    {
        w.pop();
        w.push('i');
    }

    apply_rule(w, step2_rules(penult(w.as_bytes())), m_gt0);
    apply_rule(w, step3_rules(penult(w.as_bytes())), m_gt0);
    apply_step4(w);

    // Step 5a: (m>1) E -> ; (m=1 and not *o) E -> .
    if let Some((&b'e', s)) = w.as_bytes().split_last()
        && (m_gt1(s) || (m_eq1(s) && !ostar(s)))
    {
        w.pop();
    }
    // Step 5b: (m>1 and *d and *L) -> single letter.
    if let Some((&b'l', s)) = w.as_bytes().split_last()
        && s.last() == Some(&b'l')
        && m_gt1(s)
    {
        w.pop();
    }
}

/// `(suffix, replacement)` pairs in FTS5's order; the first suffix that
/// matches (leaving a non-empty stem) decides the step.
type Rules = &'static [(&'static [u8], &'static [u8])];

/// Like FTS5's generated code, rules are picked by the word's second-to-last
/// byte, which every suffix in a group shares; this keeps the per-token cost
/// to a handful of byte comparisons.
fn step1b2_rules(penult: u8) -> Rules {
    match penult {
        b'a' => &[(b"at", b"ate")],
        b'b' => &[(b"bl", b"ble")],
        b'i' => &[(b"iz", b"ize")],
        _ => &[],
    }
}

fn step2_rules(penult: u8) -> Rules {
    match penult {
        b'a' => &[(b"ational", b"ate"), (b"tional", b"tion")],
        b'c' => &[(b"enci", b"ence"), (b"anci", b"ance")],
        b'e' => &[(b"izer", b"ize")],
        b'g' => &[(b"logi", b"log")],
        b'l' => &[(b"bli", b"ble"), (b"alli", b"al"), (b"entli", b"ent"), (b"eli", b"e"), (b"ousli", b"ous")],
        b'o' => &[(b"ization", b"ize"), (b"ation", b"ate"), (b"ator", b"ate")],
        b's' => &[(b"alism", b"al"), (b"iveness", b"ive"), (b"fulness", b"ful"), (b"ousness", b"ous")],
        b't' => &[(b"aliti", b"al"), (b"iviti", b"ive"), (b"biliti", b"ble")],
        _ => &[],
    }
}

fn step3_rules(penult: u8) -> Rules {
    match penult {
        b'a' => &[(b"ical", b"ic")],
        b's' => &[(b"ness", b"")],
        b't' => &[(b"icate", b"ic"), (b"iciti", b"ic")],
        b'u' => &[(b"ful", b"")],
        b'v' => &[(b"ative", b"")],
        b'z' => &[(b"alize", b"al")],
        _ => &[],
    }
}

/// Step 4 suffixes, all deleted under (m>1); `ion` additionally needs the
/// stem to end in `s` or `t`.
fn step4_suffixes(penult: u8) -> &'static [&'static [u8]] {
    match penult {
        b'a' => &[b"al"],
        b'c' => &[b"ance", b"ence"],
        b'e' => &[b"er"],
        b'i' => &[b"ic"],
        b'l' => &[b"able", b"ible"],
        b'n' => &[b"ant", b"ement", b"ment", b"ent"],
        b'o' => &[b"ion", b"ou"],
        b's' => &[b"ism"],
        b't' => &[b"ate", b"iti"],
        b'u' => &[b"ous"],
        b'v' => &[b"ive"],
        b'z' => &[b"ize"],
        _ => &[],
    }
}

/// The word's second-to-last byte (0 for one-byte words).
fn penult(b: &[u8]) -> u8 {
    if b.len() >= 2 { b[b.len() - 2] } else { 0 }
}

/// `b` ends with `suffix` and leaves a non-empty stem. A plain loop: these
/// suffixes are too short for a `memcmp` call to pay off.
fn ends_with(b: &[u8], suffix: &[u8]) -> bool {
    b.len() > suffix.len() && b[b.len() - suffix.len()..].iter().zip(suffix).all(|(x, y)| x == y)
}

/// Replaces the last `suffix_len` (ASCII) bytes of `w` with `repl`.
fn replace_suffix(w: &mut String, suffix_len: usize, repl: &[u8]) {
    w.truncate(w.len() - suffix_len);
    w.extend(repl.iter().map(|&c| char::from(c)));
}

/// Applies the deciding rule of `rules` (the group picked by the word's
/// second-to-last byte) if its condition holds; reports whether it fired.
fn apply_rule(w: &mut String, rules: Rules, cond: impl Fn(&[u8]) -> bool) -> bool {
    let b = w.as_bytes();
    let Some(&(suffix, repl)) = rules.iter().find(|r| ends_with(b, r.0)) else {
        return false;
    };
    if !cond(&b[..b.len() - suffix.len()]) {
        return false;
    }
    replace_suffix(w, suffix.len(), repl);
    true
}

fn apply_step4(w: &mut String) {
    let b = w.as_bytes();
    let Some(&suffix) = step4_suffixes(penult(b)).iter().find(|s| ends_with(b, s)) else {
        return;
    };
    let stem = &b[..b.len() - suffix.len()];
    let ok = if suffix == b"ion" { matches!(stem.last(), Some(b's' | b't')) && m_gt1(stem) } else { m_gt1(stem) };
    if ok {
        replace_suffix(w, suffix.len(), b"");
    }
}

/// Step 1a: SSES -> SS, IES -> I, SS -> SS, S -> . (FTS5 needs a non-empty
/// stem before `sses`/`ies`, so a bare `ies` only loses its `s`.)
fn step1a(w: &mut String) {
    let b = w.as_bytes();
    let len = b.len();
    if b[len - 1] != b's' {
        return;
    }
    let cut = if b[len - 2] == b'e' {
        if (len > 4 && b[len - 4] == b's' && b[len - 3] == b's') || (len > 3 && b[len - 3] == b'i') { 2 } else { 1 }
    } else if b[len - 2] != b's' {
        1
    } else {
        0
    };
    replace_suffix(w, cut, b"");
}

/// Step 1b: (m>0) EED -> EE; (*v*) ED -> ; (*v*) ING -> . Returns true when
/// ED or ING was removed (the cue for the step 1b clean-up rules).
fn step1b(w: &mut String) -> bool {
    let b = w.as_bytes();
    let len = b.len();
    if ends_with(b, b"eed") {
        if m_gt0(&b[..len - 3]) {
            replace_suffix(w, 1, b"");
        }
        false
    } else if ends_with(b, b"ed") {
        remove_if_vowel(w, 2)
    } else if ends_with(b, b"ing") {
        remove_if_vowel(w, 3)
    } else {
        false
    }
}

fn remove_if_vowel(w: &mut String, suffix_len: usize) -> bool {
    let stem = w.len() - suffix_len;
    if has_vowel(&w.as_bytes()[..stem]) {
        w.truncate(stem);
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
    fn stem_in_place_matches_stem() {
        for &(word, want) in CLASSIC {
            let mut w = word.to_owned();
            stem_in_place(&mut w);
            assert_eq!(w, want);
        }
        let mut short = "is".to_owned();
        stem_in_place(&mut short);
        assert_eq!(short, "is");
    }
}
