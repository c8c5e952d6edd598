//! Escaping shared by the formats: control characters shown as `\\x1b`,
//! `\\r`, `\\n` in the human formats, and the small string helpers.

use super::*;

/// `text` with control characters made visible (`\x1b`, `\r`, `\n`, …), for
/// one-line fields of human and line formats: a file name or title must not
/// move the cursor, recolour or rewrite the user's terminal, or forge a line.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`escape_controls`], keeping line breaks and tabs (snippets, bodies).
pub(super) fn escape_controls_in_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

pub(super) fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
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

pub(super) fn qmd_uri(collection: &str, path: &str) -> String {
    format!("qmd://{collection}/{path}")
}

/// Upstream tests contexts for truthiness, so an empty one counts as none.
pub(super) fn nonempty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// The trailing `,"context"` of the `files` format: always quoted.
pub(super) fn quoted_context(ctx: &str) -> String {
    format!(",\"{}\"", ctx.replace('"', "\"\""))
}

pub(super) fn quot(value: &str) -> String {
    value.replace('"', "&quot;")
}
