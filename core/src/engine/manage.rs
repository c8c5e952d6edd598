//! Collection and context management: edits `index.yml`, and the index
//! where documents depend on it (remove, rename).

use super::Engine;
use crate::api::{CollectionInfo, ContextEntry};
use crate::collection::{Collection, Config, PathFilter, normalize_prefix};
use crate::error::{Error, Result};
use crate::index::IndexWriter;
use crate::index::segment::DocInput;
use crate::vpath;

fn check_name(name: &str) -> Result<()> {
    match vpath::segment_problem(name) {
        None => Ok(()),
        Some(why) => {
            Err(Error::invalid(format!("Invalid collection name: '{}' ({why})", crate::display::escape_controls(name))))
        }
    }
}

impl Engine {
    fn info(&self, c: &Collection) -> Result<CollectionInfo> {
        let index = self.index()?;
        collection_info(&index, c)
    }

    /// Adds a collection to the config. `path` must be an absolute path to
    /// an existing directory (the host resolves and checks it). Run
    /// `update` for it afterwards.
    pub fn collection_add(&self, path: &str, name: Option<&str>, mask: Option<&str>) -> Result<CollectionInfo> {
        if !path.starts_with('/') {
            return Err(Error::invalid(format!("Collection path must be absolute: {path}")));
        }
        let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        let pattern = mask.unwrap_or(crate::collection::DEFAULT_PATTERN);
        PathFilter::new(pattern, &[])?;
        let name = match name {
            Some(n) => n.to_string(),
            None => path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("root").to_string(),
        };
        check_name(&name)?;
        let mut config = self.config()?;
        if config.collection(&name).is_some() {
            return Err(Error::exists(format!(
                "Collection '{name}' already exists.\nUse a different name with --name <name>"
            )));
        }
        if let Some(other) = config.collections.iter().find(|c| c.path == path && c.pattern == pattern) {
            return Err(Error::exists(format!(
                "A collection already exists for this path and pattern:\n  Name: {} (qmd://{}/)\n  Pattern: {}\n\nUse 'qmd update' to re-index it, or remove it first with 'qmd collection remove {}'",
                other.name, other.name, other.pattern, other.name
            )));
        }
        config.collections.push(Collection::new(&name, path, pattern));
        self.save_config(&config)?;
        let c = config.require(&name)?;
        self.info(c)
    }

    pub fn collection_list(&self) -> Result<Vec<CollectionInfo>> {
        let config = self.config()?;
        let index = self.index()?;
        config.collections.iter().map(|c| collection_info(&index, c)).collect()
    }

    fn require_collection(config: &Config, name: &str) -> Result<()> {
        config.require(name).map(|_| ()).map_err(|mut e| {
            e.message.push_str("\nRun 'qmd collection list' to see available collections.");
            e
        })
    }

    /// Removes a collection and its documents.
    pub fn collection_remove(&self, name: &str) -> Result<CollectionInfo> {
        let mut config = self.config()?;
        Self::require_collection(&config, name)?;
        let info = self.info(config.require(name)?)?;
        let index = self.index()?;
        let mut writer = IndexWriter::new(&index);
        for entry in index.catalog()?.iter().filter(|e| e.record.collection == name) {
            writer.delete(entry.address);
        }
        writer.drop_collection(name);
        // Index first: a crash in between leaves a config naming a collection
        // with no documents, which the next update repairs.
        writer.commit()?;
        config.collections.retain(|c| c.name != name);
        self.save_config(&config)?;
        Ok(info)
    }

    /// Renames a collection; its documents move with it.
    pub fn collection_rename(&self, old: &str, new: &str) -> Result<CollectionInfo> {
        let mut config = self.config()?;
        Self::require_collection(&config, old)?;
        check_name(new)?;
        if config.collection(new).is_some() {
            return Err(Error::exists(format!("Collection '{new}' already exists.")));
        }
        let index = self.index()?;
        let mut writer = IndexWriter::new(&index);
        for entry in index.catalog()?.iter().filter(|e| e.record.collection == old) {
            // Re-add under the new name: the path field (`collection/path`) is indexed text.
            let body = index.body(entry)?;
            let r = &entry.record;
            let metadata = index.metadata_of(entry.address, &body)?;
            writer.delete(entry.address);
            writer.add(&DocInput {
                collection: new,
                path: &r.path,
                title: &r.title,
                hash: &r.hash,
                modified_ms: r.modified_ms,
                body: &body,
                metadata: &metadata,
            })?;
        }
        if let Some(&time) = index.manifest.last_update.get(old) {
            writer.mark_updated(new, time);
        }
        writer.drop_collection(old);
        writer.commit()?;
        config.collection_mut(old).expect("checked above").name = new.to_string();
        self.save_config(&config)?;
        self.info(config.require(new)?)
    }

    /// Changes one setting of collection `name` in the config.
    fn edit_collection(&self, name: &str, change: impl FnOnce(&mut Collection)) -> Result<CollectionInfo> {
        let mut config = self.config()?;
        Self::require_collection(&config, name)?;
        change(config.collection_mut(name).expect("checked above"));
        self.save_config(&config)?;
        self.info(config.require(name)?)
    }

    pub fn collection_set_include(&self, name: &str, include: bool) -> Result<CollectionInfo> {
        self.edit_collection(name, |c| c.include_by_default = include)
    }

    /// Sets or clears the command `update` runs before scanning `name`.
    pub fn collection_set_update(&self, name: &str, command: Option<&str>) -> Result<CollectionInfo> {
        let command = command.map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        self.edit_collection(name, |c| c.update_command = command)
    }

