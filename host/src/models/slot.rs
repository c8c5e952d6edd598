//! A model loaded on first use, once per process; a failed load is
//! remembered (and returned on every use) rather than retried per call.
//! A model whose files are there but do not load (a damaged GGUF file, a
//! broken `config.json`) is named on stderr once, with the problem, for
//! every role and every caller: a caller that goes on without it (a query
//! ranked without its reranker, a query searched without its expansion)
//! never hides it, and a server's log (never stdout, MCP's stdio channel)
//! has it.

use std::sync::Mutex;

use std::path::Path;
use std::sync::Arc;

use qmd_core::model::{Loadable, ModelFiles};

use super::{ModelSource, device};
use crate::files::regular;

/// The file mapped read-only: its pages are the page cache's, shared and
/// never copied into the process's heap. Only a regular file (a FIFO in
/// its place is refused, not opened for a blocking read).
pub fn map_file(path: &Path) -> Result<qmd_core::arch::ModelBytes, String> {
    let file = regular::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
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
        let loaded = state.get_or_insert_with(|| {
            let loaded = self.load();
            // A missing model is the caller's to explain (a default not
            // downloaded may be a quiet fallback); one that is there and
            // fails is always named.
            if let Err(e) = &loaded
                && self.source.is_present()
            {
                eprintln!("Warning: {}", qmd_core::display::escape_controls(&format!("{e} (not loaded)")));
            }
            loaded
        });
        match loaded {
            Ok(model) => f(model, &self.source),
            Err(e) => Err(e.clone()),
        }
    }

    fn load(&self) -> Result<T, String> {
        if !self.source.is_present() {
            return Err(self.source.missing_message());
        }
        // The problem often names the file already (a GGUF file's errors do).
        let failed = |problem: String| match problem.strip_prefix(self.source.id.as_str()) {
            Some(rest) if rest.starts_with(':') => format!("{} model {problem}", self.source.role.label()),
            _ => format!("{} model {}: {problem}", self.source.role.label(), self.source.id),
        };
        if let Some(gguf) = &self.source.gguf {
            let name = gguf.path.display().to_string();
            let bytes = map_file(&gguf.path).map_err(failed)?;
            return T::load_gguf(&name, bytes, device()?).map_err(|e| failed(e.message));
        }
        let dir = &self.source.dir;
        let read = |path: &Path| -> std::io::Result<Vec<u8>> {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut regular::open(path)?, &mut bytes)?;
            Ok(bytes)
        };
        let files = ModelFiles::read_with(|name| match read(&dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(qmd_core::Error::new(qmd_core::ErrorKind::Io, format!("{}: {e}", dir.join(name).display()))),
        })
        .map_err(|e| failed(e.message))?;
        T::load(files, device()?).map_err(|e| failed(e.message))
    }
}
