//! A page's bytes as text, decoded as the page declares: a byte-order mark
//! first (UTF-8, UTF-16: `qmd_core::encoding`, as `update` reads notes),
//! then for HTML the charset its first 1,024 bytes
//! declare (`<meta charset>`, `<meta http-equiv="Content-Type">`, read as
//! the HTML standard's prescan reads them), else UTF-8. A page that is not
//! UTF-8 and declares nothing, declares a charset no browser knows, or is
//! mostly NUL bytes (UTF-16 without a mark, or not text) is refused with the
//! reason: nothing is indexed as mojibake in silence.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};
use qmd_core::encoding::{MOSTLY_NUL, marked, mostly_nul};

/// How far into a page the prescan looks for a declaration.
const PRESCAN_BYTES: usize = 1024;

/// The page's text, and a note when some bytes were not valid in its
/// encoding (replaced by U+FFFD); or why the page cannot be read as text.
pub fn decode(bytes: &[u8], html: bool) -> Result<(String, Option<String>), String> {
    if let Some((text, note)) = marked(bytes) {
        return checked(text, note);
    }
    let encoding = match html.then(|| declared(&bytes[..bytes.len().min(PRESCAN_BYTES)])).flatten() {
        Some(label) => for_meta_label(&label)?,
        None => match std::str::from_utf8(bytes) {
            Ok(text) => return checked(text.to_string(), None),
            Err(e) => {
                let declare = if html { " and declares no charset (<meta charset>)" } else { "" };
                return Err(format!("not UTF-8 (byte {} of {}){declare}", e.valid_up_to(), bytes.len()));
            }
        },
    };
    let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
    let note = had_errors.then(|| format!("some bytes are not valid {} (read as U+FFFD)", encoding.name()));
    checked(text.into_owned(), note)
}

/// UTF-16 without a mark, or not text at all ([`mostly_nul`]).
fn checked(text: String, note: Option<String>) -> Result<(String, Option<String>), String> {
    if mostly_nul(&text) {
        return Err(MOSTLY_NUL.to_string());
    }
    Ok((text, note))
}

/// The encoding a `<meta>` label names, as a browser takes it: UTF-16
/// labels mean UTF-8 there (the prescan read ASCII, so the page is not
/// UTF-16), `x-user-defined` means windows-1252.
fn for_meta_label(label: &str) -> Result<&'static Encoding, String> {
    match Encoding::for_label(label.as_bytes()) {
        Some(e) if e == UTF_16LE || e == UTF_16BE => Ok(UTF_8),
        Some(e) if e == X_USER_DEFINED => Ok(WINDOWS_1252),
        Some(e) => Ok(e),
        None => Err(format!("declares a charset no browser knows ({label:?})")),
    }
}

/// The charset label the head of a page declares, if any: the first
/// `<meta>` with `charset`, or with `http-equiv="content-type"` and a
/// `content` naming one; comments skipped.
fn declared(head: &[u8]) -> Option<String> {
    let mut at = 0;
    while at < head.len() {
        let rest = &head[at..];
        if rest.starts_with(b"<!--") {
            at += 4 + find(&rest[4..], b"-->").map_or(rest.len(), |end| end + 3);
        } else if starts_with_ignore_case(rest, b"<meta")
            && rest.get(5).is_some_and(|&c| c.is_ascii_whitespace() || c == b'/')
        {
            let (attributes, end) = attributes(&rest[5..]);
            at += 5 + end;
            let value = |name: &str| attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
            if let Some(charset) = value("charset") {
                return Some(charset.trim().to_string());
            }
            if value("http-equiv").is_some_and(|v| v.trim().eq_ignore_ascii_case("content-type"))
                && let Some(charset) = value("content").and_then(charset_in_content)
            {
                return Some(charset);
            }
        } else {
            at += 1;
        }
    }
    None
}

