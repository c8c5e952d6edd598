//! Writing files safely: whole (a reader never sees half of one), and
//! inside a folder a command owns without ever following a link there.

pub mod contained;
pub mod regular;

use std::collections::BTreeSet;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

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
    let mut source = regular::open(from).with_context(|| format!("cannot read {}", shown(from)))?;
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
            // A file or a link (itself); a folder there is an error.
            fs::remove_file(&temp).with_context(|| format!("cannot remove {}", shown(&temp)))?;
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

/// The file in a folder a command owns that proves it: JSON naming the
/// command and every path it wrote there (see [`OwnedDir`]).
pub const MARKER: &str = ".qmd-owned";

/// A marker larger than this is not one of ours (read as none).
const MARKER_CAP: u64 = 64 << 20;

/// Which command owns a folder, and what it does with a folder it finds
/// holding files but no marker of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The command, as its marker names it (`qmd edge build`).
    pub command: &'static str,
    /// Such a folder is written into (an earlier version's output, from
    /// before markers) instead of refused; nothing already in it is ever
    /// removed, as nothing there is listed.
    pub adopt_unmarked: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    owner: String,
    files: Vec<String>,
}

/// A folder a command owns (a site's bundle folder, an installed skill's
/// folder, an edge build): it writes and removes there and nowhere else,
/// and never follows a link doing so. A link where it writes a file is
/// replaced (renamed over), a link where it needs a folder is removed (the
/// link, never its target) and a folder made, a link it cleans up is
/// removed itself, and a linked folder is never descended into. The folder
/// itself and those leading to it below the base the user chose are never
/// links.
///
/// What is ours is proven, never guessed from names: the folder's
/// [`MARKER`], written by the command before each file it writes (so a
/// crash leaves nothing of its own unlisted), lists every path it wrote.
/// Only listed files are ever removed, one by one (never a folder with
/// all in it), and a folder only once emptied of them. A non-empty folder
/// without the command's marker is refused (or adopted, [`Owner`]); one
/// with another command's marker is refused. The marker is read as
/// untrusted: only relative paths of plain names inside are honoured.
pub struct OwnedDir {
    root: PathBuf,
    owner: Owner,
    /// What the marker lists.
    listed: Mutex<BTreeSet<String>>,
}

impl OwnedDir {
    /// `base/rel` for `owner`, made where missing. `base` is the user's
    /// choice (links in it are followed); each folder of `rel` must be a
    /// real folder: a link, or a file, there is an error naming it. A
    /// folder that is not `owner`'s (see [`OwnedDir`]) is an error naming
    /// it, before anything is written.
    pub fn open(base: &Path, rel: &Path, owner: Owner) -> Result<OwnedDir> {
        Self::check(base, rel, owner)?;
        let root = real_folders(base, rel)?;
        let listed = match read_marker(&root, owner)? {
            Some(listed) => listed,
            None => {
                refuse_unmarked(&root, owner)?;
                BTreeSet::new()
            }
        };
        let dir = OwnedDir { root, owner, listed: Mutex::new(listed) };
        dir.save(&dir.lock())?;
        Ok(dir)
    }

    /// What [`open`](Self::open) would refuse, checked without making
    /// anything (to fail before long work).
    pub fn check(base: &Path, rel: &Path, owner: Owner) -> Result<()> {
        check_folders(base, rel)?;
        let root = base.join(rel);
        if fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) && read_marker(&root, owner)?.is_none() {
            refuse_unmarked(&root, owner)?;
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.listed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the marker (whole, [`write_atomically`]).
    fn save(&self, listed: &BTreeSet<String>) -> Result<()> {
        let marker = Marker { owner: self.owner.command.to_string(), files: listed.iter().cloned().collect() };
        write_atomically(&self.root.join(MARKER), &serde_json::to_vec_pretty(&marker)?)
    }

    /// Lists `rels` in the marker (saved once, before they are written):
    /// what a command is about to write, or an external tool writes for it.
    pub fn claim<'a>(&self, rels: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let mut listed = self.lock();
        let mut new = false;
        for rel in rels {
            if !is_relative_inside(rel) {
                bail!("{} is not a path inside {}", escape(rel.as_bytes()), shown(&self.root));
            }
            new |= listed.insert(rel.to_string());
        }
        if new { self.save(&listed) } else { Ok(()) }
    }

