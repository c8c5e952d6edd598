//! "Is this relative path part of the collection?": the mask (comma list =
//! union, brace groups), the collection's `ignore` globs, qmd's default
//! excludes and dot-paths.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};

/// Directories qmd never descends into.
const EXCLUDED_DIRS: [&str; 6] = ["node_modules", ".git", ".cache", "vendor", "dist", "build"];

/// Whether nothing under a folder or file of this name is ever indexed,
/// whatever the collection's mask: hidden names and [`EXCLUDED_DIRS`].
pub fn never_indexed(name: &str) -> bool {
    name.starts_with('.') || EXCLUDED_DIRS.contains(&name)
}

/// Compiled mask + ignore rules of one collection.
pub struct PathFilter {
    mask: GlobSet,
    ignore: GlobSet,
    ignore_patterns: Vec<String>,
}

/// Splits a mask on top-level commas (not inside `{}` or `[]`).
pub fn split_mask(mask: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in mask.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth <= 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// Longest glob accepted, in bytes: no path is longer (Linux's
/// `PATH_MAX`); compiling costs grow with it (a 3 MB pattern took 2 s to be
/// refused by the regex engine), and 100,000 nested braces overflowed
/// globset's recursive parser.
const MAX_GLOB_BYTES: usize = 4096;

/// Deepest brace nesting accepted. The length limit already keeps globset's
/// recursive parser off the stack's end (100,000 levels aborted the
/// process, an MCP server with it); past this depth the regex engine
/// fails with "error parsing pattern 0", which names nothing.
const MAX_GLOB_BRACE_DEPTH: usize = 16;

/// Refuses a glob too long or too deeply nested to compile safely, naming
/// the limit and not echoing a long pattern.
fn check_glob_size(pattern: &str) -> Result<()> {
    if pattern.len() > MAX_GLOB_BYTES {
        return Err(Error::invalid(format!(
            "Invalid glob pattern: {} bytes long (the limit is {MAX_GLOB_BYTES})",
            pattern.len()
        )));
    }
    let mut depth = 0usize;
    for c in pattern.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => continue,
        }
        if depth > MAX_GLOB_BRACE_DEPTH {
            return Err(Error::invalid(format!(
                "Invalid glob pattern: braces nested more than {MAX_GLOB_BRACE_DEPTH} deep"
            )));
        }
    }
    Ok(())
}

pub(crate) fn compile(pattern: &str) -> Result<Glob> {
    check_glob_size(pattern)?;
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| Error::invalid(format!("Invalid glob pattern '{pattern}': {}", e.kind())))
}

fn check_contained(pattern: &str) -> Result<()> {
    // Brace alternatives are separate paths: `{../x/*,*}.md` escapes too.
    let escapes = pattern.split(['/', '{', '}', ',']).any(|s| s == ".." || s.starts_with("../"));
    if pattern.starts_with('/') || pattern.contains("{/") || pattern.contains(",/") || escapes {
        return Err(Error::invalid(format!(
            "Invalid pattern '{pattern}': patterns are relative to the collection root and may not use '..' or absolute paths"
        )));
    }
    Ok(())
}

impl PathFilter {
    pub fn new(mask: &str, ignore: &[String]) -> Result<Self> {
        let mut masks = GlobSetBuilder::new();
        let parts = split_mask(mask);
        if parts.is_empty() {
            return Err(Error::invalid("The collection mask is empty"));
        }
        for part in &parts {
            check_contained(part)?;
            masks.add(compile(part)?);
        }
        let mut ignores = GlobSetBuilder::new();
        for pattern in ignore {
            ignores.add(compile(pattern)?);
            // `dir/**` also names the directory itself, so pruning can stop there.
            if let Some(dir) = pattern.strip_suffix("/**") {
                ignores.add(compile(dir)?);
            }
        }
        let build = |b: GlobSetBuilder| b.build().map_err(|e| Error::invalid(e.to_string()));
        Ok(PathFilter { mask: build(masks)?, ignore: build(ignores)?, ignore_patterns: ignore.to_vec() })
    }

