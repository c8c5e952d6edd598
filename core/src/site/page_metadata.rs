//! The pages' frontmatter, for metadata filters in the page: a bundle's
//! metadata file (JSON) decoded and tested against a [`Filter`]. Kept
//! apart from [`super::SiteIndex`] so the keyword engine carries no JSON
//! parser: the page loads a second, small module for filters only when a
//! search has one, and hands the passing pages to the keyword search.

use std::collections::{HashMap, HashSet};

use super::builder::MetadataFile;
use super::format::{FormatError, file_id, metadata_name};
use crate::error::{Error, ErrorKind, Result};
use crate::metadata::{Filter, Metadata};

/// Every page's metadata (none when the bundle has no metadata file).
pub struct SiteMetadata {
    /// The bundle's page count.
    docs: u32,
    pages: HashMap<u32, Metadata>,
    invalid: HashSet<u32>,
}

impl SiteMetadata {
    /// A bundle without a metadata file: no page has keys.
    pub fn without_file(docs: u32) -> SiteMetadata {
        SiteMetadata { docs, pages: HashMap::new(), invalid: HashSet::new() }
    }

    /// Decodes the metadata file `name` (decompressed) of a bundle of
    /// `docs` pages; its content must match its name.
    pub fn open(name: &str, bytes: &[u8], docs: u32) -> Result<SiteMetadata> {
        let damaged = |what: &'static str| Error::new(ErrorKind::CorruptIndex, FormatError(what).to_string());
        if metadata_name(&file_id(bytes)) != name {
            return Err(damaged("file content does not match its name"));
        }
        let file: MetadataFile = serde_json::from_slice(bytes).map_err(|_| damaged("metadata"))?;
        let pages = file
            .docs
            .into_iter()
            .map(|(doc, json)| Some((doc, crate::metadata::from_json(json)?)).filter(|_| doc < docs))
            .collect::<Option<HashMap<u32, Metadata>>>()
            .ok_or_else(|| damaged("metadata"))?;
        Ok(SiteMetadata { docs, pages, invalid: file.invalid.into_iter().collect() })
    }

    /// Pages passing `filter`, ascending: as in the CLI, a page whose
    /// frontmatter was invalid passes none, one without metadata is tested
    /// as having no keys.
    pub fn passing(&self, filter: &Filter) -> Vec<u32> {
        let none = Metadata::new();
        (0..self.docs)
            .filter(|doc| !self.invalid.contains(doc))
            .filter(|doc| filter.matches(self.pages.get(doc).unwrap_or(&none)))
            .collect()
    }
}
