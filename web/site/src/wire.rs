//! The text the exports hand to the page: lines of tab-separated fields,
//! which the page splits without a JSON parser on either side.

use qmd_core::site::{Excerpt, SiteHit};

/// Marks a highlighted run inside excerpt text (private-use characters,
/// removed from the page text first, so they cannot be forged by it).
pub const MARK_START: char = '\u{E000}';
pub const MARK_END: char = '\u{E001}';

/// `key=value` lines (the first `=` splits) into pairs, each side
/// unescaped ([`escape_field`]).
pub fn parse_filters(text: &str) -> Vec<(String, String)> {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (unescape_field(k), unescape_field(v))).collect()
}

/// Filter keys and values cross the wire with the bytes that would split
/// a line or a pair percent-escaped (`%`, `=`, tab, CR, LF), both ways:
/// the page escapes and unescapes the same five (`escapeField` in
/// `www/site/qmd-search.js`), so a facet the engine names selects what it
/// counted, whatever its key holds.
pub fn escape_field(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '=' => out.push_str("%3D"),
            '\t' => out.push_str("%09"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape_field`]; any other `%` sequence stays as it is.
pub fn unescape_field(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escaped = match rest.get(at + 1..at + 3) {
            Some("25") => Some('%'),
            Some("3D" | "3d") => Some('='),
            Some("09") => Some('\t'),
            Some("0A" | "0a") => Some('\n'),
            Some("0D" | "0d") => Some('\r'),
            _ => None,
        };
        match escaped {
            Some(c) => {
                out.push(c);
                rest = &rest[at + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Page ordinals from the filter module: little-endian u32s (a trailing
/// partial number is dropped).
pub fn docs_from_bytes(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Tabs and newlines inside a field would split it.
fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

pub fn hits(hits: &[SiteHit]) -> String {
    hits.iter().map(|h| format!("{}\t{}\t{}", h.fragment, score(h.score), h.doc)).collect::<Vec<_>>().join("\n")
}

/// A score as nanounits in exponent notation (`1234e-9`), which the page's
/// `Number()` reads as is: formatting floats would bring the ~20 KB of
/// Rust's shortest-float printing into the module, for digits no one reads
/// past the ninth.
pub fn score(x: f64) -> String {
    format!("{}e-9", (x * 1e9).round() as i64)
}

pub fn filters(filters: &[(String, Vec<(String, usize)>)]) -> String {
    let mut lines = Vec::new();
    for (key, values) in filters {
        for (value, count) in values {
            lines.push(format!("{}\t{}\t{count}", escape_field(key), escape_field(value)));
        }
    }
    lines.join("\n")
}

/// One line per excerpt: `anchor<TAB>text`, anchor empty for the page's
/// own excerpt; highlighted runs wrapped in [`MARK_START`]/[`MARK_END`].
pub fn excerpts(excerpts: &[Excerpt]) -> String {
    let mut lines = Vec::with_capacity(excerpts.len());
    for e in excerpts {
        let mut text = String::with_capacity(e.text.len() + 6 * e.marks.len());
        let mut at = 0;
        for mark in &e.marks {
            if mark.start < at || mark.end > e.text.len() {
                continue;
            }
            text.push_str(&clean(&e.text[at..mark.start]));
            text.push(MARK_START);
            text.push_str(&clean(&e.text[mark.clone()]));
            text.push(MARK_END);
            at = mark.end;
        }
        text.push_str(&clean(&e.text[at..]));
        let anchor = e.anchor.map(|a| a.to_string()).unwrap_or_default();
        lines.push(format!("{anchor}\t{}", field(&text)));
    }
    lines.join("\n")
}

fn clean(text: &str) -> String {
    text.replace([MARK_START, MARK_END], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_lines_mark_runs_and_cannot_be_forged() {
        let e = Excerpt {
            anchor: Some(2),
            text: "a \u{E000}b\tc".into(),
            marks: std::iter::once(5..6).collect(),
            matched: 1,
        };
        assert_eq!(excerpts(&[e]), "2\ta \u{E000}b\u{E001} c");
        assert_eq!(parse_filters("lang=en\nbad\nk=a=b"), [("lang".into(), "en".into()), ("k".into(), "a=b".into())]);
    }

    #[test]
    fn filter_fields_round_trip_whatever_they_hold() {
        for text in ["plain", "a=b", "x%3Dy", "100%", "tab\there", "line\nbreak\r", "%%25=%0A", "ü=ß", ""] {
            let escaped = escape_field(text);
            assert!(!escaped.contains(['=', '\t', '\n', '\r']), "{escaped:?}");
            assert_eq!(unescape_field(&escaped), text);
            let line = format!("{escaped}={}", escape_field(text));
            assert_eq!(parse_filters(&line), [(text.to_string(), text.to_string())]);
        }
        let counts = filters(&[("k=v\tx".into(), vec![("a\nb".into(), 2)])]);
        assert_eq!(counts, "k%3Dv%09x\ta%0Ab\t2");
        assert_eq!(unescape_field("%zz%2"), "%zz%2", "other sequences are text");
    }
}