    /// Every path the marker lists.
    pub fn listed(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    /// `rel` (`/`-separated, [`is_relative_inside`]) inside, with every
    /// folder on the way a real folder (made where missing, a link there
    /// replaced when `make`); `None` without `make` when one is not.
    fn inside(&self, rel: &str, make: bool) -> Result<Option<PathBuf>> {
        if !is_relative_inside(rel) {
            bail!("{} is not a path inside {}", escape(rel.as_bytes()), shown(&self.root));
        }
        let parts: Vec<&str> = rel.split('/').collect();
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
    /// and whatever was at that name, a link included, is replaced),
    /// listed first.
    pub fn write(&self, rel: &str, data: &[u8]) -> Result<()> {
        self.claim([rel])?;
        write_atomically(&self.inside(rel, true)?.expect("made"), data)
    }

    /// Copies the file `from` to `rel` ([`copy_atomically`], with the
    /// same guarantees as [`write`](Self::write)).
    pub fn copy_in(&self, rel: &str, from: &Path) -> Result<()> {
        self.claim([rel])?;
        copy_atomically(&self.inside(rel, true)?.expect("made"), from)
    }

    /// `rel`'s path for another program to write, listed, its folders
    /// made, and whatever file or link was there removed (a link itself):
    /// the program writes a new file, never through a planted link.
    pub fn reserve(&self, rel: &str) -> Result<PathBuf> {
        self.claim([rel])?;
        let path = self.inside(rel, true)?.expect("made");
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => bail!("{} exists and is a folder", shown(&path)),
            Ok(_) => fs::remove_file(&path).with_context(|| format!("cannot remove {}", shown(&path)))?,
            Err(_) => {}
        }
        Ok(path)
    }

    /// Renames the listed file `from` over `to` (listed, whatever was
    /// there replaced, never followed).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.claim([to])?;
        let (Some(source), Some(target)) = (self.inside(from, false)?, self.inside(to, true)?) else {
            bail!("cannot find {from} in {}", shown(&self.root));
        };
        fs::rename(&source, &target).with_context(|| format!("cannot write {}", shown(&target)))?;
        let mut listed = self.lock();
        listed.remove(from);
        self.save(&listed)
    }

    /// Whether `rel` is a file (not a link) of `len` bytes.
    pub fn has_file(&self, rel: &str, len: u64) -> bool {
        matches!(self.inside(rel, false), Ok(Some(path))
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == len))
    }

    /// Removes the listed file `rel`, or every listed file below the
    /// folder `rel` (never anything unlisted: that is skipped), then the
    /// folders this empties; `false` when nothing was removed.
    pub fn remove(&self, rel: &str) -> Result<bool> {
        Ok(self.remove_all([rel])? > 0)
    }

    /// [`remove`](Self::remove) of each of `rels`, the marker saved once;
    /// how many files were removed. A link is removed itself, never what it
    /// points to, and nothing below a linked folder is touched.
    pub fn remove_all<'a>(&self, rels: impl IntoIterator<Item = &'a str>) -> Result<usize> {
        let rels: Vec<&str> = rels.into_iter().collect();
        let mut listed = self.lock();
        let doomed: Vec<String> = listed
            .iter()
            .filter(|l| rels.iter().any(|r| l == r || l.strip_prefix(r).is_some_and(|rest| rest.starts_with('/'))))
            .cloned()
            .collect();
        let mut removed = 0;
        let mut result = Ok(());
        for rel in &doomed {
            match self.remove_listed(rel) {
                Ok(gone) => {
                    removed += usize::from(gone);
                    listed.remove(rel);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.save(&listed)?;
        result.map(|_| removed)
    }

    /// Removes the file or link at the listed `rel` (a folder there is
    /// none of ours: left, unless empty), then its folders while empty.
    fn remove_listed(&self, rel: &str) -> Result<bool> {
        let Some(path) = self.inside(rel, false)? else { return Ok(false) };
        let gone = match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir(&path).is_ok(),
            Ok(_) => {
                fs::remove_file(&path).with_context(|| format!("cannot remove {}", shown(&path)))?;
                true
            }
            Err(e) if e.kind() == ErrorKind::NotFound => false,
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", shown(&path))),
        };
        let mut folder = path.parent();
        while let Some(dir) = folder.filter(|d| *d != self.root && d.starts_with(&self.root)) {
            if fs::remove_dir(dir).is_err() {
                break;
            }
            folder = dir.parent();
        }
        Ok(gone)
    }
}

/// Whether `rel` is a relative path of plain names (`/`-separated, none
/// empty, `.` or `..`, no `\` or NUL): what a folder's marker may name.
pub fn is_relative_inside(rel: &str) -> bool {
    !rel.is_empty()
        && rel != MARKER
        && rel.split('/').all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains(['\\', '\0']))
}

