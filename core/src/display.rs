//! Text from files and configs made safe to show on a terminal: names,
//! paths, commands and context texts come from whoever wrote the files,
//! and a control character among them can move the cursor, erase a line or
//! recolour the screen (a trust prompt that shows one command while another
//! runs). One implementation for every surface that prints such text.

use std::borrow::Cow;

/// Characters never printed as they are: C0/C1 controls and DEL, and the
/// invisible ones that reorder or break what is shown (bidirectional
/// overrides and isolates, line and paragraph separators).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `text` with every unsafe character made visible (`\x1b`, `\r`, `\n`,
/// `\u{202e}`), for one-line fields.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`escape_controls`], keeping line breaks and tabs (snippets, bodies).
pub fn escape_controls_in_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_unsafe_char(c) && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// A file name as raw bytes (not necessarily UTF-8), shown on one line:
/// valid UTF-8 as text with unsafe characters escaped, every other byte
/// as `\xNN`. Distinct names stay distinct, except a name spelling `\xff`
/// literally: a backslash is shown as it is, as in `ls -b`'s default.
pub fn escape_bytes(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        out.push_str(&escape_controls(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_reordering_characters_are_escaped() {
        assert_eq!(escape_controls("ls -la\r\x1b[2Krm -rf ~"), "ls -la\\r\\x1b[2Krm -rf ~");
        assert_eq!(escape_controls("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(escape_controls("a\u{85}b\u{7f}"), "a\\x85b\\x7f");
        assert!(matches!(escape_controls("café — ok"), Cow::Borrowed(_)));
        assert_eq!(escape_controls_in_text("a\n\tb\r"), "a\n\tb\\r");
    }

    #[test]
    fn invalid_bytes_are_shown_as_hex_and_text_stays_text() {
        assert_eq!(escape_bytes(b"caf\xff.md"), "caf\\xff.md");
        assert_eq!(escape_bytes("é\x1b".as_bytes()), "é\\x1b");
        assert_eq!(escape_bytes(b"\xc3(\xa9"), "\\xc3(\\xa9");
        assert_eq!(escape_bytes(b""), "");
    }
}
