//! A model loaded on first use, once per process; a failed load is
//! remembered (and reported on every use) rather than retried per call.

use std::sync::Mutex;

use qmd_core::model::{CrossEncoder, Device, ModelFiles, SentenceEncoder};

use super::{ModelSource, device};

/// Models that load from a repository's files.
pub trait Loadable: Sized {
    fn load(files: ModelFiles, device: &Device) -> qmd_core::Result<Self>;
}

impl Loadable for SentenceEncoder {
    fn load(files: ModelFiles, device: &Device) -> qmd_core::Result<Self> {
        SentenceEncoder::load(files, device)
    }
}

impl Loadable for CrossEncoder {
    fn load(files: ModelFiles, device: &Device) -> qmd_core::Result<Self> {
        CrossEncoder::load(files, device)
    }
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

    pub fn with<R>(&self, f: impl FnOnce(&T, &ModelSource) -> Result<R, String>) -> Result<R, String> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let loaded = state.get_or_insert_with(|| self.load());
        match loaded {
            Ok(model) => f(model, &self.source),
            Err(e) => Err(e.clone()),
        }
    }

    fn load(&self) -> Result<T, String> {
        if let Some(message) = self.source.gguf_message() {
            return Err(message);
        }
        if !self.source.is_present() {
            return Err(self.source.missing_message());
        }
        let dir = &self.source.dir;
        let files = ModelFiles::read_with(|name| match std::fs::read(dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(qmd_core::Error::new(qmd_core::ErrorKind::Io, format!("{}: {e}", dir.join(name).display()))),
        })
        .map_err(|e| e.message)?;
        let device = &device()?.device;
        T::load(files, device)
            .map_err(|e| format!("{} model {}: {}", self.source.role.label(), self.source.id, e.message))
    }
}
