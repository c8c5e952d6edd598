//! Reading and writing `manifest.json`: sealed with a checksum of its
//! canonical form and held to [`super::validate::check`] both ways, so a
//! damaged or hand-edited manifest is reported and a bad one never
//! published. Apart from the types ([`super::manifest`]), which the checks
//! read.

use super::manifest::{FORMAT_VERSION, MANIFEST, Manifest};
use crate::directory::Directory;
use crate::error::{Error, ErrorKind, Result};

impl Manifest {
    /// Reads the manifest; a missing one is an empty index, unless index
    /// files are there: then the manifest that named them is lost.
    pub fn load(dir: &dyn Directory) -> Result<Manifest> {
        let bytes = match dir.read(MANIFEST) {
            Ok(bytes) => bytes,
            Err(e) if e.kind == ErrorKind::NotFound => {
                if dir.list()?.iter().any(|f| f.starts_with("seg-") || f.starts_with("vec-")) {
                    return Err(Error::corrupt(&dir.describe(MANIFEST), "the file is missing"));
                }
                return Ok(Manifest { format: FORMAT_VERSION, ..Default::default() });
            }
            Err(e) => return Err(e),
        };
        let shown = dir.describe(MANIFEST);
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(&shown, e))?;
        if manifest.format != FORMAT_VERSION {
            return Err(Error::corrupt(
                &shown,
                format!("index format {} is not the one this qmd reads ({FORMAT_VERSION})", manifest.format),
            ));
        }
        if manifest.checksum != manifest.canonical_crc32()? {
            return Err(Error::corrupt(&shown, "checksum mismatch"));
        }
        super::validate::check(&manifest).map_err(|why| Error::corrupt(&shown, why))?;
        Ok(manifest)
    }

    pub fn store(&self, dir: &dyn Directory) -> Result<()> {
        // Never publish what the next open would call damaged.
        super::validate::check(self)
            .map_err(|why| Error::new(ErrorKind::Internal, format!("refusing to write a bad manifest: {why}")))?;
        let sealed = Manifest { checksum: self.canonical_crc32()?, ..self.clone() };
        let json = serde_json::to_vec_pretty(&sealed).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        dir.atomic_write(MANIFEST, &json)
    }

    fn canonical_crc32(&self) -> Result<u32> {
        let unsealed = Manifest { checksum: 0, ..self.clone() };
        let json = serde_json::to_vec(&unsealed).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        Ok(crc32fast::hash(&json))
    }
}
