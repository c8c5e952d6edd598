//! [`Directory`] and [`SourceTree`] over `std::fs`, which inside the
//! component means WASI preopens: the host grants the index directory and
//! each collection root, and nothing else is reachable.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::directory::Directory;
use crate::error::{Error, ErrorKind, Result};
use crate::source::{FileStat, MAX_FILE_BYTES, ReadFailure, SourceFile, SourceTree, WalkEntry};

/// An I/O error naming the path, worded without WASI's errno numbers
/// (`os error 44` means nothing to a user on Linux).
fn io_error(name: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let (kind, what) = match e.kind() {
        K::NotFound => (ErrorKind::NotFound, "not found".to_string()),
        K::PermissionDenied => (ErrorKind::Io, "permission denied".to_string()),
        K::UnexpectedEof => (ErrorKind::Io, "shorter than expected".to_string()),
        K::NotADirectory => (ErrorKind::Io, "not a directory".to_string()),
        other => (ErrorKind::Io, format!("{other}")),
    };
    Error::new(kind, format!("{}: {what}", name.display()))
}

/// Index files in one directory.
pub struct FsDirectory {
    root: PathBuf,
}

impl FsDirectory {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsDirectory { root: root.into() }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Opens an index file for reading, refusing what is not a regular
    /// file. The check is on the opened descriptor, so a FIFO put in a
    /// file's place is named, never read (the host opens it non-blocking).
    fn open_regular(&self, path: &Path) -> Result<File> {
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        let meta = file.metadata().map_err(|e| io_error(path, e))?;
        if !meta.is_file() {
            return Err(Error::io(format!("{}: not a regular file", path.display())));
        }
        Ok(file)
    }

    /// Writes a new file and flushes it; never replaces one.
    fn write_synced(&self, path: &Path, data: &[u8]) -> Result<()> {
        let mut file = File::create_new(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::exists(format!("{}: already exists", path.display())),
            _ => io_error(path, e),
        })?;
        file.write_all(data).map_err(|e| io_error(path, e))?;
        file.sync_all().map_err(|e| io_error(path, e))
    }
}

