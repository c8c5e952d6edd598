//! File events for the watched collection folders: the OS's own (inotify,
//! FSEvents, ReadDirectoryChangesW) where they work, polling where they do
//! not (network and FUSE mounts, or when the OS runs out of watches), and a
//! check that notices a folder that vanished or came back (its watch dies
//! with it, so it must be watched again).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};

/// What the watch loop hears.
pub enum Signal {
    /// Something changed at this path.
    Changed(PathBuf),
    /// Events were lost (the OS queue overflowed): look at everything.
    Rescan,
    /// Ctrl-C or SIGTERM.
    Stop,
}

/// A collection folder being watched.
struct Root {
    name: String,
    path: PathBuf,
    /// Device and inode when last seen; `None` while the folder is missing.
    identity: Option<(u64, u64)>,
}

pub struct Roots {
    watcher: Box<dyn Watcher>,
    roots: Vec<Root>,
    /// How the folders are watched, for the user.
    pub mode: String,
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().filter(|m| m.is_dir()).map(|m| (m.dev(), m.ino()))
}

/// Events worth a look: not the opens and reads that indexing itself causes.
fn relevant(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Polling interval when none is given.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

impl Roots {
    /// Watches `roots` (`(collection, folder)`): with polling every `poll`
    /// when given, or when a folder is on a network or FUSE mount (their
    /// servers send no events); with the OS's events otherwise, falling
    /// back to polling when those cannot be had (no more inotify watches).
    pub fn watch(roots: &[(String, PathBuf)], poll: Option<Duration>, tx: Sender<Signal>) -> anyhow::Result<Roots> {
        let handler = move |event: notify::Result<notify::Event>| {
            // A send fails only once the loop has stopped.
            let _ = match event {
                Ok(event) if event.need_rescan() => tx.send(Signal::Rescan),
                Ok(event) if relevant(&event.kind) => {
                    event.paths.into_iter().try_for_each(|path| tx.send(Signal::Changed(path)))
                }
                Ok(_) => Ok(()),
                // A watch was lost: look at everything again.
                Err(_) => tx.send(Signal::Rescan),
            };
        };
        let interval = poll.unwrap_or(DEFAULT_POLL);
        let polling = |why: String| -> anyhow::Result<Roots> {
            let config = unfollowed().with_poll_interval(interval);
            let watcher = PollWatcher::new(handler.clone(), config)?;
            let mut polled = Roots::over(Box::new(watcher), roots);
            polled.mode = format!("polling every {} ms ({why})", interval.as_millis());
            polled.check();
            Ok(polled)
        };
        if poll.is_some() {
            return polling("--poll".into());
        }
        if let Some((name, _)) = roots.iter().find(|(_, path)| on_network_mount(path)) {
            return polling(format!("collection '{name}' is on a network or FUSE mount"));
        }
        let watcher = match RecommendedWatcher::new(handler.clone(), unfollowed()) {
            Ok(watcher) => watcher,
            Err(e) => return polling(format!("file system events are unavailable: {e}")),
        };
        let mut watched = Roots::over(Box::new(watcher), roots);
        watched.mode = "file system events".into();
        for i in 0..watched.roots.len() {
            if let Err(e) = watched.watch_root(i) {
                return polling(format!("file system events failed: {e}"));
            }
        }
        Ok(watched)
    }

    fn over(watcher: Box<dyn Watcher>, roots: &[(String, PathBuf)]) -> Roots {
        let roots = roots.iter().map(|(name, path)| Root { name: name.clone(), path: path.clone(), identity: None });
        Roots { watcher, roots: roots.collect(), mode: String::new() }
    }

    /// Watches root `i` if its folder is there (a missing one is looked
    /// for again by [`Self::check`]).
    fn watch_root(&mut self, i: usize) -> notify::Result<()> {
        let root = &mut self.roots[i];
        root.identity = identity(&root.path);
        if root.identity.is_some() {
            self.watcher.watch(&root.path, RecursiveMode::Recursive)?;
        }
        Ok(())
    }

    /// Collections whose folder vanished, came back or was replaced since
    /// the last look; each is watched again. Cheap: one `stat` per folder.
    pub fn check(&mut self) -> Vec<String> {
        let mut changed = Vec::new();
        for i in 0..self.roots.len() {
            let now = identity(&self.roots[i].path);
            if now == self.roots[i].identity {
                continue;
            }
            if self.roots[i].identity.is_some() {
                let _ = self.watcher.unwatch(&self.roots[i].path);
            }
            // A folder that cannot be watched now is tried again next time.
            if self.watch_root(i).is_err() {
                self.roots[i].identity = None;
            }
            changed.push(self.roots[i].name.clone());
        }
        changed
    }

    /// The collection a changed path belongs to (the deepest folder that
    /// holds it); none for a path no collection could index (under `.git/`,
    /// `node_modules/`, a hidden folder…), so a `git commit` or an
    /// `npm install` wakes nothing.
    pub fn collection_of(&self, path: &Path) -> Option<&str> {
        let root = self.roots.iter().filter(|r| path.starts_with(&r.path)).max_by_key(|r| r.path.as_os_str().len())?;
        let inside = path.strip_prefix(&root.path).ok()?;
        let skipped =
            inside.components().any(|c| qmd_core::collection::never_indexed(&c.as_os_str().to_string_lossy()));
        (!skipped).then_some(root.name.as_str())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.roots.iter().map(|r| r.name.as_str())
    }
}

/// Whether `path` is on a network or FUSE file system, whose changes made
/// elsewhere send no events.
#[cfg(target_os = "linux")]
fn on_network_mount(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const NETWORK: [i64; 7] = [
        0x6969,      // NFS
        0x517b,      // SMB
        0xff53_4d42, // CIFS
        0xfe53_4d42, // SMB2
        0x6573_5546, // FUSE (sshfs, rclone, …)
        0x0102_1997, // 9p (WSL, VMs)
        0x5346_414f, // AFS
    ];
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a zeroed statfs is a valid out-parameter; the path is NUL-terminated.
    let mut stats: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stats) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between libcs
    NETWORK.contains(&(stats.f_type as i64))
}

#[cfg(not(target_os = "linux"))]
fn on_network_mount(_path: &Path) -> bool {
    false
}

/// notify follows links into what they point to by default: a link to `/`
/// in a collection would have it watch (and poll) the whole disk. `update`
/// never follows a linked folder, so nothing there can change the index.
fn unfollowed() -> notify::Config {
    notify::Config::default().with_follow_symlinks(false)
}