    /// Resolves a context target: `/` (global), `qmd://c/prefix`, an
    /// absolute path under a collection root (longest root wins), or
    /// `collection/prefix`.
    fn context_target(config: &Config, target: &str) -> Result<(Option<String>, String)> {
        let target = target.trim();
        if target == "/" || target.is_empty() {
            return Ok((None, "/".into()));
        }
        if let Some(vp) = vpath::parse(target) {
            config.require(&vp.collection)?;
            return Ok((Some(vp.collection), normalize_prefix(&vp.path)));
        }
        if target.starts_with('/') {
            let best = config
                .collections
                .iter()
                .filter_map(|c| {
                    let root = c.path.trim_end_matches('/');
                    let rest = target.strip_prefix(root)?;
                    (rest.is_empty() || rest.starts_with('/')).then_some((root.len(), c, rest))
                })
                .max_by_key(|(len, _, _)| *len);
            return match best {
                Some((_, c, rest)) => Ok((Some(c.name.clone()), normalize_prefix(rest))),
                None => Err(Error::not_found(format!("Path is not in any indexed collection: {target}"))),
            };
        }
        let (name, rest) = target.split_once('/').unwrap_or((target, ""));
        match config.collection(name) {
            Some(c) => Ok((Some(c.name.clone()), normalize_prefix(rest))),
            None => Err(Error::not_found(format!("Path is not in any indexed collection: {target}"))),
        }
    }

    pub fn context_add(&self, target: &str, text: &str) -> Result<ContextEntry> {
        if text.trim().is_empty() {
            return Err(Error::invalid("Context text may not be empty"));
        }
        let mut config = self.config()?;
        let (collection, prefix) = Self::context_target(&config, target)?;
        match &collection {
            None => config.global_context = Some(text.to_string()),
            Some(name) => {
                let c = config.collection_mut(name).expect("resolved above");
                match c.contexts.iter_mut().find(|(p, _)| *p == prefix) {
                    Some(entry) => entry.1 = text.to_string(),
                    None => c.contexts.push((prefix.clone(), text.to_string())),
                }
            }
        }
        self.save_config(&config)?;
        Ok(ContextEntry { collection: collection.unwrap_or_else(|| "*".into()), prefix, text: text.to_string() })
    }

    pub fn context_list(&self) -> Result<Vec<ContextEntry>> {
        let config = self.config()?;
        Ok(list_contexts(&config))
    }

    pub fn context_remove(&self, target: &str) -> Result<ContextEntry> {
        let mut config = self.config()?;
        let (collection, prefix) = Self::context_target(&config, target)?;
        let removed = match &collection {
            None => config.global_context.take(),
            Some(name) => {
                let c = config.collection_mut(name).expect("resolved above");
                let at = c.contexts.iter().position(|(p, _)| *p == prefix);
                at.map(|i| c.contexts.remove(i).1)
            }
        };
        let Some(text) = removed else {
            return Err(Error::not_found(format!("No context found for: {target}")));
        };
        self.save_config(&config)?;
        Ok(ContextEntry { collection: collection.unwrap_or_else(|| "*".into()), prefix, text })
    }
}

pub(super) fn list_contexts(config: &Config) -> Vec<ContextEntry> {
    let global = config.global_context.iter().map(|text| ContextEntry {
        collection: "*".into(),
        prefix: "/".into(),
        text: text.clone(),
    });
    let per_collection = config.collections.iter().flat_map(|c| {
        c.contexts.iter().map(|(prefix, text)| ContextEntry {
            collection: c.name.clone(),
            prefix: prefix.clone(),
            text: text.clone(),
        })
    });
    global.chain(per_collection).collect()
}

/// A collection's config plus what the index knows of it.
fn collection_info(index: &crate::index::Index, c: &Collection) -> Result<CollectionInfo> {
    let documents = index.collection_counts()?.get(&c.name).copied().unwrap_or(0);
    Ok(CollectionInfo {
        name: c.name.clone(),
        path: c.path.clone(),
        pattern: c.pattern.clone(),
        ignore: c.ignore.clone(),
        include_by_default: c.include_by_default,
        documents,
        last_updated: index.manifest.last_update.get(&c.name).copied(),
        contexts: c.contexts.len() as u32,
        update_command: c.update_command.clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::directory::RamDirectory;
    use crate::source::MemorySource;
    use crate::{Engine, ErrorKind};

    #[test]
    fn names_that_are_dots_or_hold_controls_are_refused_at_add_and_rename() {
        let engine = Engine::new(
            Rc::new(RamDirectory::new()),
            Rc::new(RamDirectory::new()),
            "index.yml",
            Rc::new(MemorySource::new()),
        );
        for bad in [".", "..", "", "a/b", "evil\x1b[2K", "cr\rlf", "bidi\u{202e}txt", "nul\0"] {
            let e = engine.collection_add("/n", Some(bad), None).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{bad:?}: {}", e.message);
            assert!(!e.message.chars().any(crate::display::is_unsafe_char), "{bad:?}: the error is printable");
        }
        // A folder whose own name is unusable needs --name.
        assert!(engine.collection_add("/n/..", None, None).is_err());
        engine.collection_add("/n", Some("notes"), None).unwrap();
        for bad in [".", "..", "x\x07"] {
            assert_eq!(engine.collection_rename("notes", bad).unwrap_err().kind, ErrorKind::InvalidArgument, "{bad:?}");
        }
        assert!(engine.collection_rename("notes", "n.otes..").is_ok(), "dots inside a name are fine");
    }
}
