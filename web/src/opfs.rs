//! Index files in the Origin Private File System: the browser backend of
//! the engine's [`Directory`] trait.
//!
//! OPFS reads and writes are synchronous only through a
//! `FileSystemSyncAccessHandle`, and opening one is asynchronous. So:
//! - every stored file's handle is opened once, when the directory is
//!   opened, and reads go through it (segments are read in ranges, never
//!   loaded whole);
//! - what the engine writes during an operation is staged in memory, and
//!   [`OpfsDirectory::commit`] (async) stores it afterwards: new files
//!   first, then the small atomically replaced ones (manifest, config),
//!   then deletions. A page closed mid-commit leaves the last committed
//!   manifest and every file it names, exactly as a crash does on disk.
//!
//! There is no atomic rename to rely on, so a file replaced atomically is
//! kept in two slots (`name~a`, `name~b`), each framed with a generation
//! and a checksum; a write goes to the older slot, and a read takes the
//! newest slot whose checksum holds. A torn write spoils only the slot
//! being written, never the current one.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use js_sys::Uint8Array;
use qmd_core::{Directory, Error, ErrorKind, Result};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    File, FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions, FileSystemGetFileOptions,
    FileSystemReadWriteOptions, FileSystemSyncAccessHandle,
};

use crate::js::{js_error, next_entries};

/// The two slots of an atomically replaced file.
const SLOTS: [&str; 2] = ["~a", "~b"];
const SLOT_MAGIC: &[u8; 4] = b"QMDS";
/// Magic, generation (u64), length (u32), CRC-32 (u32).
const SLOT_HEADER: usize = 20;
/// A slot holds a manifest or a config (kilobytes at 38k notes); one larger
/// than this is damage, read as torn rather than loaded whole into the tab.
const MAX_SLOT_BYTES: usize = 64 << 20;

/// A file as this directory holds it.
enum Entry {
    /// Committed; reads go through its open handle.
    Stored(FileSystemSyncAccessHandle),
    /// Written since the last commit; held in memory until then.
    Staged(Rc<Vec<u8>>),
    /// Replaced atomically: content in memory, two slots on OPFS.
    Atomic(AtomicFile),
}

struct AtomicFile {
    data: Rc<Vec<u8>>,
    generation: u64,
    /// Slot of `generation` (0 or 1); the next write goes to the other.
    slot: usize,
    dirty: bool,
}

pub struct OpfsDirectory {
    handle: FileSystemDirectoryHandle,
    files: RefCell<BTreeMap<String, Entry>>,
    /// OPFS entries to remove at the next commit, after the manifest that
    /// stopped naming them is stored.
    doomed: RefCell<Vec<String>>,
}

impl OpfsDirectory {
    /// Opens (creating) `path` under the origin's OPFS root, opening a
    /// handle on every file in it. Fails if another tab holds the index.
    pub async fn open(root: &FileSystemDirectoryHandle, path: &[&str]) -> Result<OpfsDirectory> {
        let mut handle = root.clone();
        for name in path {
            handle = subdirectory(&handle, name).await?;
        }
        let mut files = BTreeMap::new();
        let mut slots: BTreeMap<String, Vec<(usize, Vec<u8>)>> = BTreeMap::new();
        for (name, entry) in next_entries(&handle).await.map_err(|e| js_error("listing the index directory", e))? {
            let Ok(file_handle) = entry.dyn_into::<FileSystemFileHandle>() else { continue };
            if let Some((base, slot)) = slot_of(&name) {
                if let Some(bytes) = read_slot_file(&file_handle).await? {
                    slots.entry(base.to_string()).or_default().push((slot, bytes));
                }
            } else {
                files.insert(name, Entry::Stored(open_sync(&file_handle).await?));
            }
        }
        for (base, candidates) in slots {
            let newest = candidates
                .into_iter()
                .filter_map(|(slot, bytes)| decode_slot(&bytes).map(|(generation, data)| (generation, slot, data)))
                .max_by_key(|(generation, _, _)| *generation);
            if let Some((generation, slot, data)) = newest {
                files.insert(base, Entry::Atomic(AtomicFile { data: Rc::new(data), generation, slot, dirty: false }));
            }
        }
        Ok(OpfsDirectory { handle, files: RefCell::new(files), doomed: RefCell::new(Vec::new()) })
    }

