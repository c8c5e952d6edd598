//! One writer at a time per index: an exclusive `flock` on `<index>/.lock`,
//! held for the duration of a writing command.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

pub struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Waits for the lock (another `qmd update` may be running).
    pub fn acquire(index_dir: &Path) -> Result<WriteLock> {
        let path = index_dir.join(".lock");
        // Kept as it is (never written), and opened only if it is a regular
        // file: a FIFO there blocked every writing command in the open.
        let file = crate::files::regular::append(&path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        // SAFETY: flock on a descriptor we own; released when the file closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            eprintln!("Waiting for another qmd process to finish writing the index...");
            // SAFETY: as above, now blocking.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                anyhow::bail!("cannot lock {}: {}", path.display(), std::io::Error::last_os_error());
            }
        }
        Ok(WriteLock { _file: file })
    }
}
