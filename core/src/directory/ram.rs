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
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        data.get(start..start.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::corrupt(name, "read past the end of the file"))
    }

    fn write(&self, name: &str, data: &[u8]) -> Result<()> {
        match self.files.borrow_mut().entry(name.to_string()) {
            std::collections::btree_map::Entry::Occupied(_) => {
                Err(Error::exists(format!("index file {name} already exists")))
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Rc::new(data.to_vec()));
                Ok(())
            }
        }
    }

    fn atomic_write(&self, name: &str, data: &[u8]) -> Result<()> {
        self.files.borrow_mut().insert(name.to_string(), Rc::new(data.to_vec()));
        Ok(())
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
