//! The component's plain read-only opens never wait on a FIFO.
//!
//! WASI has no `O_NONBLOCK`, and wasmtime-wasi opens a path with a blocking
//! `open(2)`: a FIFO with no writer holds the open (and the command) until a
//! writer comes, which may be never. The engine checks what a path is before
//! it opens it, but a file can be swapped for a FIFO between the check and
//! the open, and some reads (the index's manifest) have no check at all. So
//! the host replaces `descriptor.open-at` for reads: it opens beneath the
//! directory itself, non-blocking, and hands the guest the descriptor; the
//! guest's own `fstat` then sees a FIFO for what it is. Every other open
//! (writes, creates, directories) and every platform without `openat2` goes
//! to wasmtime-wasi's own implementation.

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

use super::HostState;

type AsyncErrorCode = wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

/// The interface as wasmtime-wasi 48 defines it in the linker; a guest's
/// older 0.2 import resolves to it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenResult = Result<Resource<Descriptor>, ErrorCode>;

/// Replaces wasmtime-wasi's `open-at` with [`open_at`]. Call after
/// `add_to_linker_sync`.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store,
         (dir, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| { open_at(store.data_mut(), dir, path_flags, path, oflags, flags).map(|opened| (opened,)) },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

fn open_at(
    state: &mut HostState,
    dir: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<OpenResult> {
    if oflags == OpenFlags::empty()
        && flags == DescriptorFlags::READ
        && let Some(opened) = read_only::open(state, &dir, path_flags, &path)?
    {
        return Ok(opened);
    }
    let mut view = state.filesystem();
    match HostDescriptor::open_at(&mut view, dir, path_flags, path, oflags, flags) {
        Ok(opened) => Ok(Ok(opened)),
        Err(error) => error.downcast().map(|code: AsyncErrorCode| Err(code.into())),
    }
}

#[cfg(target_os = "linux")]
mod read_only {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd};

    use wasmtime::component::Resource;
    use wasmtime_wasi::OpenMode;
    use wasmtime_wasi::filesystem::{self, Descriptor};
    use wasmtime_wasi::p2::bindings::sync::filesystem::types::{ErrorCode, PathFlags};

    use super::{HostState, OpenResult};

    /// The opened descriptor, or `None` where the kernel has no `openat2`
    /// (before Linux 5.6), for wasmtime-wasi's own open.
    pub fn open(
        state: &mut HostState,
        dir: &Resource<Descriptor>,
        path_flags: PathFlags,
        path: &str,
    ) -> wasmtime::Result<Option<OpenResult>> {
        let Descriptor::Dir(parent) = state.table.get(dir)? else {
            return Ok(Some(Err(ErrorCode::NotDirectory)));
        };
        let parent = parent.clone();
        let file = match open_beneath(&parent.dir, path, path_flags.contains(PathFlags::SYMLINK_FOLLOW)) {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return Ok(None),
            Err(e) => return Ok(Some(Err(error_code(&e)))),
        };
        let kind = match file.metadata() {
            Ok(meta) => meta.file_type(),
            Err(e) => return Ok(Some(Err(error_code(&e)))),
        };
        let descriptor = if kind.is_dir() {
            Descriptor::Dir(filesystem::Dir::new(file, parent.perms, OpenMode::READ, true))
        } else {
            // A regular file reads as wasmtime-wasi's would: blocking. A FIFO
            // or device stays non-blocking, so a read can never wait either.
            if kind.is_file() {
                clear_nonblocking(&file);
            }
            Descriptor::File(filesystem::File::new(file, parent.perms, OpenMode::READ, true))
        };
        Ok(Some(Ok(state.table.push(descriptor)?)))
    }

    /// `openat2` beneath `dir`: the same sandbox cap-std gives wasmtime-wasi
    /// (no `..` or absolute path or link out of it), plus `O_NONBLOCK`.
    fn open_beneath(dir: &File, path: &str, follow: bool) -> io::Result<File> {
        let path = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EILSEQ))?;
        let mut flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
        if !follow {
            flags |= libc::O_NOFOLLOW;
        }
        // SAFETY: open_how is plain integers; all zero is "no mode".
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = flags as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: `path` is NUL-terminated, `how` is a valid open_how of the
        // size passed, and the returned descriptor is owned by the File.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(unsafe { File::from_raw_fd(fd as i32) })
    }

    fn clear_nonblocking(file: &File) {
        // SAFETY: fcntl on a descriptor this File owns.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }

    /// The error a guest sees, as wasmtime-wasi words it; a path out of the
    /// directory (`EXDEV` from `RESOLVE_BENEATH`) is refused as cap-std
    /// refuses it.
    fn error_code(e: &io::Error) -> ErrorCode {
        match e.raw_os_error() {
            Some(libc::EXDEV) => ErrorCode::NotPermitted,
            _ => super::AsyncErrorCode::from(e).into(),
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod read_only {
    use wasmtime::component::Resource;
    use wasmtime_wasi::filesystem::Descriptor;
    use wasmtime_wasi::p2::bindings::sync::filesystem::types::PathFlags;

    use super::{HostState, OpenResult};

    /// No non-blocking open beneath a directory here: wasmtime-wasi's own.
    pub fn open(
        _state: &mut HostState,
        _dir: &Resource<Descriptor>,
        _path_flags: PathFlags,
        _path: &str,
    ) -> wasmtime::Result<Option<OpenResult>> {
        Ok(None)
    }
}
