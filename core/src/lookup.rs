//! Finding documents by what a user types: paths, `qmd://` paths, docids,
//! suffixes, comma lists and globs, with qmd's "did you mean" suggestions.

use std::collections::HashMap;

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
        .find(|e| full_path(e).ends_with(input) && boundary(e, input))
        .or_else(|| catalog.iter().find(|e| e.record.path == input))
}

/// A suffix must start at a path boundary or be the whole `c/p` (qmd uses an
/// unanchored LIKE '%input'; anchoring avoids `a.md` matching `data.md`).
fn boundary(entry: &CatalogEntry, suffix: &str) -> bool {
    let full = full_path(entry);
    full.len() == suffix.len() || full.as_bytes()[full.len() - suffix.len() - 1] == b'/'
}

/// Levenshtein distance over chars, if it is at most `max`. Only cells
/// within `max` of the diagonal can stay within `max`, so two long paths
/// of one length cost their length times `2·max + 1`, not its square.
pub fn levenshtein_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let far = max + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    let mut row = vec![far; b.len() + 1];
    for (i, &ca) in a.iter().enumerate().map(|(i, c)| (i + 1, c)) {
        let (lo, hi) = (i.saturating_sub(max), (i + max).min(b.len()));
        row[0] = i.min(far);
        if lo > 0 {
            row[lo - 1] = far;
        }
        for j in lo.max(1)..=hi {
            let substitute = prev[j - 1] + usize::from(ca != b[j - 1]);
            row[j] = substitute.min(prev[j] + 1).min(row[j - 1] + 1).min(far);
        }
        if hi < b.len() {
            row[hi + 1] = far;
        }
        std::mem::swap(&mut prev, &mut row);
    }
    Some(prev[b.len()]).filter(|&d| d <= max)
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
        .filter_map(|e| Some((levenshtein_within(&needle, &e.record.path.to_lowercase(), 5)?, e.record.path.as_str())))
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

/// The catalog indexed once for resolving a comma list's names, so each
/// name costs a few lookups instead of scans of the catalog (a list of
/// thousands of names over tens of thousands of documents was their
/// product, each building strings).
pub struct ListIndex<'a> {
    catalog: &'a [CatalogEntry],
    /// Catalog positions sorted by hash, for docid prefixes.
    by_hash: Vec<usize>,
    /// `c/p` → positions (one, unless the catalog repeats an entry).
    by_full: HashMap<String, Vec<usize>>,
    by_path: HashMap<&'a str, Vec<usize>>,
    /// Hash of each `c/p` suffix that starts after a `/` → positions,
    /// checked against the text on lookup.
    by_suffix: HashMap<u64, Vec<usize>>,
    /// Not-found names that still get "did you mean" (each costs a scan).
    suggestions_left: std::cell::Cell<usize>,
}

/// Not-found names of one list that get suggestions; later ones are
/// reported without them.
const MAX_SUGGESTED_NAMES: usize = 20;

fn suffix_key(suffix: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    suffix.hash(&mut hasher);
    hasher.finish()
}

/// `c/p`: a document's collection and path, as suffixes are matched against.
fn full_path(e: &CatalogEntry) -> String {
    format!("{}/{}", e.record.collection, e.record.path)
}

impl<'a> ListIndex<'a> {
    pub fn new(catalog: &'a [CatalogEntry]) -> Self {
        let mut by_hash: Vec<usize> = (0..catalog.len()).collect();
        by_hash.sort_by(|&a, &b| catalog[a].record.hash.cmp(&catalog[b].record.hash).then(a.cmp(&b)));
        let (mut by_full, mut by_path, mut by_suffix) = (HashMap::new(), HashMap::new(), HashMap::new());
        for (i, e) in catalog.iter().enumerate() {
            let full = full_path(e);
            for (slash, _) in full.match_indices('/') {
                by_suffix.entry(suffix_key(&full[slash + 1..])).or_insert_with(Vec::new).push(i);
            }
            by_full.entry(full).or_insert_with(Vec::new).push(i);
            by_path.entry(e.record.path.as_str()).or_insert_with(Vec::new).push(i);
        }
        ListIndex {
            catalog,
            by_hash,
            by_full,
            by_path,
            by_suffix,
            suggestions_left: std::cell::Cell::new(MAX_SUGGESTED_NAMES),
        }
    }

