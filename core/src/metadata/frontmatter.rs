//! `qmd.metadata` from a markdown file's YAML frontmatter, by qmd's rules
//! (PR #910): the file opens with a `---` line and the block ends at a
//! `---` or `...` line; only `qmd: metadata:` is read, a mapping of keys
//! to strings, finite numbers, booleans or flat non-empty lists of one of
//! those. Anything else makes the whole extraction fail: the document is
//! still indexed, with no metadata and the error kept, and filtered
//! searches leave it out. Dates are not special: `2024-01-15` is a string.

use serde_norway::Value as Yaml;

use super::{Metadata, Scalar, Value};

/// The largest frontmatter block read, in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
pub const MAX_KEYS: usize = 64;
pub const MAX_KEY_BYTES: usize = 128;
pub const MAX_STRING_CHARS: usize = 1024;
pub const MAX_LIST_VALUES: usize = 128;
/// Longest error kept with a document.
const MAX_ERROR_CHARS: usize = 200;

/// What a file's frontmatter gave: its metadata (empty when it has none),
/// or why it could not be read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extraction {
    pub metadata: Metadata,
    pub error: Option<String>,
}

/// The metadata of the file at `path` (markdown only: `.md`, `.markdown`,
/// `.mdx`) with contents `text`.
pub fn extract(path: &str, text: &str) -> Extraction {
    let lower = path.to_ascii_lowercase();
    if ![".md", ".markdown", ".mdx"].iter().any(|ext| lower.ends_with(ext)) {
        return Extraction::default();
    }
    let Some(block) = frontmatter_block(text) else { return Extraction::default() };
    match read_block(block) {
        Ok(metadata) => Extraction { metadata, error: None },
        Err(e) => Extraction { metadata: Metadata::new(), error: Some(e.chars().take(MAX_ERROR_CHARS).collect()) },
    }
}

/// The YAML between the opening `---` line and the closing `---` or `...`
/// line; none without both.
fn frontmatter_block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let after = text.strip_prefix("---")?;
    let body = after.strip_prefix("\r\n").or_else(|| after.strip_prefix('\n'))?;
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            return Some(&body[..at]);
        }
        at += line.len();
    }
    None
}

fn read_block(block: &str) -> Result<Metadata, String> {
    if block.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!("frontmatter exceeds {MAX_FRONTMATTER_BYTES} bytes"));
    }
    let yaml: Yaml = crate::yaml::parse(block).map_err(|e| format!("invalid frontmatter YAML: {e}"))?;
    // Frontmatter that is not a mapping, or has no `qmd` or no
    // `qmd.metadata`, simply has no metadata.
    let Yaml::Mapping(top) = yaml else { return Ok(Metadata::new()) };
    let Some(qmd) = top.get("qmd") else { return Ok(Metadata::new()) };
    let Yaml::Mapping(qmd) = qmd else { return Err("frontmatter 'qmd' must be a mapping".into()) };
    let Some(metadata) = qmd.get("metadata") else { return Ok(Metadata::new()) };
    let Yaml::Mapping(entries) = metadata else { return Err("frontmatter 'qmd.metadata' must be a mapping".into()) };
    if entries.len() > MAX_KEYS {
        return Err(format!("metadata has {} keys (max {MAX_KEYS})", entries.len()));
    }
    let mut out = Metadata::new();
    for (key, value) in entries {
        let key = match key {
            Yaml::String(k) if !k.is_empty() => k,
            _ => return Err("metadata keys must be non-empty strings".into()),
        };
        check_key(key)?;
        let value = read_value(value).map_err(|why| format!("metadata key {key:?}: {why}"))?;
        out.insert(key.clone(), value);
    }
    Ok(out)
}

/// A metadata key's byte and character rules.
fn check_key(key: &str) -> Result<(), String> {
    if key.len() > MAX_KEY_BYTES {
        return Err(format!("metadata key exceeds {MAX_KEY_BYTES} bytes"));
    }
    if key.chars().any(|c| c.is_ascii_control()) {
        return Err("metadata keys must not contain control characters".into());
    }
    Ok(())
}

fn read_value(value: &Yaml) -> Result<Value, String> {
    match value {
        Yaml::Sequence(items) => {
            if items.is_empty() {
                return Err("empty arrays are not supported — omit the key instead".into());
            }
            if items.len() > MAX_LIST_VALUES {
                return Err(format!("array exceeds {MAX_LIST_VALUES} values"));
            }
            let mut list: Vec<Scalar> = Vec::with_capacity(items.len());
            for item in items {
                if matches!(item, Yaml::Sequence(_)) {
                    return Err("nested arrays are not supported".into());
                }
                let scalar = read_scalar(item)?;
                if list.first().is_some_and(|first| !first.same_type(&scalar)) {
                    return Err("mixed-type arrays are not supported".into());
                }
                if !list.contains(&scalar) {
                    list.push(scalar);
                }
            }
            Ok(Value::List(list))
        }
        other => read_scalar(other).map(Value::One),
    }
}

