use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::Directory;
use crate::error::{Error, Result};

/// An in-memory [`Directory`] for tests and for callers that persist
/// elsewhere. Clones share the same files.
#[derive(Clone, Default)]
pub struct RamDirectory {
    files: Rc<RefCell<BTreeMap<String, Rc<Vec<u8>>>>>,
}

impl RamDirectory {
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, name: &str) -> Result<Rc<Vec<u8>>> {
        self.files.borrow().get(name).cloned().ok_or_else(|| Error::not_found(format!("no such index file: {name}")))
    }
}

impl Directory for RamDirectory {
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        Ok(self.get(name)?.as_ref().clone())
    }

    fn read_range(&self, name: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        let data = self.get(name)?;
        let start = offset as usize;
        data.get(start..start + len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::corrupt(name, "read past the end of the file"))
    }

    fn write(&self, name: &str, data: &[u8]) -> Result<()> {
        self.files.borrow_mut().insert(name.to_string(), Rc::new(data.to_vec()));
        Ok(())
    }

    fn atomic_write(&self, name: &str, data: &[u8]) -> Result<()> {
        self.write(name, data)
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.files.borrow_mut().remove(name);
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        Ok(self.files.borrow().keys().cloned().collect())
    }

    fn size(&self, name: &str) -> Result<u64> {
        Ok(self.get(name)?.len() as u64)
    }
}
