//! Files read only if their real path stays under a root: the rule every
//! command that reads a folder follows (`site build` in both formats,
//! `qmd web`; `collection add` gets it from the component's sandbox). A
//! link inside the root that leads out of it, to a file or through a
//! folder, is refused; a link that stays inside is followed.
//!
//! The real path is checked before the open and again on the opened
//! handle (`/proc/self/fd`), so a folder on the way swapped for a link
//! between a walk and the read cannot lead the read out either.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::regular;

/// `path` opened for reading if it is a regular file whose real path is
/// under `root` (a real path itself: canonical, no links).
pub fn open_under(root: &Path, path: &Path) -> io::Result<File> {
    check_under(root, &path.canonicalize()?)?;
    let file = regular::open(path)?;
    if let Some(opened) = opened_path(&file) {
        check_under(root, &opened)?;
    }
    Ok(file)
}

/// Whether `real` (a canonical path) is `root` or inside it; the error
/// names where the link leads.
pub fn check_under(root: &Path, real: &Path) -> io::Result<()> {
    if real.starts_with(root) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("a link out of {} (to {})", crate::files::shown(root), crate::files::shown(real)),
        ))
    }
}

/// Where an opened file really is, as the kernel sees the handle (Linux;
/// elsewhere the check before the open stands alone).
fn opened_path(file: &File) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok().filter(|p| p.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_files_whose_real_path_is_under_the_root_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("site");
        let outside = dir.path().join("secret");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("docs/page.md"), "mine").unwrap();
        std::fs::write(outside.join("passwd.md"), "not yours").unwrap();
        symlink(root.join("docs/page.md"), root.join("alias.md")).unwrap();
        symlink(outside.join("passwd.md"), root.join("passwd.md")).unwrap();
        symlink(&outside, root.join("linked")).unwrap();
        symlink("../..", root.join("docs/up")).unwrap();
        let root = root.canonicalize().unwrap();
        assert!(open_under(&root, &root.join("docs/page.md")).is_ok());
        assert!(open_under(&root, &root.join("alias.md")).is_ok(), "a link inside is followed");
        for escape in ["passwd.md", "linked/passwd.md", "docs/up/secret/passwd.md"] {
            let error = open_under(&root, &root.join(escape)).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{escape}");
            assert!(error.to_string().contains("a link out of"), "{escape}: {error}");
        }
    }
}
