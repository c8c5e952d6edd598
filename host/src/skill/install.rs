//! `qmd skill install`: as qmd installs its own skill, a small bootstrap
//! `SKILL.md` that asks the CLI for the version-matched text, beside the
//! skill's other files, and optionally a relative `.claude/skills/qmd` link.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::files::{OwnedDir, Owner, check_folders, real_folders};

/// What an installed skill holds instead of the full text, so it never
/// goes stale when qmd is upgraded.
const BOOTSTRAP: &str = "---
name: qmd
description: Bootstrap qmd search instructions from the installed qmd CLI. Use when users ask to find notes, retrieve documents, inspect a wiki, or answer from indexed local markdown.
license: MIT
compatibility: Requires qmd CLI. Run `qmd skill show` for version-matched instructions.
allowed-tools: Bash(qmd:*), mcp__qmd__*
---

# qmd - search local markdown

This installed skill is intentionally a small bootstrap so it does not go stale
when qmd updates.

Load the full, version-matched qmd instructions from the CLI:

!`qmd skill show`

If your agent does not support bang-command expansion, run:

```bash
qmd skill show
```

Then follow those instructions. In short: search first, fetch full sources with
`qmd get` or `qmd multi-get`, and answer from retrieved text rather than snippets.
";

/// `~` (global) or the working folder: where `.agents/skills/qmd` and
/// the `.claude/skills/qmd` link go.
fn base(global: bool) -> Result<PathBuf> {
    Ok(if global {
        std::path::absolute(std::env::var_os("HOME").context("HOME is not set")?)?
    } else {
        std::env::current_dir()?
    })
}

/// Who owns an installed skill's folder. One installed before markers (or
/// a folder of the user's at that name) is written into on `--force`, and
/// nothing in it removed.
pub const OWNER: Owner = Owner { command: "qmd skill install", adopt_unmarked: true };

/// The skill goes in `.agents/skills/qmd`, and nothing outside it is ever
/// written or removed: in a project, `.agents` and `.agents/skills` must be
/// real folders (a link there is refused, naming it). `--force` removes a
/// `qmd` link itself, never what it points to, and of a `qmd` folder only
/// the files an earlier install listed in its marker (see [`OwnedDir`]).
pub fn install(global: bool, yes: bool, force: bool) -> Result<()> {
    let base = base(global)?;
    // A project's folders came with a checkout: they must be real folders.
    // Your home's are yours (dotfile managers link them): followed.
    let (skills_base, skills_rel) =
        if global { (base.join(".agents/skills"), Path::new("")) } else { (base.clone(), Path::new(".agents/skills")) };
    check_folders(&skills_base, skills_rel)?;
    let dir = skills_base.join(skills_rel).join("qmd");
    if let Ok(meta) = dir.symlink_metadata() {
        if !force {
            bail!("Skill already exists: {} (use --force to replace it)", dir.display());
        }
        if meta.file_type().is_symlink() {
            std::fs::remove_file(&dir).with_context(|| format!("cannot remove the link {}", dir.display()))?;
        }
    }
    let owned = OwnedDir::open(&skills_base, &skills_rel.join("qmd"), OWNER)?;
    let earlier = owned.listed();
    owned.remove_all(earlier.iter().map(String::as_str))?;
    let skill = super::qmd_skill()?;
    let bootstrap = ("SKILL.md".to_string(), BOOTSTRAP.to_string());
    for (rel, text) in skill.files.iter().chain([&bootstrap]) {
        owned.write(rel, text.as_bytes())?;
    }
    println!("✓ Installed QMD skill to {}", dir.display());
    let link = base.join(".claude/skills/qmd");
    if !(yes || ask_for_link(&link)?) {
        return Ok(());
    }
    if link_to(&base, &dir, force)? {
        println!("✓ Linked Claude skill at {}", link.display());
    } else {
        println!("✓ Claude already sees the skill via {}", link.parent().expect("has a parent").display());
    }
    Ok(())
}

/// On a terminal, asks; otherwise says how to link by hand (as qmd).
fn ask_for_link(link: &Path) -> Result<bool> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        println!("Tip: create a Claude symlink manually at {}", link.display());
        return Ok(false);
    }
    print!("Create a symlink in {}? [y/N] ", link.display());
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

/// Links `base/.claude/skills/qmd` → `dir` (relative). `false` when
/// `.claude/skills` already is `.agents/skills` (a link there would point
/// at itself); otherwise `.claude` and `.claude/skills` must be real
/// folders, as for the skill itself. `--force` replaces a link or an empty
/// folder there, never a folder with anything in it, nor a file.
fn link_to(base: &Path, dir: &Path, force: bool) -> Result<bool> {
    let parent = base.join(".claude/skills");
    let skills = dir.parent().expect("has a parent");
    if parent.exists() && parent.canonicalize()? == skills.canonicalize()? {
        return Ok(false);
    }
    let claude = real_folders(base, Path::new(".claude/skills"))?;
    let link = claude.join("qmd");
    let target = relative(&claude, dir);
    if let Ok(meta) = link.symlink_metadata() {
        if meta.file_type().is_symlink() && std::fs::read_link(&link)? == target {
            return Ok(true);
        }
        if !force {
            bail!("Claude skill path already exists: {} (use --force to replace it)", link.display());
        }
        let removed = match meta.file_type().is_symlink() {
            true => std::fs::remove_file(&link),
            false => std::fs::remove_dir(&link),
        };
        removed.with_context(|| {
            format!("cannot replace {}: only a link or an empty folder is replaced; move it away", link.display())
        })?;
    }
    symlink(&target, &link).with_context(|| format!("cannot link {}", link.display()))?;
    Ok(true)
}

/// `to` relative to the folder `from` (both absolute).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (from, to): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: PathBuf = std::iter::repeat_n("..", from.len() - shared).collect();
    out.extend(&to[shared..]);
    out
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links() {
        assert_eq!(
            relative(Path::new("/p/.claude/skills"), Path::new("/p/.agents/skills/qmd")),
            Path::new("../../.agents/skills/qmd")
        );
        assert_eq!(relative(Path::new("/p/a"), Path::new("/p/a/b")), Path::new("b"));
    }
}
