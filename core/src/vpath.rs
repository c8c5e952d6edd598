//! `qmd://collection/path` virtual paths (string work only).

/// A parsed virtual path. `path` is empty for a collection root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualPath {
    pub collection: String,
    pub path: String,
}

pub const SCHEME: &str = "qmd://";

/// Parses `qmd://c/p` (also `qmd:////c/p`, `//c/p`, and a `?index=` suffix,
/// which is dropped). Returns `None` for anything else.
pub fn parse(input: &str) -> Option<VirtualPath> {
    let rest = input.strip_prefix(SCHEME).or_else(|| input.strip_prefix("//"))?;
    let rest = rest.split_once("?index=").map_or(rest, |(p, _)| p);
    let rest = rest.trim_start_matches('/');
    let (collection, path) = rest.split_once('/').unwrap_or((rest, ""));
    if collection.is_empty() {
        return None;
    }
    Some(VirtualPath { collection: collection.to_string(), path: path.trim_start_matches('/').to_string() })
}

/// `qmd://collection/path`.
pub fn build(collection: &str, path: &str) -> String {
    format!("{SCHEME}{collection}/{path}")
}

/// `qmd://collection/path` with each segment percent-encoded as
/// JavaScript's `encodeURIComponent` does (qmd's `encodeQmdPath`), for URIs.
pub fn uri(collection: &str, path: &str) -> String {
    let display = format!("{collection}/{path}");
    let mut out = String::from("qmd://");
    for (i, segment) in display.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in segment.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// Reverses percent-encoding (invalid escapes stay as they are).
pub fn percent_decode(input: &str) -> String {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a collection-relative path stays inside its collection: not
/// absolute, no `..` segment, no NUL. A backslash is an ordinary character
/// of a file name (`a\b.md` is one file); the sandbox is what keeps a path
/// in its root, this is the check before it.
pub fn is_contained(path: &str) -> bool {
    !path.starts_with('/') && !path.contains('\0') && path.split('/').all(|segment| segment != "..")
}

/// What is wrong with `name` as one segment of a path (a collection's
/// name, a browser index's folder), or `None`: a segment is printed on
/// terminals and joined to folders, so not empty, not `.` or `..` (they
/// would read as the parent or the same folder), no `/`, no control
/// characters.
pub fn segment_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it may not be empty")
    } else if name == "." || name == ".." {
        Some("it may not be '.' or '..'")
    } else if name.contains('/') {
        Some("it may not contain '/'")
    } else if name.chars().any(crate::display::is_unsafe_char) {
        Some("it may not contain control characters")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn uris_encode_segments() {
        assert_eq!(super::uri("my notes", "a b/ü#1.md"), "qmd://my%20notes/a%20b/%C3%BC%231.md");
        assert_eq!(super::percent_decode("my%20notes/a%20b/%C3%BC%231.md"), "my notes/a b/ü#1.md");
        assert_eq!(super::percent_decode("100%"), "100%");
    }
    use super::*;

    #[test]
    fn parses_variants() {
        let vp = |c: &str, p: &str| Some(VirtualPath { collection: c.into(), path: p.into() });
        assert_eq!(parse("qmd://notes/a/b.md"), vp("notes", "a/b.md"));
        assert_eq!(parse("qmd:////notes/a.md"), vp("notes", "a.md"));
        assert_eq!(parse("//notes/a.md"), vp("notes", "a.md"));
        assert_eq!(parse("qmd://notes"), vp("notes", ""));
        assert_eq!(parse("qmd://notes/"), vp("notes", ""));
        assert_eq!(parse("qmd://notes/a.md?index=work"), vp("notes", "a.md"));
        assert_eq!(parse("notes/a.md"), None);
        assert_eq!(parse("qmd://"), None);
        assert_eq!(build("c", "x/y.md"), "qmd://c/x/y.md");
    }

    #[test]
    fn containment() {
        assert!(is_contained("a/b.md"));
        assert!(is_contained("a..b/c.md"));
        assert!(!is_contained("../etc/passwd"));
        assert!(!is_contained("a/../../b"));
        assert!(!is_contained("/etc/passwd"));
        assert!(is_contained("a\\b.md"), "a backslash is part of a file name");
    }
}
