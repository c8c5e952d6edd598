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
        let Some(content) = read_text(&folder.join("SKILL.md")) else { continue };
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

/// The files of a skill folder other than SKILL.md, sorted.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root)
            && rel != Path::new("SKILL.md")
            && let Some(text) = read_text(&path)
        {
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
    Ok(())
}

/// A skill file's text: a regular file of at most 1 MiB in UTF-8 (a FIFO
/// in a skill folder is skipped, never read).
fn read_text(path: &Path) -> Option<String> {
    String::from_utf8(crate::files::regular::read(path, 1 << 20).ok()?).ok()
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