impl Directory for FsDirectory {
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.path(name);
        let mut bytes = Vec::new();
        self.open_regular(&path)?.read_to_end(&mut bytes).map_err(|e| io_error(&path, e))?;
        Ok(bytes)
    }

    fn read_range(&self, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let path = self.path(name);
        let mut file = self.open_regular(&path)?;
        file.seek(SeekFrom::Start(offset)).map_err(|e| io_error(&path, e))?;
        let mut buf = vec![0; len];
        file.read_exact(&mut buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::corrupt(&self.describe(name), "the file is shorter than expected")
            }
            _ => io_error(&path, e),
        })?;
        Ok(buf)
    }

    fn write(&self, name: &str, data: &[u8]) -> Result<()> {
        self.write_synced(&self.path(name), data)
    }

    fn atomic_write(&self, name: &str, data: &[u8]) -> Result<()> {
        let target = self.path(name);
        // No process ids under WASI; the clock makes the name unique enough,
        // and the writer lock rules out a concurrent writer.
        let stamp = std::time::SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let temp = self.path(&format!("{name}.{stamp}.tmp"));
        self.write_synced(&temp, data)?;
        fs::rename(&temp, &target).map_err(|e| io_error(&target, e))?;
        // Make the rename itself durable where the platform lets us.
        if let Ok(dir) = File::open(&self.root) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&path, e)),
            _ => Ok(()),
        }
    }

    fn list(&self) -> Result<Vec<String>> {
        let entries = fs::read_dir(&self.root).map_err(|e| io_error(&self.root, e))?;
        Ok(entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
    }

    fn size(&self, name: &str) -> Result<u64> {
        let path = self.path(name);
        fs::metadata(&path).map(|m| m.len()).map_err(|e| io_error(&path, e))
    }

    fn describe(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// Collection roots on the filesystem.
pub struct FsSource;

/// What an entry of a listed directory is, as the listing says (a symlink
/// is not followed).
#[derive(Clone, Copy, PartialEq)]
enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

/// One directory's entries, and what the listing could not give.
#[derive(Default)]
struct Listing {
    entries: Vec<(String, EntryKind)>,
    /// Entries whose names are not UTF-8: the name with its bytes escaped
    /// where the platform lets us see it.
    bad_names: Vec<Option<String>>,
    /// Why the listing is incomplete (an entry failed in another way).
    incomplete: Option<String>,
}

/// Errors after which a listing is given up as incomplete: a host that
/// keeps failing must not keep the walk going forever.
const MAX_ENTRY_ERRORS: usize = 65_536;

/// Lists `dir` through WASI's directory stream. std's `read_dir` (wasi-libc
/// underneath) ends at the first entry that fails, and the host fails an
/// entry whose name is not UTF-8 (WASI names are strings): every entry
/// after it would be missing. The stream itself goes on past a failed
/// entry, so we read on.
#[cfg(target_os = "wasi")]
fn list(dir: &Path) -> std::io::Result<Listing> {
    use wasip2::filesystem::types::{DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags};

    let wanted = dir.to_string_lossy();
    // The preopen holding `dir`: the longest whose path is a whole-component prefix.
    let preopen = wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .filter_map(|(descriptor, at)| {
            let at = at.trim_end_matches('/').to_string();
            let rest = wanted.strip_prefix(at.as_str())?;
            (rest.is_empty() || rest.starts_with('/'))
                .then(|| (at.len(), descriptor, rest.trim_start_matches('/').to_string()))
        })
        .max_by_key(|(len, _, _)| *len);
    let Some((_, base, rest)) = preopen else { return list_std(dir) };
    let to_io = |code: ErrorCode| std::io::Error::other(format!("{code:?}"));
    let opened;
    let descriptor = if rest.is_empty() {
        &base
    } else {
        opened =
            base.open_at(PathFlags::empty(), &rest, OpenFlags::DIRECTORY, DescriptorFlags::READ).map_err(|code| {
                match code {
                    ErrorCode::NoEntry => std::io::Error::from(std::io::ErrorKind::NotFound),
                    ErrorCode::Access | ErrorCode::NotPermitted => {
                        std::io::Error::from(std::io::ErrorKind::PermissionDenied)
                    }
                    ErrorCode::NotDirectory => std::io::Error::from(std::io::ErrorKind::NotADirectory),
                    other => to_io(other),
                }
            })?;
        &opened
    };
    let stream = descriptor.read_directory().map_err(to_io)?;
    let mut listing = Listing::default();
    let mut errors = 0;
    loop {
        match stream.read_directory_entry() {
            Ok(None) => break,
            Ok(Some(entry)) => {
                let kind = match entry.type_ {
                    DescriptorType::Directory => EntryKind::Dir,
                    DescriptorType::RegularFile => EntryKind::File,
                    DescriptorType::SymbolicLink => EntryKind::Symlink,
                    DescriptorType::Unknown => kind_of(&dir.join(&entry.name)),
                    _ => EntryKind::Other,
                };
                listing.entries.push((entry.name, kind));
                continue;
            }
            Err(ErrorCode::IllegalByteSequence) => listing.bad_names.push(None),
            Err(code) => listing.incomplete = Some(format!("{code:?}")),
        }
        errors += 1;
        if errors >= MAX_ENTRY_ERRORS {
            listing.incomplete = Some("TOO_MANY_UNREADABLE_ENTRIES".into());
            break;
        }
    }
    Ok(listing)
}

#[cfg(not(target_os = "wasi"))]
fn list(dir: &Path) -> std::io::Result<Listing> {
    list_std(dir)
}

/// Lists `dir` through std, where names are bytes we can show. std ends a
/// listing at its first failed entry; that makes the listing incomplete.
fn list_std(dir: &Path) -> std::io::Result<Listing> {
    let mut listing = Listing::default();
    for entry in fs::read_dir(dir)? {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                listing.incomplete = Some(error_code(&e));
                break;
            }
        };
        let kind = match entry.file_type() {
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(_) => EntryKind::Other,
            Err(e) => {
                listing.incomplete = Some(error_code(&e));
                continue;
            }
        };
        match entry.file_name().into_string() {
            Ok(name) => listing.entries.push((name, kind)),
            Err(raw) => listing.bad_names.push(Some(raw_name(&raw))),
        }
    }
    Ok(listing)
}

#[cfg(unix)]
fn raw_name(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::display::escape_bytes(name.as_bytes())
}

#[cfg(not(unix))]
fn raw_name(name: &std::ffi::OsStr) -> String {
    crate::display::escape_controls(&name.to_string_lossy()).into_owned()
}