    /// Whether the walk should enter this directory (relative path).
    pub fn enter_dir(&self, dir: &str) -> bool {
        let name = dir.rsplit('/').next().unwrap_or(dir);
        !never_indexed(name) && !self.ignore.is_match(dir)
    }

    /// Whether a file (relative path) belongs to the collection.
    pub fn includes(&self, path: &str) -> bool {
        crate::vpath::is_contained(path)
            && !path.split('/').any(never_indexed)
            && self.mask.is_match(path)
            && !self.ignore.is_match(path)
    }

    /// The ignore rule a path hits, if any (for qmd's "excluded by ignore rule").
    pub fn ignore_rule(&self, path: &str) -> Option<&str> {
        self.ignore_patterns
            .iter()
            .find(|p| compile(p).map(|g| g.compile_matcher().is_match(path)).unwrap_or(false))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_excludes() {
        let f = PathFilter::new("**/*.md", &[]).unwrap();
        assert!(f.includes("a.md"));
        assert!(f.includes("x/y/z.md"));
        assert!(!f.includes("a.txt"));
        assert!(!f.includes(".hidden/a.md"));
        assert!(!f.includes("x/.a.md"));
        assert!(!f.includes("node_modules/p/readme.md"));
        assert!(!f.enter_dir("src/.git"));
        assert!(!f.enter_dir("build"));
        assert!(f.enter_dir("docs"));
    }

    /// Nesting that overflowed globset's recursive parser (aborting the
    /// process) and patterns longer than any path are refused with the
    /// limit named; the deepest accepted nesting still matches.
    #[test]
    fn deep_and_long_globs_are_refused_not_crashes() {
        let overflowing = format!("{}a.md{}", "{".repeat(100_000), "}".repeat(100_000));
        let deep = format!("{}a.md{}", "{".repeat(1000), "}".repeat(1000));
        let long = "*a".repeat(500_000);
        for (pattern, says) in
            [(&overflowing, "200004 bytes long"), (&deep, "nested more than 16"), (&long, "1000000 bytes long")]
        {
            for err in
                [compile(pattern).map(|_| ()), PathFilter::new("**/*.md", std::slice::from_ref(pattern)).map(|_| ())]
            {
                let message = err.unwrap_err().message;
                assert!(message.contains(says) && message.len() < 200, "{}", &message[..message.len().min(300)]);
            }
        }
        let deepest = format!("{}a.md{}", "{x,".repeat(16), "}".repeat(16));
        assert!(PathFilter::new(&deepest, &[]).unwrap().includes("a.md"));
    }

    #[test]
    fn comma_lists_braces_and_ignore() {
        assert_eq!(split_mask("**/*.md, docs/*.{txt,rst}"), vec!["**/*.md", "docs/*.{txt,rst}"]);
        let f = PathFilter::new("*.md,docs/*.{txt,rst}", &["archive/**".into()]).unwrap();
        assert!(f.includes("top.md"));
        assert!(!f.includes("sub/top.md"), "* does not cross /");
        assert!(f.includes("docs/a.rst"));
        let g = PathFilter::new("**/*.md", &["archive/**".into()]).unwrap();
        assert!(!g.includes("archive/old.md"));
        assert!(!g.enter_dir("archive"));
        assert_eq!(g.ignore_rule("archive/old.md"), Some("archive/**"));
        assert_eq!(g.ignore_rule("new.md"), None);
    }

    #[test]
    fn escaping_masks_are_refused() {
        assert!(PathFilter::new("../*.md", &[]).is_err());
        assert!(PathFilter::new("/etc/*", &[]).is_err());
        assert!(PathFilter::new("docs/../../*.md", &[]).is_err());
        assert!(PathFilter::new("{../outside/*,*}.md", &[]).is_err());
        assert!(PathFilter::new("{a,/etc/*}", &[]).is_err());
    }
}
