//! Finding documents by what a user types: paths, `qmd://` paths, docids,
//! suffixes, comma lists and globs, with qmd's "did you mean" suggestions.

use globset::GlobSetBuilder;

use crate::collection::{Config, PathFilter};
use crate::document::parse_docid;
use crate::error::Result;
use crate::index::CatalogEntry;
use crate::vpath;

/// Splits qmd's `:from[:count]` suffix off `input` (digits only, parsed
/// from the end, so `#abc123:120:40` works).
pub fn split_line_suffix(input: &str) -> (&str, Option<u32>, Option<u32>) {
    let number =
        |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok()).flatten();
    if let Some((head, last)) = input.rsplit_once(':')
        && let Some(n) = number(last)
    {
        if let Some((head2, mid)) = head.rsplit_once(':')
            && let Some(from) = number(mid)
        {
            return (head2, Some(from), Some(n));
        }
        return (head, Some(n), None);
    }
    (input, None, None)
}

fn docid_match<'a>(catalog: &'a [CatalogEntry], id: &str) -> Option<&'a CatalogEntry> {
    catalog.iter().find(|e| e.record.hash.starts_with(id))
}

/// qmd's `findDocument`: docid, exact `qmd://` path, suffix of
/// `qmd://c/p`, absolute path under a collection root, collection-relative.
pub fn find_document<'a>(catalog: &'a [CatalogEntry], config: &Config, input: &str) -> Option<&'a CatalogEntry> {
    let input = input.trim();
    if let Some(id) = parse_docid(input)
        && let Some(e) = docid_match(catalog, &id)
    {
        return Some(e);
    }
    if let Some(vp) = vpath::parse(input) {
        // Exact only: a qmd:// path never falls through to suffix matching,
        // and `..` never resolves.
        if !vpath::is_contained(&vp.path) {
            return None;
        }
        return catalog.iter().find(|e| e.record.collection == vp.collection && e.record.path == vp.path);
    }
    if input.is_empty() {
        return None;
    }
    if input.starts_with('/') {
        for c in &config.collections {
            let root = c.path.trim_end_matches('/');
            if let Some(rel) = input.strip_prefix(root).and_then(|r| r.strip_prefix('/'))
                && vpath::is_contained(rel)
                && let Some(e) = catalog.iter().find(|e| e.record.collection == c.name && e.record.path == rel)
            {
                return Some(e);
            }
        }
        return None;
    }
    if !vpath::is_contained(input) {
        return None;
    }
    catalog
        .iter()
        .find(|e| format!("{}/{}", e.record.collection, e.record.path).ends_with(input) && boundary(e, input))
        .or_else(|| catalog.iter().find(|e| e.record.path == input))
}

/// A suffix must start at a path boundary or be the whole `c/p` (qmd uses an
/// unanchored LIKE '%input'; anchoring avoids `a.md` matching `data.md`).
fn boundary(entry: &CatalogEntry, suffix: &str) -> bool {
    let full = format!("{}/{}", entry.record.collection, entry.record.path);
    full.len() == suffix.len() || full.as_bytes()[full.len() - suffix.len() - 1] == b'/'
}

/// Levenshtein distance over chars.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Paths within distance 5 of `input` (lowercased), closest first.
pub fn similar_paths(catalog: &[CatalogEntry], input: &str, top: usize) -> Vec<String> {
    let needle = input.to_lowercase();
    let needle_len = needle.chars().count();
    // Lengths more than 5 apart are more than 5 edits apart: skipping them
    // first keeps a huge input (an MCP client's) from costing O(n·m) per path.
    let mut scored: Vec<(usize, &str)> = catalog
        .iter()
        .filter(|e| e.record.path.chars().count().abs_diff(needle_len) <= 5)
        .map(|e| (levenshtein(&needle, &e.record.path.to_lowercase()), e.record.path.as_str()))
        .filter(|(d, _)| *d <= 5)
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(top).map(|(_, p)| p.to_string()).collect()
}

