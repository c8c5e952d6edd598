//! A model loaded on first use, once per process; a failed load is
//! remembered (and reported on every use) rather than retried per call.

use std::sync::Mutex;

use std::path::Path;
use std::sync::Arc;

use qmd_core::model::{Loadable, ModelFiles};

use super::{ModelSource, device};

/// The file mapped read-only: its pages are the page cache's, shared and
/// never copied into the process's heap.
fn map_file(path: &Path) -> Result<qmd_core::arch::ModelBytes, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: the map is read-only. A model file rewritten while mapped
    // (a concurrent 'qmd pull' renames a new file into place instead)
    // could change under us, which at worst gives wrong numbers.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Arc::new(map))
}

pub struct Slot<T> {
    source: ModelSource,
    // burn modules are Send but not Sync: one caller at a time.
    state: Mutex<Option<Result<T, String>>>,
}

impl<T: Loadable> Slot<T> {
    pub fn new(source: ModelSource) -> Self {
        Slot { source, state: Mutex::new(None) }
    }

    pub fn source(&self) -> &ModelSource {
        &self.source
    }

    pub fn with<R>(&self, f: impl FnOnce(&T, &ModelSource) -> Result<R, String>) -> Result<R, String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let loaded = state.get_or_insert_with(|| self.load());
        match loaded {
            Ok(model) => f(model, &self.source),
            Err(e) => Err(e.clone()),
        }
    }

    fn load(&self) -> Result<T, String> {
        if !self.source.is_present() {
            return Err(self.source.missing_message());
        }
        let failed =
            |e: qmd_core::Error| format!("{} model {}: {}", self.source.role.label(), self.source.id, e.message);
        if let Some(gguf) = &self.source.gguf {
            let name = gguf.path.display().to_string();
            return T::load_gguf(&name, map_file(&gguf.path)?, device()?).map_err(failed);
        }
        let dir = &self.source.dir;
        let files = ModelFiles::read_with(|name| match std::fs::read(dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(qmd_core::Error::new(qmd_core::ErrorKind::Io, format!("{}: {e}", dir.join(name).display()))),
        })
        .map_err(|e| e.message)?;
        let device = &device()?.device;
        T::load(files, device).map_err(failed)
    }
}
