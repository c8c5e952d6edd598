//! Reading and writing files that must be regular files (model files,
//! cache entries, a server's log): a FIFO, device or socket in a file's
//! place is refused, never opened for a blocking read or write. `open(2)`
//! of a FIFO with no writer (or, to write, no reader) blocks in the open
//! itself, so the file is opened with `O_NONBLOCK` and the opened
//! handle's metadata is checked (not the path's, which a rename could
//! change between the check and the open).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// `path` opened for reading if it is (or links to) a regular file.
pub fn open(path: &Path) -> io::Result<File> {
    let file = File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() { Ok(file) } else { Err(not_regular(kind)) }
}

/// `path` created, or emptied, for writing if it is a regular file: never
/// written through a link (which could point at a user's file), and a
/// FIFO, folder or device there is refused without blocking.
pub fn create(path: &Path) -> io::Result<File> {
    open_to_write(path, false)
}

/// [`create`], but keeping what the file holds and writing after it (a
/// download resumed).
pub fn append(path: &Path) -> io::Result<File> {
    open_to_write(path, true)
}

fn open_to_write(path: &Path, append: bool) -> io::Result<File> {
    let opened = File::options()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        // ELOOP (a link), ENXIO (a FIFO no one reads), EISDIR: say what is there.
        Err(error) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(meta) if !meta.is_file() => not_regular(meta.file_type()),
                _ => error,
            });
        }
    };
    let kind = file.metadata()?.file_type();
    if kind.is_file() { Ok(file) } else { Err(not_regular(kind)) }
}

/// The error for an entry of `kind` where a regular file must be.
pub fn not_regular(kind: std::fs::FileType) -> io::Error {
    let what = if kind.is_symlink() {
        "a link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "not a file"
    };
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, not a regular file"))
}

/// The bytes of the regular file `path`, if it holds at most `limit`
/// bytes: no more than `limit + 1` are ever read (a file that grows while
/// read cannot size the buffer either).
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_opened(open(path)?, limit)
}

/// An opened file's bytes, at most `limit` of them (more is an error).
pub fn read_opened(file: File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {limit} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
        assert!(status.success());
    }

    #[test]
    fn only_regular_files_are_read_and_only_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("entry.json");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read(&file, 10).unwrap(), b"0123456789");
        assert_eq!(read(&file, 9).unwrap_err().kind(), io::ErrorKind::InvalidData);
        // A link to a regular file is read; a FIFO (no writer: a blocking
        // open would never return), a folder and a device are refused.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read(&link, 10).unwrap(), b"0123456789");
        let fifo = dir.path().join("fifo.json");
        mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        let fifo_path = fifo.clone();
        std::thread::spawn(move || tx.send(read(&fifo_path, 10).map_err(|e| e.to_string())));
        let refused = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a FIFO must not block");
        assert!(refused.unwrap_err().contains("a FIFO, not a regular file"));
        assert!(read(dir.path(), 10).is_err());
        assert!(read(Path::new("/dev/zero"), 10).unwrap_err().to_string().contains("a device"));
        assert_eq!(read(&dir.path().join("missing"), 10).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn files_are_created_only_as_regular_files_never_through_a_link_or_a_fifo() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        create(&log).unwrap().write_all(b"first").unwrap();
        create(&log).unwrap().write_all(b"2").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"2", "an existing file is emptied");
        append(&log).unwrap().write_all(b"3").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"23", "or kept and written after");
        // A link is refused, and what it points at keeps its bytes.
        let mine = dir.path().join("mine.txt");
        std::fs::write(&mine, b"keep").unwrap();
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        assert!(create(&link).unwrap_err().to_string().contains("a link, not a regular file"));
        assert!(append(&link).unwrap_err().to_string().contains("a link, not a regular file"));
        assert_eq!(std::fs::read(&mine).unwrap(), b"keep");
        // A FIFO, with no reader (a blocking open would never return) and
        // with one, and a folder are refused.
        let fifo = dir.path().join("fifo.log");
        mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        let fifo_path = fifo.clone();
        std::thread::spawn(move || tx.send(create(&fifo_path).map(|_| ()).map_err(|e| e.to_string())));
        let refused = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a FIFO must not block");
        assert!(refused.unwrap_err().contains("a FIFO, not a regular file"));
        assert!(append(&fifo).unwrap_err().to_string().contains("a FIFO, not a regular file"));
        let _reader = File::options().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        assert!(create(&fifo).unwrap_err().to_string().contains("a FIFO, not a regular file"));
        assert!(create(dir.path()).unwrap_err().to_string().contains("a folder, not a regular file"));
    }
}