/// The ignore rule a not-found path hits: `(collection, path, rule)`.
pub fn ignored_by(config: &Config, input: &str) -> Option<(String, String, String)> {
    let (collection, path) = match vpath::parse(input) {
        Some(vp) => (Some(vp.collection), vp.path),
        None => (None, input.trim_start_matches('/').to_string()),
    };
    config.collections.iter().filter(|c| collection.as_ref().is_none_or(|n| *n == c.name)).find_map(|c| {
        let filter = PathFilter::new(&c.pattern, &c.ignore).ok()?;
        filter.ignore_rule(&path).map(|rule| (c.name.clone(), path.clone(), rule.to_string()))
    })
}

/// qmd treats a multi-get pattern as a list when it has a comma and no glob
/// characters, or is a single docid.
pub fn is_list_pattern(pattern: &str) -> bool {
    (pattern.contains(',') && !pattern.contains(['*', '?', '{'])) || parse_docid(pattern).is_some()
}

/// Resolves one name of a comma list: docid or `qmd://` (exact), exact
/// `c/p`, exact `p`, then a suffix at a path boundary. Errors are qmd's.
pub fn resolve_list_name<'a>(catalog: &'a [CatalogEntry], name: &str) -> std::result::Result<&'a CatalogEntry, String> {
    if let Some(id) = parse_docid(name)
        && let Some(e) = docid_match(catalog, &id)
    {
        return Ok(e);
    }
    if let Some(vp) = vpath::parse(name) {
        if let Some(e) = catalog.iter().find(|e| e.record.collection == vp.collection && e.record.path == vp.path) {
            return Ok(e);
        }
    } else if vpath::is_contained(name) {
        let full = |e: &CatalogEntry| format!("{}/{}", e.record.collection, e.record.path);
        let suffix = format!("/{name}");
        let tiers: [&dyn Fn(&CatalogEntry) -> bool; 3] =
            [&|e| full(e) == name, &|e| e.record.path == name, &|e| full(e).ends_with(&suffix)];
        for tier in tiers {
            let found: Vec<&CatalogEntry> = catalog.iter().filter(|e| tier(e)).collect();
            match found.as_slice() {
                [one] => return Ok(one),
                [] => continue,
                many => {
                    let names: Vec<String> =
                        many.iter().map(|e| vpath::build(&e.record.collection, &e.record.path)).collect();
                    return Err(format!("Ambiguous path {name}: {}", names.join(", ")));
                }
            }
        }
    }
    let similar = similar_paths(catalog, name, 3);
    if similar.is_empty() {
        Err(format!("File not found: {name}"))
    } else {
        Err(format!("File not found: {name} (did you mean: {}?)", similar.join(", ")))
    }
}

/// Documents matching a glob against `qmd://c/p`, `p` or `c/p`, sorted by
/// collection then path.
pub fn glob_documents<'a>(catalog: &'a [CatalogEntry], pattern: &str) -> Result<Vec<&'a CatalogEntry>> {
    let mut builder = GlobSetBuilder::new();
    builder.add(crate::collection::compile_glob(pattern)?);
    let set = builder.build().map_err(|e| crate::Error::invalid(e.to_string()))?;
    let mut found: Vec<&CatalogEntry> = catalog
        .iter()
        .filter(|e| {
            let r = &e.record;
            set.is_match(&r.path)
                || set.is_match(format!("{}/{}", r.collection, r.path))
                || set.is_match(vpath::build(&r.collection, &r.path))
        })
        .collect();
    found.sort_by(|a, b| (&a.record.collection, &a.record.path).cmp(&(&b.record.collection, &b.record.path)));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_suffixes() {
        assert_eq!(split_line_suffix("docs/api.md:100"), ("docs/api.md", Some(100), None));
        assert_eq!(split_line_suffix("docs/api.md:100:3"), ("docs/api.md", Some(100), Some(3)));
        assert_eq!(split_line_suffix("#abc123:120:40"), ("#abc123", Some(120), Some(40)));
        assert_eq!(split_line_suffix("qmd://c/a.md"), ("qmd://c/a.md", None, None));
        assert_eq!(split_line_suffix("a.md:x"), ("a.md:x", None, None));
    }

    #[test]
    fn distances() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("docs/erors.md", "docs/errors.md"), 1);
        assert!(is_list_pattern("a.md, b.md"));
        assert!(is_list_pattern("#abc123"));
        assert!(!is_list_pattern("docs/{a,b}.md"));
        assert!(!is_list_pattern("docs/*.md"));
    }
}
