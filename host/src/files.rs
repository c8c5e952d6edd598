//! Writing files safely: whole (a reader never sees half of one), and
//! inside a folder a command owns without ever following a link there.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Writes `data` through a temporary file beside `path` (named for this
/// process, ending `.partial`) and a rename; parent folders are created.
/// The temporary file is created exclusively, so a leftover or a link
/// planted at its name is removed (the link itself), never written
/// through; the rename then replaces whatever was at `path`, a link too.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    replace_with(path, |file| file.write_all(data))
}

/// [`write_atomically`] with the bytes of the file `from`, streamed (a
/// model file need not fit in memory).
pub fn copy_atomically(path: &Path, from: &Path) -> Result<()> {
    let mut source = fs::File::open(from).with_context(|| format!("cannot read {}", shown(from)))?;
    replace_with(path, |file| std::io::copy(&mut source, file).map(|_| ()))
}

/// The file at `path` replaced by what `fill` writes, as
/// [`write_atomically`] describes.
fn replace_with(path: &Path, fill: impl FnOnce(&mut fs::File) -> std::io::Result<()>) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).with_context(|| format!("cannot create {}", shown(parent)))?;
    }
    let temp = path.with_extension(format!("{}.partial", std::process::id()));
    let mut file = match create_new(&temp) {
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            remove(&temp)?;
            create_new(&temp)
        }
        other => other,
    }
    .with_context(|| format!("cannot write {}", shown(&temp)))?;
    let written = fill(&mut file).and_then(|_| file.flush());
    drop(file);
    written.and_then(|_| fs::rename(&temp, path)).map_err(|e| {
        let _ = fs::remove_file(&temp);
        anyhow::Error::new(e).context(format!("cannot write {}", shown(path)))
    })
}

/// A name as raw bytes, shown on one line (`qmd_core::display`, the one
/// implementation): bytes that are not UTF-8 as `\xNN`, controls escaped.
pub use qmd_core::display::escape_bytes as escape;

/// [`escape`] of a path.
pub fn shown(path: &Path) -> String {
    escape(path.as_os_str().as_encoded_bytes())
}

/// A folder a command owns (a site's bundle folder, an installed skill's
/// folder): it writes and removes there and nowhere else, and never
/// follows a link doing so. A link where it writes a file is replaced
/// (renamed over), a link where it needs a folder is removed (the link,
/// never its target) and a folder made, a link it cleans up is removed
/// itself, and a linked folder is never descended into. The folder itself
/// and those leading to it below the base the user chose are never links.
pub struct OwnedDir {
    root: PathBuf,
}

impl OwnedDir {
    /// `base/rel`, made where missing. `base` is the user's choice (links
    /// in it are followed); each folder of `rel` must be a real folder:
    /// a link, or a file, there is an error naming it.
    pub fn open(base: &Path, rel: &Path) -> Result<OwnedDir> {
        fs::create_dir_all(base).with_context(|| format!("cannot create {}", shown(base)))?;
        let mut root = base.to_path_buf();
        for part in rel.components() {
            let Component::Normal(name) = part else { bail!("{} is not a folder name", shown(rel)) };
            root.push(name);
            real_dir(&root, false)?;
        }
        Ok(OwnedDir { root })
    }

    /// What [`open`](Self::open) would refuse, checked without making
    /// anything (to fail before long work).
    pub fn check(base: &Path, rel: &Path) -> Result<()> {
        let mut path = base.to_path_buf();
        for part in rel.components() {
            path.push(part);
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => bail!(refused_link(&path)),
                Ok(_) => bail!("{} exists and is not a folder", shown(&path)),
                Err(_) => break,
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `rel` (`/`-separated) inside, with every folder on the way a real
    /// folder (made where missing, a link there replaced when `make`);
    /// `None` without `make` when one is not.
    fn inside(&self, rel: &str, make: bool) -> Result<Option<PathBuf>> {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() || parts.iter().any(|p| *p == "." || *p == "..") {
            bail!("{} is not a path inside {}", escape(rel.as_bytes()), shown(&self.root));
        }
        let mut path = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            if i + 1 == parts.len() {
                break;
            }
            if make {
                real_dir(&path, true)?;
            } else if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                return Ok(None);
            }
        }
        Ok(Some(path))
    }

    /// Writes `rel` whole ([`write_atomically`]: never through a link,
    /// and whatever was at that name, a link included, is replaced).
    pub fn write(&self, rel: &str, data: &[u8]) -> Result<()> {
        write_atomically(&self.inside(rel, true)?.expect("made"), data)
    }

