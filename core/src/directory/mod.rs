//! Where index files live. The engine never touches a filesystem itself:
//! the WASI component implements [`Directory`] over a preopened directory,
//! the browser over OPFS, tests over [`RamDirectory`].

mod ram;

pub use ram::RamDirectory;

use crate::error::Result;

/// Write-once-read-many file storage.
///
/// Contract:
/// - `write` creates a new file that is never modified afterwards; it must be
///   durable (flushed) when `write` returns, but it need not appear
///   atomically: the engine only names a file in the manifest after it was
///   written, so a torn file is never read. It never replaces a file: when
///   `name` exists it fails with [`crate::ErrorKind::AlreadyExists`].
/// - `atomic_write` replaces a small file so that readers see either the old
///   or the new content, never a mix, even after a crash (temp file, flush,
///   rename, flush the directory).
/// - Reads of a missing file fail with [`crate::ErrorKind::NotFound`].
pub trait Directory {
    fn read(&self, name: &str) -> Result<Vec<u8>>;
    fn read_range(&self, name: &str, offset: u64, len: usize) -> Result<Vec<u8>>;
    fn write(&self, name: &str, data: &[u8]) -> Result<()>;
    fn atomic_write(&self, name: &str, data: &[u8]) -> Result<()>;
    fn delete(&self, name: &str) -> Result<()>;
    fn list(&self) -> Result<Vec<String>>;
    /// Total bytes of the named files (for `status`).
    fn size(&self, name: &str) -> Result<u64>;

    /// How to name a file of this directory to the user (its full path
    /// where there is one), e.g. in "is damaged" messages.
    fn describe(&self, name: &str) -> String {
        name.to_string()
    }
}