/// The paths `root`'s marker lists, when it is `owner`'s: `None` when
/// there is none (nor a regular file of a sane size and form); an error
/// when it is another command's.
fn read_marker(root: &Path, owner: Owner) -> Result<Option<BTreeSet<String>>> {
    let path = root.join(MARKER);
    // A link, a FIFO or a folder is no marker of ours (and never opened).
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MARKER_CAP) {
        return Ok(None);
    }
    let Ok(bytes) = fs::read(&path) else { return Ok(None) };
    let Ok(marker) = serde_json::from_slice::<Marker>(&bytes) else { return Ok(None) };
    if marker.owner != owner.command {
        bail!(
            "{} holds the output of `{}` (its {MARKER} says so), not of `{}`: choose another folder",
            shown(root),
            qmd_core::display::escape_controls(&marker.owner),
            owner.command
        );
    }
    Ok(Some(marker.files.into_iter().filter(|f| is_relative_inside(f)).collect()))
}

/// A folder with anything in it and no marker: refused unless `owner`
/// adopts such folders.
fn refuse_unmarked(root: &Path, owner: Owner) -> Result<()> {
    let empty = match fs::read_dir(root) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == ErrorKind::NotFound => true,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown(root))),
    };
    if !empty && !owner.adopt_unmarked {
        bail!(
            "{} is not empty and holds no earlier output of `{}` (no {MARKER} marker written by it): choose a new \
             or empty folder",
            shown(root),
            owner.command
        );
    }
    Ok(())
}

/// `base/rel` with each folder of `rel` a real folder, made where missing
/// (`base` is the user's choice: made, and links in it followed); a link,
/// or a file, on the way is an error naming it.
pub fn real_folders(base: &Path, rel: &Path) -> Result<PathBuf> {
    fs::create_dir_all(base).with_context(|| format!("cannot create {}", shown(base)))?;
    let mut root = base.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else { bail!("{} is not a folder name", shown(rel)) };
        root.push(name);
        real_dir(&root, false)?;
    }
    Ok(root)
}

/// What [`real_folders`] would refuse, checked without making anything.
pub fn check_folders(base: &Path, rel: &Path) -> Result<()> {
    let mut path = base.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else { bail!("{} is not a folder name", shown(rel)) };
        path.push(name);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.file_type().is_symlink() => bail!(refused_link(&path)),
            Ok(_) => bail!("{} exists and is not a folder", shown(&path)),
            Err(_) => break,
        }
    }
    Ok(())
}

