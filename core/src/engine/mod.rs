//! The engine facade: what the component, the browser bindings and tests
//! call. It owns the storage handles and a cached snapshot of the index.

mod cleanup;
#[cfg(test)]
mod damage_tests;
mod doctor;
mod embed;
#[cfg(test)]
mod expansion_tests;
mod manage;
#[cfg(test)]
mod metadata_tests;
mod query;
mod read;
mod update;
mod vsearch;

pub use doctor::{IndexCheck, SampleCheck, VectorSample};
pub use embed::{EmbedJob, EmbedOptions, EmbedReport, embed_fingerprint};
pub use query::{MAX_SEARCHES, QueryJob, QueryModels, QueryStep};

use std::cell::RefCell;
use std::rc::Rc;

use crate::collection::{Config, PathBase};
use crate::directory::Directory;
use crate::error::{ErrorKind, Result};
use crate::index::{Index, Manifest};
use crate::search::lex::Bm25Params;
use crate::source::SourceTree;

/// Progress callback: `(phase, done, total)`.
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

pub struct Engine {
    index_dir: Rc<dyn Directory>,
    config_dir: Rc<dyn Directory>,
    config_file: String,
    source: Rc<dyn SourceTree>,
    snapshot: RefCell<Option<Rc<Index>>>,
    /// What relative collection paths in the config mean; as written when
    /// `None` (plugin hosts that grant absolute roots).
    path_base: Option<PathBase>,
    /// Lexical ranking parameters (tuned by the retrieval eval).
    pub bm25: Bm25Params,
}

impl Engine {
    /// `config_file` is the name of the YAML file inside `config_dir`
    /// (`index.yml` for the default index).
    pub fn new(
        index_dir: Rc<dyn Directory>,
        config_dir: Rc<dyn Directory>,
        config_file: &str,
        source: Rc<dyn SourceTree>,
    ) -> Self {
        Engine {
            index_dir,
            config_dir,
            config_file: config_file.to_string(),
            source,
            snapshot: RefCell::new(None),
            path_base: None,
            bm25: Bm25Params::default(),
        }
    }

    /// Resolves the config's relative collection paths against `at`.
    pub fn with_path_base(mut self, at: PathBase) -> Self {
        self.path_base = Some(at);
        self
    }

    /// The collections config; a missing file is an empty config.
    pub fn config(&self) -> Result<Config> {
        match self.config_dir.read(&self.config_file) {
            Ok(bytes) => {
                let mut config = Config::parse(&String::from_utf8_lossy(&bytes))?;
                if let Some(at) = &self.path_base {
                    config.resolve_paths(at);
                }
                Ok(config)
            }
            Err(e) if e.kind == ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(e),
        }
    }

    /// Writes the config. A file the rewrite would change other than by the
    /// edit (comments, anchors, quoting: YAML round trips keep none of them,
    /// in qmd neither) is first kept as `<file>.bak`.
    fn save_config(&self, config: &Config) -> Result<()> {
        let yaml = config.to_yaml()?;
        if let Ok(current) = self.config_dir.read(&self.config_file) {
            let current = String::from_utf8_lossy(&current);
            let ours = Config::parse(&current).and_then(|c| c.to_yaml()).is_ok_and(|again| again == current);
            if !ours && !current.trim().is_empty() {
                self.config_dir.atomic_write(&format!("{}.bak", self.config_file), current.as_bytes())?;
            }
        }
        self.config_dir.atomic_write(&self.config_file, yaml.as_bytes())
    }

    /// The current index generation. Re-reads only the manifest; segment
    /// readers (and their loaded sections) are reused while it is unchanged.
    pub fn index(&self) -> Result<Rc<Index>> {
        let current = Manifest::load(self.index_dir.as_ref())?;
        if let Some(index) = self.snapshot.borrow().as_ref()
            && index.manifest == current
        {
            return Ok(index.clone());
        }
        let index = Rc::new(Index::open(self.index_dir.clone())?);
        *self.snapshot.borrow_mut() = Some(index.clone());
        Ok(index)
    }

    /// Collections to search: the named ones (each must exist), else every
    /// collection included by default.
    fn scope(&self, config: &Config, names: &[String]) -> Result<Vec<String>> {
        if names.is_empty() {
            return Ok(config.default_collections());
        }
        for name in names {
            config.require(name)?;
        }
        // Each named once: a name repeated runs every list again.
        let mut seen = std::collections::HashSet::new();
        Ok(names.iter().filter(|n| seen.insert(n.as_str())).cloned().collect())
    }
}

/// Path of a document on the host: collection root + relative path.
fn source_path(config: &Config, collection: &str, path: &str) -> String {
    match config.collection(collection) {
        Some(c) => format!("{}/{}", c.path.trim_end_matches('/'), path),
        None => path.to_string(),
    }
}

/// An engine over `notes` in memory, with `collections` (root, name)
/// added and indexed: the fixture of the engine's unit tests.
#[cfg(test)]
pub(crate) fn indexed_in_memory(notes: crate::source::MemorySource, collections: &[(&str, &str)]) -> Engine {
    use crate::directory::RamDirectory;
    let engine = Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(notes));
    for (root, name) in collections {
        engine.collection_add(root, Some(name), None).unwrap();
    }
    engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
    engine
}

/// The first `limit` of `hits` (in their order) whose documents pass
/// `filter`; documents past them are never read.
fn passing<T>(
    index: &Index,
    filter: &crate::metadata::Filter,
    hits: Vec<T>,
    address: impl Fn(&T) -> crate::index::DocAddress,
    limit: usize,
) -> Result<Vec<T>> {
    let mut kept = Vec::new();
    for hit in hits {
        if kept.len() == limit {
            break;
        }
        if index.passes(address(&hit), filter)? {
            kept.push(hit);
        }
    }
    Ok(kept)
}
