//! Escaping shared by the formats: control characters shown as `\\x1b`,
//! `\\r`, `\\n` in the human formats (from `qmd_core::display`), and the
//! small string helpers.

/// `text` with control characters made visible (`\x1b`, `\r`, `\n`, …), for
/// one-line fields of human and line formats: a file name or title must not
/// move the cursor, recolour or rewrite the user's terminal, or forge a line.
/// One implementation for every surface: `qmd_core::display`.
pub use qmd_core::display::escape_controls;

/// As [`escape_controls`], keeping line breaks and tabs (snippets, bodies).
pub(super) use qmd_core::display::escape_controls_in_text;

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