    /// Stores everything written since the last commit (see the module
    /// comment for the order). Until it returns, OPFS still holds the
    /// previous committed state.
    pub async fn commit(&self) -> Result<()> {
        let staged: Vec<(String, Rc<Vec<u8>>)> = self
            .files
            .borrow()
            .iter()
            .filter_map(|(name, entry)| match entry {
                Entry::Staged(data) => Some((name.clone(), data.clone())),
                _ => None,
            })
            .collect();
        for (name, data) in staged {
            let sync = open_sync(&self.file_handle(&name).await?).await?;
            write_all(&sync, &data).map_err(|e| js_error(&format!("writing {name}"), e))?;
            // The engine may have deleted or replaced it meanwhile only
            // through this directory, which the caller serialises.
            self.files.borrow_mut().insert(name, Entry::Stored(sync));
        }
        let atomic: Vec<(String, u64, usize, Rc<Vec<u8>>)> = self
            .files
            .borrow()
            .iter()
            .filter_map(|(name, entry)| match entry {
                Entry::Atomic(a) if a.dirty => Some((name.clone(), a.generation, a.slot, a.data.clone())),
                _ => None,
            })
            .collect();
        for (name, generation, slot, data) in atomic {
            let slot_name = format!("{name}{}", SLOTS[slot]);
            let sync = open_sync(&self.file_handle(&slot_name).await?).await?;
            let written = write_all(&sync, &encode_slot(generation, &data));
            sync.close();
            written.map_err(|e| js_error(&format!("writing {slot_name}"), e))?;
            if let Some(Entry::Atomic(a)) = self.files.borrow_mut().get_mut(&name)
                && a.generation == generation
            {
                a.dirty = false;
            }
        }
        let doomed = std::mem::take(&mut *self.doomed.borrow_mut());
        for name in doomed {
            // A file that is already gone is what we wanted.
            let _ = JsFuture::from(self.handle.remove_entry(&name)).await;
        }
        Ok(())
    }

    async fn file_handle(&self, name: &str) -> Result<FileSystemFileHandle> {
        let options = FileSystemGetFileOptions::new();
        options.set_create(true);
        let handle = JsFuture::from(self.handle.get_file_handle_with_options(name, &options))
            .await
            .map_err(|e| js_error(&format!("creating {name}"), e))?;
        Ok(handle.unchecked_into())
    }

    fn with_entry<T>(&self, name: &str, f: impl FnOnce(&Entry) -> Result<T>) -> Result<T> {
        match self.files.borrow().get(name) {
            Some(entry) => f(entry),
            None => Err(Error::not_found(format!("no such index file: {name}"))),
        }
    }

    /// Forgets `name`, closing its handle and scheduling its removal.
    fn forget(&self, name: &str) {
        match self.files.borrow_mut().remove(name) {
            Some(Entry::Stored(sync)) => {
                sync.close();
                self.doomed.borrow_mut().push(name.to_string());
            }
            Some(Entry::Atomic(_)) => {
                self.doomed.borrow_mut().extend(SLOTS.iter().map(|s| format!("{name}{s}")));
            }
            Some(Entry::Staged(_)) | None => {}
        }
    }
}

