//! Where skills come from: the ones built into this binary, or, as in
//! qmd, the folders of `$QMD_SKILLS_DIR` (each `<name>/SKILL.md` with
//! `name:`/`description:` front matter, plus its other files).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// One skill: its SKILL.md and the files beside it (relative paths).
pub struct Skill {
    pub name: String,
    pub description: String,
    pub content: String,
    pub files: Vec<(String, String)>,
    /// Its folder, when it lives on disk.
    pub dir: Option<PathBuf>,
    pub hidden: bool,
}

/// A built-in skill: name, SKILL.md, and the files beside it.
type BuiltIn = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

const BUILT_IN: &[BuiltIn] = &[(
    "qmd",
    include_str!("../../skills/qmd/SKILL.md"),
    &[("references/mcp-setup.md", include_str!("../../skills/qmd/references/mcp-setup.md"))],
)];

/// `$QMD_SKILLS_DIR`, when set.
pub fn skills_dir() -> Option<PathBuf> {
    std::env::var_os("QMD_SKILLS_DIR").filter(|d| !d.is_empty()).map(PathBuf::from)
}

/// Every skill, by name.
pub fn all() -> Result<Vec<Skill>> {
    let Some(dir) = skills_dir() else {
        return Ok(BUILT_IN
            .iter()
            .map(|(name, content, files)| Skill {
                name: name.to_string(),
                description: front_matter(content, "description").unwrap_or_default(),
                content: content.to_string(),
                files: files.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect(),
                dir: None,
                hidden: false,
            })
            .collect());
    };
    let mut skills = Vec::new();
    let entries = std::fs::read_dir(&dir).with_context(|| format!("cannot read QMD_SKILLS_DIR {}", dir.display()))?;
    for entry in entries.flatten() {
        let folder = entry.path();
        let skill_md = crate::files::regular::open(&folder.join("SKILL.md"));
        let Some(content) = skill_md.ok().and_then(read_text) else { continue };
        let mut files = Vec::new();
        collect(&folder, &folder, &mut files)?;
        skills.push(Skill {
            name: front_matter(&content, "name").unwrap_or_else(|| entry.file_name().to_string_lossy().into_owned()),
            description: front_matter(&content, "description").unwrap_or_default(),
            hidden: front_matter(&content, "hidden").is_some_and(|h| h == "true"),
            content,
            files,
            dir: Some(folder),
        });
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(skills)
}

pub fn find(name: &str) -> Result<Skill> {
    all()?.into_iter().find(|s| s.name == name).with_context(|| format!("Skill not found: {name}"))
}

/// The files of a skill folder other than SKILL.md, sorted. As every
/// folder qmd reads: a file is read only if its real path stays under the
/// skill's folder, and a linked folder is never followed (a loop of links
/// would never end); what is left out is named on stderr.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<()> {
    let real_root = root.canonicalize().with_context(|| format!("cannot read skill folder {}", root.display()))?;
    collect_under(&real_root, root, dir, out)
}

fn collect_under(real_root: &Path, root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<()> {
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(root) else { continue };
        let shown = || qmd_core::display::escape_controls(&rel.to_string_lossy()).into_owned();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect_under(real_root, root, &path, out)?;
            continue;
        }
        if kind.is_symlink() && path.is_dir() {
            eprintln!("Warning: skipped skill file {}: a linked folder is not followed", shown());
            continue;
        }
        if rel == Path::new("SKILL.md") {
            continue;
        }
        match crate::files::contained::open_under(real_root, &path) {
            Ok(file) => {
                if let Some(text) = read_text(file) {
                    out.push((rel.to_string_lossy().replace('\\', "/"), text));
                }
            }
            Err(e) => eprintln!("Warning: skipped skill file {}: {e}", shown()),
        }
    }
    Ok(())
}

/// A skill file's text: a regular file of at most 1 MiB in UTF-8 (a FIFO
/// in a skill folder is skipped, never read).
fn read_text(file: std::fs::File) -> Option<String> {
    String::from_utf8(crate::files::regular::read_opened(file, 1 << 20).ok()?).ok()
}

/// A `key: value` line of the `---` front matter (quotes removed).
fn front_matter(content: &str, key: &str) -> Option<String> {
    let body = content.strip_prefix("---\n")?;
    let end = body.find("\n---")?;
    body[..end].lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix(':')?.trim();
        Some(value.trim_matches('"').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields() {
        let text = "---\nname: qmd\ndescription: \"Search notes\"\n---\n# body\nname: not this";
        assert_eq!(front_matter(text, "name").as_deref(), Some("qmd"));
        assert_eq!(front_matter(text, "description").as_deref(), Some("Search notes"));
        assert_eq!(front_matter("no front matter", "name"), None);
    }
}
