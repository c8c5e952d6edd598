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

/// Whether a collection-relative path stays inside its collection: no
/// absolute paths, no `..` segments, no backslashes or NULs.
pub fn is_contained(path: &str) -> bool {
    !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path.split('/').all(|segment| segment != "..")
}

#[cfg(test)]
mod tests {
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
    }
}