impl Directory for OpfsDirectory {
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.with_entry(name, |entry| match entry {
            Entry::Staged(data) => Ok(data.as_ref().clone()),
            Entry::Atomic(a) => Ok(a.data.as_ref().clone()),
            Entry::Stored(sync) => {
                let size = sync.get_size().map_err(|e| js_error(name, e))? as usize;
                read_at(sync, name, 0, size)
            }
        })
    }

    fn read_range(&self, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.with_entry(name, |entry| {
            let in_memory = |data: &[u8]| {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                data.get(start..start.saturating_add(len))
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| Error::corrupt(name, "read past the end of the file"))
            };
            match entry {
                Entry::Staged(data) => in_memory(data),
                Entry::Atomic(a) => in_memory(&a.data),
                Entry::Stored(sync) => read_at(sync, name, offset, len),
            }
        })
    }

    fn write(&self, name: &str, data: &[u8]) -> Result<()> {
        if self.files.borrow().contains_key(name) {
            return Err(Error::exists(format!("index file {name} already exists")));
        }
        // A name reused before its removal was committed must survive it.
        self.doomed.borrow_mut().retain(|d| d != name);
        self.files.borrow_mut().insert(name.to_string(), Entry::Staged(Rc::new(data.to_vec())));
        Ok(())
    }

    fn atomic_write(&self, name: &str, data: &[u8]) -> Result<()> {
        let mut files = self.files.borrow_mut();
        let (generation, slot) = match files.get(name) {
            // A second write before a commit replaces the pending one in
            // the same slot: the committed slot stays untouched either way.
            Some(Entry::Atomic(a)) if a.dirty => (a.generation, a.slot),
            Some(Entry::Atomic(a)) => (a.generation + 1, 1 - a.slot),
            _ => (1, 0),
        };
        files.insert(
            name.to_string(),
            Entry::Atomic(AtomicFile { data: Rc::new(data.to_vec()), generation, slot, dirty: true }),
        );
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.forget(name);
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        Ok(self.files.borrow().keys().cloned().collect())
    }

    fn size(&self, name: &str) -> Result<u64> {
        self.with_entry(name, |entry| match entry {
            Entry::Staged(data) => Ok(data.len() as u64),
            Entry::Atomic(a) => Ok(a.data.len() as u64),
            Entry::Stored(sync) => Ok(sync.get_size().map_err(|e| js_error(name, e))? as u64),
        })
    }
}

async fn subdirectory(parent: &FileSystemDirectoryHandle, name: &str) -> Result<FileSystemDirectoryHandle> {
    let options = FileSystemGetDirectoryOptions::new();
    options.set_create(true);
    let handle = JsFuture::from(parent.get_directory_handle_with_options(name, &options))
        .await
        .map_err(|e| js_error(&format!("opening the OPFS directory {name}"), e))?;
    Ok(handle.unchecked_into())
}

/// Opens a sync access handle: exclusive, so a second tab on the same
/// index fails here rather than corrupting it.
async fn open_sync(handle: &FileSystemFileHandle) -> Result<FileSystemSyncAccessHandle> {
    match JsFuture::from(handle.create_sync_access_handle()).await {
        Ok(sync) => Ok(sync.unchecked_into()),
        Err(e) if error_name(&e).as_deref() == Some("NoModificationAllowedError") => Err(Error::new(
            ErrorKind::Io,
            "the index is open in another tab or window of this site; close it there and reload",
        )),
        Err(e) => Err(js_error(&format!("opening {}", handle.name()), e)),
    }
}

fn error_name(e: &JsValue) -> Option<String> {
    js_sys::Reflect::get(e, &"name".into()).ok()?.as_string()
}

/// Reads a slot without holding a handle on it: the header, then the
/// length it declares (bytes after it are ignored). `None` (torn) when the
/// file is shorter than its header or declares more than any slot holds.
async fn read_slot_file(handle: &FileSystemFileHandle) -> Result<Option<Vec<u8>>> {
    let name = handle.name();
    let file: File = JsFuture::from(handle.get_file()).await.map_err(|e| js_error(&name, e))?.unchecked_into();
    let header = read_part(&file, &name, 0, SLOT_HEADER).await?;
    let Some(len) = slot_length(&header) else { return Ok(None) };
    if len > MAX_SLOT_BYTES || (SLOT_HEADER + len) as f64 > file.size() {
        return Ok(None);
    }
    let mut bytes = header;
    bytes.extend(read_part(&file, &name, SLOT_HEADER, SLOT_HEADER + len).await?);
    Ok(Some(bytes))
}

