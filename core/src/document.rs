//! What qmd derives from a file's text: content hash, docid and title.

use sha2::{Digest, Sha256};

/// sha256 of the raw bytes, lowercase hex.
pub fn content_hash(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes` (hashes are stored raw in segments).
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// The 32 raw bytes of a sha256 hex string (invalid digits read as 0).
pub fn hash_bytes(hash: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, chunk) in hash.as_bytes().chunks(2).take(32).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        out[i] = digit(chunk[0]) << 4 | chunk.get(1).map_or(0, |&c| digit(c));
    }
    out
}

/// qmd's `addLineNumbers`: `N: line` from `first`.
pub fn number_lines(text: &str, first: u32) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}: {line}", first.saturating_add(i as u32)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lines `from..from+count` of `body` (1-based, `from` clamped to ≥ 1;
/// all to the end when `count` is `None`), split on `\n` as qmd splits
/// them, numbered `N: ` when asked. `None` when that holds no line of the
/// body (past its end, or a count of 0): nothing is invented, where qmd
/// printed `FILE:999` as a `999: ` line.
pub fn slice_lines(body: &str, from: Option<u32>, count: Option<u32>, numbers: bool) -> Option<String> {
    let lines: Vec<&str> = body.split('\n').collect();
    let first = from.unwrap_or(1).max(1);
    let start = (first as usize - 1).min(lines.len());
    // Saturating: `FILE:4294967295:2` asks for lines past any end, not a panic.
    let end = count.map_or(lines.len(), |c| start.saturating_add(c as usize).min(lines.len()));
    if start >= end {
        return None;
    }
    let text = lines[start..end].join("\n");
    Some(if numbers { number_lines(&text, first) } else { text })
}

/// A `multi-get` body cut to `max` lines (whole when `None`), numbered from
/// 1 when asked. With `-l 1` and more, as qmd: the lines, a blank line and
/// `[... truncated N more lines]`, all numbered (qmd numbers after
/// cutting). With `-l 0` qmd printed numbered empty lines before the
/// marker and counted the empty text after a final newline as a line; here
/// the marker alone, unnumbered, counting the body's lines.
pub fn truncate_lines(body: &str, max: Option<u32>, numbers: bool) -> String {
    let number = |text: &str| if numbers { number_lines(text, 1) } else { text.to_string() };
    let lines: Vec<&str> = body.split('\n').collect();
    match max.map(|m| m as usize) {
        Some(0) if body.is_empty() => String::new(),
        Some(0) => {
            format!("[... truncated {} more lines]", body.strip_suffix('\n').unwrap_or(body).split('\n').count())
        }
        Some(max) if lines.len() > max => {
            let more = lines.len() - max;
            number(&format!("{}\n\n[... truncated {more} more lines]", lines[..max].join("\n")))
        }
        _ => number(body),
    }
}

/// qmd's reason for a file over `--max-bytes`: sizes in whole KB, rounded
/// as qmd does, but in bytes under 1 KB (qmd's rounding said `0KB > 0KB`).
pub fn too_large(size: u64, max: u64) -> String {
    let shown = |b: u64| if b < 1024 { format!("{b} B") } else { format!("{}KB", (b as f64 / 1024.0).round() as u64) };
    format!("File too large ({} > {})", shown(size), shown(max))
}

/// The most body bytes one `multi-get` answer holds: one file of the
/// largest size indexed ([`crate::source::MAX_FILE_BYTES`]), or many small.
pub const MULTI_GET_TOTAL_BYTES: u64 = 64 << 20;

/// Why a `multi-get` entry past [`MULTI_GET_TOTAL_BYTES`] has no body.
pub fn over_total(held: u64, total: u64) -> String {
    let shown = |b: u64| if b < 1 << 20 { format!("{b} bytes") } else { format!("{} MB", b >> 20) };
    format!(
        "Result too large: {} of files already returned (the limit is {}); ask for fewer files",
        shown(held),
        shown(total)
    )
}

/// The short id shown as `#abc123`: the first 6 hex chars of the hash.
pub fn docid(hash: &str) -> &str {
    &hash[..6.min(hash.len())]
}

/// Whether `input` (after stripping `#` and quotes) looks like a docid:
/// at least 6 chars, all hex.
pub fn parse_docid(input: &str) -> Option<String> {
    let trimmed = input.trim().trim_matches(|c| c == '"' || c == '\'');
    let id = trimmed.strip_prefix('#').unwrap_or(trimmed);
    (id.len() >= 6 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_ascii_lowercase())
}

/// qmd's title rule: for markdown the first `#`/`##` heading (if it is
/// `Notes`/`📝 Notes`, the first `##` heading instead); for `.org` the
/// `#+TITLE:` line or first `*` heading; else the file name without extension.
pub fn extract_title(text: &str, path: &str) -> String {
    let lower = path.to_ascii_lowercase();
    let found = if lower.ends_with(".org") { org_title(text) } else { markdown_title(text) };
    found.unwrap_or_else(|| file_stem(path).to_string())
}

fn markdown_title(text: &str) -> Option<String> {
    let heading = |line: &str, allow_h1: bool| -> Option<String> {
        let rest = if allow_h1 {
            line.strip_prefix("##").or_else(|| line.strip_prefix('#'))
        } else {
            line.strip_prefix("##")
        }?;
        if !rest.starts_with(|c: char| c.is_whitespace()) {
            return None;
        }
        let title = rest.trim();
        (!title.is_empty()).then(|| title.to_string())
    };
    let first = text.lines().find_map(|line| heading(line, true))?;
    if (first == "📝 Notes" || first == "Notes")
        && let Some(h2) = text.lines().find_map(|line| heading(line, false))
    {
        return Some(h2);
    }
    Some(first)
}

fn org_title(text: &str) -> Option<String> {
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("#+TITLE:") {
            return Some(title.trim().to_string());
        }
    }
    text.lines().find_map(|line| {
        let stars = line.len() - line.trim_start_matches('*').len();
        let rest = &line[stars..];
        (stars > 0 && rest.starts_with(char::is_whitespace) && !rest.trim().is_empty()).then(|| rest.trim().to_string())
    })
}

fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_docid() {
        let hash = content_hash(b"hello\n");
        assert_eq!(hash, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
        assert_eq!(docid(&hash), "5891b5");
        assert_eq!(parse_docid("#5891B5"), Some("5891b5".into()));
        assert_eq!(parse_docid("\"#abcdef12\""), Some("abcdef12".into()));
        assert_eq!(parse_docid("abc12"), None);
        assert_eq!(parse_docid("notes.md"), None);
    }

    #[test]
    fn titles() {
        assert_eq!(extract_title("intro\n# Hello  \nbody", "a/b.md"), "Hello");
        assert_eq!(extract_title("## Second level\n# Later", "a.md"), "Second level");
        assert_eq!(extract_title("# Notes\n## Real title", "a.md"), "Real title");
        assert_eq!(extract_title("#hashtag\nplain", "dir/file.name.md"), "file.name");
        assert_eq!(extract_title("### Deep\n", "x.md"), "x");
        assert_eq!(extract_title("#+TITLE: Org doc\n* Head", "x.org"), "Org doc");
        assert_eq!(extract_title("* Head one\n", "x.org"), "Head one");
        assert_eq!(extract_title("", ".hidden"), ".hidden");
    }
}