fn create_new(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new().write(true).create_new(true).open(path)
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

    const OWNER: Owner = Owner { command: "qmd test", adopt_unmarked: false };
    const ADOPTER: Owner = Owner { command: "qmd test", adopt_unmarked: true };

    fn marker(dir: &Path) -> serde_json::Value {
        serde_json::from_slice(&fs::read(dir.join(MARKER)).unwrap()).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn an_owned_folder_never_follows_links() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir_all(outside.join("sub")).unwrap();
        fs::write(outside.join("sub/a.bin"), "keep").unwrap();
        fs::write(outside.join("file"), "keep").unwrap();
        let dir = OwnedDir::open(tmp.path(), Path::new("out/qmd"), OWNER).unwrap();
        symlink(outside.join("sub"), dir.path().join("sub")).unwrap();
        symlink(outside.join("file"), dir.path().join("x.bin")).unwrap();
        assert!(!dir.has_file("sub/a.bin", 4));
        // Listed (as by a forged marker): still never followed.
        dir.claim(["sub/a.bin", "x.bin"]).unwrap();
        assert_eq!(dir.remove_all(["sub/a.bin"]).unwrap(), 0, "not entered through the link");
        dir.write("x.bin", b"new").unwrap();
        dir.write("sub/b.bin", b"new").unwrap();
        assert!(dir.remove("sub/b.bin").unwrap());
        assert_eq!(fs::read_to_string(outside.join("file")).unwrap(), "keep");
        assert_eq!(fs::read_to_string(outside.join("sub/a.bin")).unwrap(), "keep");
        assert_eq!(fs::read_dir(outside.join("sub")).unwrap().count(), 1);
        assert_eq!(fs::read_to_string(dir.path().join("x.bin")).unwrap(), "new");
        let linked = tmp.path().join("linked");
        symlink(&outside, &linked).unwrap();
        let err = OwnedDir::open(tmp.path(), Path::new("linked/qmd"), OWNER).err().unwrap().to_string();
        assert!(err.contains("symbolic link") && err.contains(&linked.display().to_string()), "{err}");
        // A link planted where the marker goes is replaced, never written through.
        let planted = tmp.path().join("planted");
        fs::create_dir(&planted).unwrap();
        symlink(outside.join("file"), planted.join(MARKER)).unwrap();
        let err = OwnedDir::open(tmp.path(), Path::new("planted"), OWNER).err().unwrap().to_string();
        assert!(err.contains("not empty"), "a linked marker proves nothing: {err}");
        OwnedDir::open(tmp.path(), Path::new("planted"), ADOPTER).unwrap();
        assert_eq!(fs::read_to_string(outside.join("file")).unwrap(), "keep");
        assert!(!fs::symlink_metadata(planted.join(MARKER)).unwrap().file_type().is_symlink());
    }

    #[test]
    fn only_what_the_marker_lists_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = OwnedDir::open(tmp.path(), Path::new("out"), OWNER).unwrap();
        dir.write("index/a.seg", b"a").unwrap();
        dir.write("index/deep/b.seg", b"b").unwrap();
        dir.write("top.wasm", b"c").unwrap();
        let root = dir.path().to_path_buf();
        fs::write(root.join("index/user.txt"), "mine").unwrap();
        fs::create_dir_all(root.join("config/notes")).unwrap();
        fs::write(root.join("config/notes/n.md"), "mine").unwrap();
        assert_eq!(marker(&root)["owner"], "qmd test");
        assert_eq!(marker(&root)["files"], serde_json::json!(["index/a.seg", "index/deep/b.seg", "top.wasm"]));
        // Unlisted: skipped, whatever its name.
        assert!(!dir.remove("config").unwrap());
        assert!(!dir.remove("index/user.txt").unwrap());
        assert!(root.join("config/notes/n.md").is_file() && root.join("index/user.txt").is_file());
        // A listed folder's files go; the folder only once they empty it.
        assert_eq!(dir.remove_all(["index", "top.wasm"]).unwrap(), 3);
        assert!(!root.join("index/deep").exists(), "emptied of listed files: removed");
        assert_eq!(fs::read_to_string(root.join("index/user.txt")).unwrap(), "mine");
        assert_eq!(marker(&root)["files"], serde_json::json!([]));
        // Reopened, the marker proves the folder ours, and it stays so.
        dir.write("index/a.seg", b"a").unwrap();
        drop(dir);
        let dir = OwnedDir::open(tmp.path(), Path::new("out"), OWNER).unwrap();
        assert_eq!(dir.listed(), ["index/a.seg"]);
        for bad in ["", "/etc/x", "a//b", "../x", "a/../../x", "./a", "a\\b", "a\0b", MARKER] {
            assert!(dir.claim([bad]).is_err() && dir.write(bad, b"x").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_marker_is_untrusted_input() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir_all(victim.join("sub")).unwrap();
        fs::write(victim.join("sub/keep.txt"), "keep").unwrap();
        let abs = victim.join("sub/keep.txt");
        let out = tmp.path().join("out");
        fs::create_dir_all(out.join("d")).unwrap();
        fs::write(out.join("d/mine.txt"), "ours").unwrap();
        let forged = serde_json::json!({
            "owner": "qmd test",
            "files": ["../victim/sub/keep.txt", "../victim", abs.to_str().unwrap(), "d/../../victim/sub/keep.txt",
                      "", ".", "..", "d\\..\\..\\victim", "d/mine.txt\0", MARKER, "d/mine.txt"],
        });
        fs::write(out.join(MARKER), forged.to_string()).unwrap();
        let dir = OwnedDir::open(tmp.path(), Path::new("out"), OWNER).unwrap();
        assert_eq!(dir.listed(), ["d/mine.txt"], "only relative paths inside are honoured");
        assert_eq!(dir.remove_all(dir.listed().iter().map(String::as_str)).unwrap(), 1);
        assert!(!out.join("d").exists());
        assert_eq!(fs::read_to_string(&abs).unwrap(), "keep");
        assert!(out.join(MARKER).is_file(), "the marker itself stays");
    }

    #[test]
    fn a_folder_is_ours_only_with_our_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        fs::create_dir_all(user.join("config")).unwrap();
        fs::write(user.join("config/index.yml"), "mine").unwrap();
        fs::write(user.join("qmd-edge.wasm"), "").unwrap();
        for rel in ["user", "user/"] {
            let err = OwnedDir::check(tmp.path(), Path::new(rel), OWNER).unwrap_err().to_string();
            assert!(err.contains("not empty") && err.contains(MARKER), "{err}");
            let err = OwnedDir::open(tmp.path(), Path::new(rel), OWNER).err().unwrap().to_string();
            assert!(err.contains("not empty"), "{err}");
        }
        assert!(!user.join(MARKER).exists(), "a refused folder is left as it was");
        // Adopted: written into, nothing there removed.
        let dir = OwnedDir::open(tmp.path(), Path::new("user"), ADOPTER).unwrap();
        assert!(dir.listed().is_empty());
        assert!(!dir.remove("config").unwrap() && !dir.remove("qmd-edge.wasm").unwrap());
        assert_eq!(fs::read_to_string(user.join("config/index.yml")).unwrap(), "mine");
        // Another command's folder is refused, even by an adopter.
        let other = Owner { command: "qmd other", adopt_unmarked: true };
        let err = OwnedDir::open(tmp.path(), Path::new("user"), other).err().unwrap().to_string();
        assert!(err.contains("`qmd test`") && err.contains("`qmd other`"), "{err}");
        assert!(OwnedDir::check(tmp.path(), Path::new("user"), other).is_err());
        // A marker that is a folder, or damaged, proves nothing.
        let odd = tmp.path().join("odd");
        fs::create_dir_all(odd.join(MARKER)).unwrap();
        assert!(OwnedDir::open(tmp.path(), Path::new("odd"), OWNER).is_err());
        fs::remove_dir(odd.join(MARKER)).unwrap();
        fs::write(odd.join(MARKER), "{not json").unwrap();
        assert!(OwnedDir::open(tmp.path(), Path::new("odd"), OWNER).is_err());
        // New and empty folders are fine.
        OwnedDir::open(tmp.path(), Path::new("new"), OWNER).unwrap();
        fs::create_dir(tmp.path().join("empty")).unwrap();
        OwnedDir::open(tmp.path(), Path::new("empty"), OWNER).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_marker_never_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("f");
        fs::create_dir(&dir).unwrap();
        let fifo = std::ffi::CString::new(dir.join(MARKER).to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = OwnedDir::open(tmp.path(), Path::new("f"), OWNER).err().unwrap().to_string();
        assert!(err.contains("not empty"), "{err}");
    }
}