fn read_scalar(value: &Yaml) -> Result<Scalar, String> {
    match value {
        Yaml::String(s) if s.chars().count() > MAX_STRING_CHARS => {
            Err(format!("string exceeds {MAX_STRING_CHARS} characters"))
        }
        Yaml::String(s) => Ok(Scalar::String(s.clone())),
        Yaml::Bool(b) => Ok(Scalar::Bool(*b)),
        Yaml::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(Scalar::Number(f)),
            _ => Err("numbers must be finite".into()),
        },
        Yaml::Null => Err("null is not supported — omit the key instead".into()),
        Yaml::Tagged(tagged) => read_scalar(&tagged.value),
        _ => Err("unsupported value type — use strings, numbers, booleans, or flat arrays of one of those".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Value {
        Value::One(Scalar::String(s.into()))
    }

    fn error(text: &str) -> String {
        extract("a.md", text).error.expect("an error")
    }

    #[test]
    fn reads_typed_values_and_lists() {
        let text = "---\ntitle: Notes\nqmd:\n  metadata:\n    topics: [typescript, programming, typescript]\n    \
                    status: published\n    priority: 3\n    ratio: 0.5\n    draft: false\n    date: 2024-01-15\n---\n# Body\n";
        let got = extract("notes/a.md", text);
        assert_eq!(got.error, None);
        let m = got.metadata;
        assert_eq!(
            m["topics"],
            Value::List(vec![Scalar::String("typescript".into()), Scalar::String("programming".into())]),
            "duplicates dropped, first seen kept"
        );
        assert_eq!(m["status"], one("published"));
        assert_eq!(m["priority"], Value::One(Scalar::Number(3.0)));
        assert_eq!(m["ratio"], Value::One(Scalar::Number(0.5)));
        assert_eq!(m["draft"], Value::One(Scalar::Bool(false)));
        assert_eq!(m["date"], one("2024-01-15"), "dates stay strings");
        assert_eq!(
            super::super::to_json(&m),
            serde_json::json!({"date": "2024-01-15", "draft": false, "priority": 3, "ratio": 0.5, "status": "published",
                               "topics": ["typescript", "programming"]})
        );
    }

    #[test]
    fn the_block_needs_both_fences_and_markdown() {
        let meta = "qmd:\n  metadata:\n    k: v\n";
        for text in
            [format!("---\n{meta}---\nbody"), format!("\u{feff}---\r\n{meta}...\r\nbody"), format!("---\n{meta}---")]
        {
            assert_eq!(extract("a.md", &text).metadata.get("k"), Some(&one("v")), "{text:?}");
        }
        for text in [format!("---\n{meta}"), format!("\n---\n{meta}---\n"), format!("--- \n{meta}---\n")] {
            assert_eq!(extract("a.md", &text), Extraction::default(), "{text:?}");
        }
        for path in ["a.MARKDOWN", "b.mdx"] {
            assert!(!extract(path, &format!("---\n{meta}---\n")).metadata.is_empty(), "{path}");
        }
        assert_eq!(extract("a.txt", &format!("---\n{meta}---\n")), Extraction::default());
    }

    #[test]
    fn no_qmd_section_is_no_metadata_and_no_error() {
        for yaml in ["title: x", "- a\n- b", "qmd:\n  other: 1", "'just a string'"] {
            assert_eq!(extract("a.md", &format!("---\n{yaml}\n---\n")), Extraction::default(), "{yaml}");
        }
    }

    #[test]
    fn bad_metadata_fails_whole_with_qmds_messages() {
        let with = |body: &str| format!("---\nqmd:\n  metadata:\n{body}---\n");
        let cases = [
            (with("    a: 1\n    b: null\n"), "metadata key \"b\": null is not supported — omit the key instead"),
            (with("    a: []\n"), "metadata key \"a\": empty arrays are not supported — omit the key instead"),
            (with("    a: [1, x]\n"), "metadata key \"a\": mixed-type arrays are not supported"),
            (with("    a: [[1]]\n"), "metadata key \"a\": nested arrays are not supported"),
            (
                with("    a: {b: 1}\n"),
                "metadata key \"a\": unsupported value type — use strings, numbers, booleans, or flat arrays of one of those",
            ),
            (with("    a: .inf\n"), "metadata key \"a\": numbers must be finite"),
            ("---\nqmd: 3\n---\n".to_string(), "frontmatter 'qmd' must be a mapping"),
            ("---\nqmd:\n  metadata: [1]\n---\n".to_string(), "frontmatter 'qmd.metadata' must be a mapping"),
            (with("    1: x\n"), "metadata keys must be non-empty strings"),
            (with(&format!("    {}: x\n", "k".repeat(129))), "metadata key exceeds 128 bytes"),
            (with(&format!("    a: {}\n", "x".repeat(1025))), "metadata key \"a\": string exceeds 1024 characters"),
            (
                with(&format!("    a: [{}]\n", vec!["1"; 129].join(", "))),
                "metadata key \"a\": array exceeds 128 values",
            ),
        ];
        for (text, want) in cases {
            let got = extract("a.md", &text);
            assert!(got.metadata.is_empty(), "all or nothing: {text:?}");
            assert_eq!(got.error.as_deref(), Some(want), "{text:?}");
        }
        let many: String = (0..65).map(|i| format!("    k{i}: {i}\n")).collect();
        assert_eq!(error(&with(&many)), "metadata has 65 keys (max 64)");
        assert!(error("---\nqmd: [unclosed\n---\n").starts_with("invalid frontmatter YAML: "));
        let huge = format!("---\nnote: \"{}\"\n---\n", "x".repeat(MAX_FRONTMATTER_BYTES));
        assert_eq!(error(&huge), "frontmatter exceeds 65536 bytes");
        assert!(error(&with("    \"a\\u0007b\": 1\n")).contains("control characters"));
    }

    #[test]
    fn errors_are_cut_to_200_characters() {
        let key = "k".repeat(100);
        let text = format!("---\nqmd:\n  metadata:\n    {key}: {{a: 1}}\n---\n");
        assert_eq!(error(&text).chars().count(), 200);
    }
}