/// A tag's attributes (names lowercased) up to its `>`, and the bytes read.
fn attributes(tag: &[u8]) -> (Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    let is_space = |c: u8| c.is_ascii_whitespace() || c == b'/';
    loop {
        while tag.get(at).is_some_and(|&c| is_space(c)) {
            at += 1;
        }
        match tag.get(at) {
            None => return (out, at),
            Some(b'>') => return (out, at + 1),
            Some(_) => {}
        }
        let start = at;
        while tag.get(at).is_some_and(|&c| !is_space(c) && c != b'>' && c != b'=') {
            at += 1;
        }
        let name = String::from_utf8_lossy(&tag[start..at]).to_ascii_lowercase();
        while tag.get(at).is_some_and(|c| c.is_ascii_whitespace()) {
            at += 1;
        }
        let mut value = String::new();
        if tag.get(at) == Some(&b'=') {
            at += 1;
            while tag.get(at).is_some_and(|c| c.is_ascii_whitespace()) {
                at += 1;
            }
            let (start, end) = match tag.get(at) {
                Some(&quote @ (b'"' | b'\'')) => {
                    let start = at + 1;
                    let end = find(&tag[start..], &[quote]).map_or(tag.len(), |e| start + e);
                    at = (end + 1).min(tag.len());
                    (start, end)
                }
                _ => {
                    let start = at;
                    while tag.get(at).is_some_and(|&c| !c.is_ascii_whitespace() && c != b'>') {
                        at += 1;
                    }
                    (start, at)
                }
            };
            value = String::from_utf8_lossy(&tag[start..end]).into_owned();
        }
        if !name.is_empty() {
            out.push((name, value));
        }
    }
}

/// `text/html; charset=Shift_JIS` → `Shift_JIS`.
fn charset_in_content(content: &str) -> Option<String> {
    let lower = content.to_ascii_lowercase();
    let at = lower.find("charset")? + "charset".len();
    let rest = content[at..].trim_start().strip_prefix('=')?.trim_start();
    let value = match rest.chars().next()? {
        quote @ ('"' | '\'') => rest[1..].split(quote).next()?,
        _ => rest.split(|c: char| c == ';' || c.is_whitespace()).next()?,
    };
    (!value.is_empty()).then(|| value.to_string())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(bytes: &[u8]) -> Result<String, String> {
        decode(bytes, true).map(|(text, _)| text)
    }

    #[test]
    fn pages_decode_as_they_declare() {
        assert_eq!(
            html(b"<meta charset=\"iso-8859-1\"><p>Caf\xe9</p>").unwrap(),
            "<meta charset=\"iso-8859-1\"><p>Café</p>"
        );
        let shift_jis =
            b"<head><META http-equiv='Content-Type' content='text/html; charset=Shift_JIS'></head>\x93\xfa\x96\x7b";
        assert!(html(shift_jis).unwrap().ends_with("日本"));
        // A byte-order mark wins over a declaration; UTF-16 with one decodes.
        let mut utf16 = vec![0xff, 0xfe];
        utf16.extend("<meta charset=latin1><p>naïve</p>".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(html(&utf16).unwrap(), "<meta charset=latin1><p>naïve</p>");
        assert_eq!(html(b"\xef\xbb\xbf<p>x</p>").unwrap(), "<p>x</p>");
        // A UTF-16 label in an ASCII-readable head means UTF-8; a comment hides a tag.
        assert_eq!(html("<meta charset=utf-16><p>é</p>".as_bytes()).unwrap(), "<meta charset=utf-16><p>é</p>");
        let commented = b"<!-- <meta charset=latin1> --><p>caf\xc3\xa9</p>";
        assert!(html(commented).unwrap().ends_with("café</p>"));
        // Undeclared UTF-8 as it is; markdown has only the mark and UTF-8.
        assert_eq!(html("<p>日本</p>".as_bytes()).unwrap(), "<p>日本</p>");
        assert_eq!(decode(b"# Caf\xc3\xa9", false).unwrap().0, "# Café");
    }

    #[test]
    fn what_cannot_be_read_as_declared_is_refused_or_noted() {
        let latin1 = html(b"<p>Caf\xe9</p>").unwrap_err();
        assert!(latin1.contains("not UTF-8") && latin1.contains("declares no charset"), "{latin1}");
        assert!(decode(b"# Caf\xe9", false).unwrap_err().contains("not UTF-8"));
        let unknown = html(b"<meta charset=\"klingon\"><p>x</p>").unwrap_err();
        assert!(unknown.contains("\"klingon\""), "{unknown}");
        let bare_utf16: Vec<u8> = "<p>hello</p>".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(html(&bare_utf16).unwrap_err().contains("NUL bytes"));
        assert!(html(b"<p>a stray \0 NUL</p>").is_ok());
        // Bytes invalid in the declared encoding: read, with a note naming it.
        let (text, note) = decode(b"<meta charset=shift_jis><p>\x82</p>", true).unwrap();
        assert!(text.contains('\u{fffd}') && note.unwrap().contains("Shift_JIS"));
    }
}