    /// Copies the file `from` to `rel` ([`copy_atomically`], with the
    /// same guarantees as [`write`](Self::write)).
    pub fn copy_in(&self, rel: &str, from: &Path) -> Result<()> {
        copy_atomically(&self.inside(rel, true)?.expect("made"), from)
    }

    /// Whether `rel` is a file (not a link) of `len` bytes.
    pub fn has_file(&self, rel: &str, len: u64) -> bool {
        matches!(self.inside(rel, false), Ok(Some(path))
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == len))
    }

    /// Removes `rel` (a file, or a folder with all in it), a link itself
    /// and never what it points to; `false` when there was nothing.
    pub fn remove(&self, rel: &str) -> Result<bool> {
        match self.inside(rel, false)? {
            Some(path) if fs::symlink_metadata(&path).is_ok() => remove(&path).map(|_| true),
            _ => Ok(false),
        }
    }

    /// Every file and link inside, `/`-separated (linked folders are not
    /// entered; names that are not UTF-8 are none of the owner's).
    pub fn files(&self) -> Result<Vec<String>> {
        fn visit(dir: &Path, rel: &str, out: &mut Vec<String>) -> Result<()> {
            for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", shown(dir)))? {
                let entry = entry.with_context(|| format!("cannot read {}", shown(dir)))?;
                let Ok(name) = entry.file_name().into_string() else { continue };
                let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
                if entry.file_type()?.is_dir() {
                    visit(&entry.path(), &path, out)?;
                } else {
                    out.push(path);
                }
            }
            Ok(())
        }
        let mut out = Vec::new();
        visit(&self.root, "", &mut out)?;
        Ok(out)
    }

    /// Removes the empty folders right inside the folder `rel` (nothing
    /// when `rel` is a link or missing).
    pub fn remove_empty_dirs_in(&self, rel: &str) {
        let Ok(Some(path)) = self.inside(rel, false) else { return };
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return;
        }
        for entry in fs::read_dir(&path).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
}

fn create_new(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new().write(true).create_new(true).open(path)
}

/// Removes a file, a link (itself) or a folder with all in it; links in
/// it are removed, never followed (`remove_dir_all` does not follow them).
fn remove(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).with_context(|| format!("cannot remove {}", shown(path)))?;
    if meta.is_dir() { fs::remove_dir_all(path) } else { fs::remove_file(path) }
        .with_context(|| format!("cannot remove {}", shown(path)))
}

fn refused_link(path: &Path) -> String {
    format!(
        "{} is a symbolic link: refusing to write through it (replace it with a folder, or choose another place)",
        shown(path)
    )
}

/// `path` as a real folder, made when missing. A link there is an error
/// naming it, or with `replace_link` removed (the link) for a folder.
fn real_dir(path: &Path, replace_link: bool) -> Result<()> {
    for _ in 0..3 {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(meta) if meta.file_type().is_symlink() => {
                if !replace_link {
                    bail!(refused_link(path));
                }
                fs::remove_file(path).with_context(|| format!("cannot remove the link {}", shown(path)))?;
            }
            Ok(_) => bail!("{} exists and is not a folder", shown(path)),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown(path))),
        }
        match fs::create_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue, // raced: look again
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", shown(path))),
        }
    }
    bail!("cannot create {}: it keeps changing", shown(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn an_owned_folder_never_follows_links() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir_all(outside.join("sub")).unwrap();
        fs::write(outside.join("sub/a.bin"), "keep").unwrap();
        fs::write(outside.join("file"), "keep").unwrap();
        let dir = OwnedDir::open(tmp.path(), Path::new("out/qmd")).unwrap();
        symlink(outside.join("sub"), dir.path().join("sub")).unwrap();
        symlink(outside.join("file"), dir.path().join("x.bin")).unwrap();
        assert!(!dir.has_file("sub/a.bin", 4));
        assert_eq!(dir.files().unwrap().len(), 2, "links listed, not entered");
        dir.write("x.bin", b"new").unwrap();
        dir.write("sub/b.bin", b"new").unwrap();
        assert!(dir.remove("sub/b.bin").unwrap());
        assert_eq!(fs::read_to_string(outside.join("file")).unwrap(), "keep");
        assert_eq!(fs::read_dir(outside.join("sub")).unwrap().count(), 1);
        assert_eq!(fs::read_to_string(dir.path().join("x.bin")).unwrap(), "new");
        let linked = tmp.path().join("linked");
        symlink(&outside, &linked).unwrap();
        let err = OwnedDir::open(tmp.path(), Path::new("linked/qmd")).err().unwrap().to_string();
        assert!(err.contains("symbolic link") && err.contains(&linked.display().to_string()), "{err}");
    }
}