/// The kind of `path` itself (a symlink is not followed).
#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
fn kind_of(path: &Path) -> EntryKind {
    match fs::symlink_metadata(path).map(|m| m.file_type()) {
        Ok(t) if t.is_dir() => EntryKind::Dir,
        Ok(t) if t.is_file() => EntryKind::File,
        Ok(t) if t.is_symlink() => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// Walks `root/rel`. Only a failure to open the root itself is an error; a
/// subdirectory that cannot be listed, a listing that stopped early and a
/// name that is not UTF-8 are reported to the visitor and passed over.
fn walk_dir(root: &Path, rel: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
    let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
    let listing = match list(&dir) {
        Ok(listing) => listing,
        Err(e) if rel.is_empty() => return Err(io_error(&dir, e)),
        Err(e) => {
            visit(WalkEntry::Incomplete { dir: rel, reason: &error_code(&e) });
            return Ok(());
        }
    };
    if let Some(reason) = &listing.incomplete {
        visit(WalkEntry::Incomplete { dir: rel, reason });
    }
    for name in &listing.bad_names {
        visit(WalkEntry::BadName { dir: rel, name: name.as_deref() });
    }
    let mut entries = listing.entries;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        let child = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        match kind {
            EntryKind::Dir => {
                if visit(WalkEntry::Dir(&child)) {
                    walk_dir(root, &child, visit)?;
                }
            }
            // Symlinked directories are never followed; symlinked files are
            // offered and checked for containment when read.
            EntryKind::Symlink if fs::metadata(root.join(&child)).is_ok_and(|m| m.is_dir()) => {}
            EntryKind::File | EntryKind::Symlink => {
                visit(WalkEntry::File(&child));
            }
            EntryKind::Other => {}
        }
    }
    Ok(())
}

/// Whether `path` resolves inside `root`. Under WASI the preopen already
/// refuses escapes; natively we compare canonical paths component-wise, so
/// `/notes-evil` is not inside `/notes`.
fn contained(root: &Path, path: &Path) -> bool {
    if cfg!(target_os = "wasi") {
        return true;
    }
    match (fs::canonicalize(root), fs::canonicalize(path)) {
        (Ok(root), Ok(path)) => path.starts_with(root),
        _ => false,
    }
}

impl SourceTree for FsSource {
    fn walk(&self, root: &str, visit: &mut dyn FnMut(WalkEntry<'_>) -> bool) -> Result<()> {
        walk_dir(Path::new(root), "", visit)
    }

    fn read(&self, root: &str, relative: &str) -> std::result::Result<SourceFile, ReadFailure> {
        if !crate::vpath::is_contained(relative) {
            return Err(ReadFailure::OutsideCollection);
        }
        let path = Path::new(root).join(relative);
        if !contained(Path::new(root), &path) {
            return Err(ReadFailure::OutsideCollection);
        }
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        // What the path (through any symlink) is, before opening it: opening
        // a FIFO blocks until a writer comes, which may be never.
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            // The sandbox refuses a symlink whose target leaves the root.
            Err(_) if is_link => return Err(ReadFailure::OutsideCollection),
            Err(e) => return Err(ReadFailure::Unreadable(error_code(&e))),
        };
        if !meta.is_file() {
            return Err(ReadFailure::NotAFile);
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(ReadFailure::TooLarge(meta.len()));
        }
        let file = File::open(&path).map_err(|e| ReadFailure::Unreadable(error_code(&e)))?;
        // Swapped for something else since the check: still never a FIFO's wait.
        let meta = file.metadata().map_err(|e| ReadFailure::Unreadable(error_code(&e)))?;
        if !meta.is_file() {
            return Err(ReadFailure::NotAFile);
        }
        let mut bytes = Vec::new();
        // A file growing while it is read stops at the limit plus one byte.
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| ReadFailure::Unreadable(error_code(&e)))?;
        Ok(SourceFile { bytes, modified_ms: modified_ms(&meta) })
    }

    fn stat(&self, root: &str, relative: &str) -> Option<FileStat> {
        if !crate::vpath::is_contained(relative) {
            return None;
        }
        let meta = fs::symlink_metadata(Path::new(root).join(relative)).ok()?;
        meta.file_type().is_file().then(|| FileStat { size: meta.len(), modified_ms: modified_ms(&meta) })
    }
}

fn modified_ms(meta: &fs::Metadata) -> i64 {
    meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_millis() as i64)
}

fn error_code(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "ENOENT".into(),
        std::io::ErrorKind::PermissionDenied => "EACCES".into(),
        std::io::ErrorKind::IsADirectory => "EISDIR".into(),
        std::io::ErrorKind::NotADirectory => "ENOTDIR".into(),
        // WASI's own error codes, carried as the message.
        std::io::ErrorKind::Other => e.to_string(),
        other => format!("{other:?}"),
    }
}