/// Bytes `start..end` of a file (fewer where it is shorter).
async fn read_part(file: &File, name: &str, start: usize, end: usize) -> Result<Vec<u8>> {
    let part = file.slice_with_f64_and_f64(start as f64, end as f64).map_err(|e| js_error(name, e))?;
    let buffer = JsFuture::from(part.array_buffer()).await.map_err(|e| js_error(name, e))?;
    Ok(Uint8Array::new(&buffer).to_vec())
}

fn read_at(sync: &FileSystemSyncAccessHandle, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
    // The size first: a damaged length must not become a huge buffer.
    let size = sync.get_size().map_err(|e| js_error(name, e))? as u64;
    if offset.checked_add(len as u64).is_none_or(|end| end > size) {
        return Err(Error::corrupt(name, "read past the end of the file"));
    }
    let mut buf = vec![0u8; len];
    let options = FileSystemReadWriteOptions::new();
    options.set_at(offset as f64);
    let read = sync.read_with_u8_array_and_options(&mut buf, &options).map_err(|e| js_error(name, e))? as usize;
    if read != len {
        return Err(Error::corrupt(name, "read past the end of the file"));
    }
    Ok(buf)
}

/// Replaces the handle's content with `data`, durably.
fn write_all(sync: &FileSystemSyncAccessHandle, data: &[u8]) -> std::result::Result<(), JsValue> {
    sync.truncate_with_f64(0.0)?;
    let options = FileSystemReadWriteOptions::new();
    let mut at = 0usize;
    while at < data.len() {
        options.set_at(at as f64);
        let written = sync.write_with_u8_array_and_options(&data[at..], &options)? as usize;
        if written == 0 {
            return Err(JsValue::from_str("the browser accepted no bytes (storage full?)"));
        }
        at += written;
    }
    sync.flush()
}

/// `manifest.json~b` → (`manifest.json`, 1).
fn slot_of(name: &str) -> Option<(&str, usize)> {
    SLOTS.iter().enumerate().find_map(|(i, suffix)| name.strip_suffix(suffix).map(|base| (base, i)))
}

fn encode_slot(generation: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SLOT_HEADER + data.len());
    out.extend_from_slice(SLOT_MAGIC);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// The content length a slot's header declares.
fn slot_length(header: &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(header.get(12..16)?.try_into().ok()?) as usize)
}

/// The generation and content of a slot, or `None` if it is torn.
fn decode_slot(bytes: &[u8]) -> Option<(u64, Vec<u8>)> {
    let header = bytes.get(..SLOT_HEADER)?;
    if &header[..4] != SLOT_MAGIC {
        return None;
    }
    let generation = u64::from_le_bytes(header[4..12].try_into().ok()?);
    let len = slot_length(header)?;
    let crc = u32::from_le_bytes(header[16..20].try_into().ok()?);
    let data = bytes.get(SLOT_HEADER..SLOT_HEADER.checked_add(len)?)?;
    (crc32(data) == crc).then(|| (generation, data.to_vec()))
}

fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_round_trips_and_any_tear_is_detected() {
        let encoded = encode_slot(7, b"{\"generation\":7}");
        assert_eq!(decode_slot(&encoded), Some((7, b"{\"generation\":7}".to_vec())));
        for cut in 0..encoded.len() {
            assert_eq!(decode_slot(&encoded[..cut]), None, "torn at {cut} bytes");
        }
        let mut flipped = encoded.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(decode_slot(&flipped), None);
    }

    #[test]
    fn slot_names_map_back_to_their_file() {
        assert_eq!(slot_of("manifest.json~a"), Some(("manifest.json", 0)));
        assert_eq!(slot_of("index.yml~b"), Some(("index.yml", 1)));
        assert_eq!(slot_of("seg-0001.qseg"), None);
    }
}