    /// The first entry in catalog order whose hash starts with `id`.
    fn docid(&self, id: &str) -> Option<&'a CatalogEntry> {
        let hash = |i: &usize| self.catalog[*i].record.hash.as_str();
        let from = self.by_hash.partition_point(|i| hash(i) < id);
        let matching = self.by_hash[from..].iter().take_while(|i| hash(i).starts_with(id));
        matching.min().map(|&i| &self.catalog[i])
    }

    /// Resolves one name of a comma list: docid or `qmd://` (exact), exact
    /// `c/p`, exact `p`, then a suffix at a path boundary. Errors are qmd's.
    pub fn resolve(&self, name: &str) -> std::result::Result<&'a CatalogEntry, String> {
        if let Some(id) = parse_docid(name)
            && let Some(e) = self.docid(&id)
        {
            return Ok(e);
        }
        if let Some(vp) = vpath::parse(name) {
            let key = format!("{}/{}", vp.collection, vp.path);
            if let Some(&i) = self.by_full.get(&key).and_then(|found| found.first()) {
                return Ok(&self.catalog[i]);
            }
        } else if vpath::is_contained(name) {
            let suffix = format!("/{name}");
            let suffixes: Vec<usize> = self
                .by_suffix
                .get(&suffix_key(name))
                .map(|found| {
                    found.iter().copied().filter(|&i| full_path(&self.catalog[i]).ends_with(&suffix)).collect()
                })
                .unwrap_or_default();
            let tiers: [&[usize]; 3] = [
                self.by_full.get(name).map_or(&[], Vec::as_slice),
                self.by_path.get(name).map_or(&[], Vec::as_slice),
                &suffixes,
            ];
            for found in tiers {
                match found {
                    [one] => return Ok(&self.catalog[*one]),
                    [] => continue,
                    many => {
                        let names: Vec<String> = many
                            .iter()
                            .map(|&i| vpath::build(&self.catalog[i].record.collection, &self.catalog[i].record.path))
                            .collect();
                        return Err(format!("Ambiguous path {name}: {}", names.join(", ")));
                    }
                }
            }
        }
        let left = self.suggestions_left.get();
        let similar = if left > 0 {
            self.suggestions_left.set(left - 1);
            similar_paths(self.catalog, name, 3)
        } else {
            Vec::new()
        };
        if similar.is_empty() {
            Err(format!("File not found: {name}"))
        } else {
            Err(format!("File not found: {name} (did you mean: {}?)", similar.join(", ")))
        }
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
            set.is_match(&r.path) || set.is_match(full_path(e)) || set.is_match(vpath::build(&r.collection, &r.path))
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
        assert_eq!(levenshtein_within("kitten", "sitting", 5), Some(3));
        assert_eq!(levenshtein_within("kitten", "sitting", 2), None);
        assert_eq!(levenshtein_within("", "abc", 5), Some(3));
        assert_eq!(levenshtein_within("docs/erors.md", "docs/errors.md", 5), Some(1));
        // Every pair of short strings over a small alphabet: the band
        // gives the full table's answer whenever that is within the bound.
        let full = |a: &str, b: &str| {
            let b: Vec<char> = b.chars().collect();
            let mut row: Vec<usize> = (0..=b.len()).collect();
            for (i, ca) in a.chars().enumerate() {
                let mut diagonal = row[0];
                row[0] = i + 1;
                for (j, &cb) in b.iter().enumerate() {
                    let next = (diagonal + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
                    diagonal = row[j + 1];
                    row[j + 1] = next;
                }
            }
            row[b.len()]
        };
        let words: Vec<String> = (0..400).map(|n: u32| format!("{n:b}").replace('1', "é")).collect();
        for a in &words {
            for b in words.iter().step_by(7) {
                for max in [0, 1, 2, 5] {
                    let d = full(a, b);
                    assert_eq!(levenshtein_within(a, b, max), (d <= max).then_some(d), "{a} {b} {max}");
                }
            }
        }
        // Two 100,000-character paths of one length: the band, not the square.
        let (a, b) = ("x".repeat(100_000), format!("{}y", "x".repeat(99_999)));
        assert_eq!(levenshtein_within(&a, &b, 5), Some(1));
        assert!(is_list_pattern("a.md, b.md"));
        assert!(is_list_pattern("#abc123"));
        assert!(!is_list_pattern("docs/{a,b}.md"));
        assert!(!is_list_pattern("docs/*.md"));
    }
}
