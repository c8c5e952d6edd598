//! `index.yml`, compatible with qmd's: collections in file order, contexts,
//! global context; keys we do not use (models, editor_uri, …) are kept.

use serde_norway::{Mapping, Value};

use crate::chunk::ChunkStrategy;
use crate::error::{Error, Result};

pub const DEFAULT_PATTERN: &str = "**/*.md";

/// One collection as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct Collection {
    pub name: String,
    /// The folder, resolved ([`Config::resolve_paths`]) where the config
    /// was read with a base; as written otherwise.
    pub path: String,
    pub pattern: String,
    pub ignore: Vec<String>,
    pub update_command: Option<String>,
    pub include_by_default: bool,
    /// `chunk_strategy:`, how this collection's code files are cut, over
    /// the `--chunk-strategy` flag (qmd has no such key).
    pub chunk_strategy: Option<ChunkStrategy>,
    /// Prefix (`/` or `/sub/dir`) → context text, in file order.
    pub contexts: Vec<(String, String)>,
    /// Keys of this collection we do not interpret.
    extra: Mapping,
    /// `path` as the file has it, where resolving changed it: written back
    /// as it was, so a project config stays relative.
    written_path: Option<String>,
}

impl Collection {
    pub fn new(name: &str, path: &str, pattern: &str) -> Self {
        Collection {
            name: name.to_string(),
            path: path.to_string(),
            pattern: pattern.to_string(),
            ignore: Vec::new(),
            update_command: None,
            include_by_default: true,
            chunk_strategy: None,
            contexts: Vec::new(),
            extra: Mapping::new(),
            written_path: None,
        }
    }
}

/// The model roles `models:` may name.
pub const MODEL_ROLES: [&str; 3] = ["embed", "rerank", "generate"];

/// `models:` must be a mapping whose known roles name a model; a typo must
/// not fall back to the default models without a word.
fn check_models(models: Option<&Value>) -> Result<()> {
    let Some(models) = models else { return Ok(()) };
    let hint = "set it to a mapping such as `models: {embed: sentence-transformers/all-MiniLM-L6-v2}`";
    let Value::Mapping(models) = models else {
        return Err(Error::invalid(format!("index.yml: `models` must be a mapping of role to model; {hint}")));
    };
    for (role, value) in models {
        let role = string(role).unwrap_or_default();
        let named = string(value).is_some_and(|m| !m.trim().is_empty());
        if MODEL_ROLES.contains(&role.as_str()) && !named && !matches!(value, Value::Null) {
            return Err(Error::invalid(format!("index.yml: `models.{role}` must be a model id or a local path")));
        }
    }
    Ok(())
}

/// The whole config file. Keys are taken out with `shift_remove`, so the
/// ones kept uninterpreted stay in the user's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub global_context: Option<String>,
    pub collections: Vec<Collection>,
    /// Top-level keys we do not interpret (models, editor_uri, …).
    extra: Mapping,
}

/// A collection's `chunk_strategy:`, with the flag's two values.
fn chunk_strategy_key(collection: &str, value: &Value) -> Result<ChunkStrategy> {
    string(value).and_then(|s| ChunkStrategy::parse(&s).ok()).ok_or_else(|| {
        let shown = serde_norway::to_string(value).unwrap_or_default();
        Error::invalid(format!(
            "index.yml: collection '{collection}': chunk_strategy must be \"auto\" or \"regex\" (got {})",
            crate::display::escape_controls(shown.trim())
        ))
    })
}

fn string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Config {
    /// Parses `index.yml` text. An empty file is an empty config.
    pub fn parse(text: &str) -> Result<Config> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let root: Value =
            crate::yaml::parse(text).map_err(|e| Error::invalid(format!("index.yml is not valid YAML: {e}")))?;
        let mut map = match root {
            Value::Mapping(map) => map,
            Value::Null => Mapping::new(),
            _ => return Err(Error::invalid("index.yml must be a mapping")),
        };
        let global_context = map.shift_remove("global_context").as_ref().and_then(string);
        check_models(map.get("models"))?;
        let mut collections = Vec::new();
        if let Some(value) = map.shift_remove("collections") {
            let Value::Mapping(entries) = value else {
                return Err(Error::invalid("index.yml: `collections` must be a mapping"));
            };
            for (key, value) in entries {
                let name = string(&key).ok_or_else(|| Error::invalid("index.yml: collection names must be strings"))?;
                collections.push(Self::parse_collection(name, value)?);
            }
        }
        Ok(Config { global_context, collections, extra: map })
    }

    fn parse_collection(name: String, value: Value) -> Result<Collection> {
        let Value::Mapping(mut map) = value else {
            return Err(Error::invalid(format!("index.yml: collection '{name}' must be a mapping")));
        };
        let path = map
            .shift_remove("path")
            .as_ref()
            .and_then(string)
            .ok_or_else(|| Error::invalid(format!("index.yml: collection '{name}' has no path")))?;
        let pattern =
            map.shift_remove("pattern").as_ref().and_then(string).unwrap_or_else(|| DEFAULT_PATTERN.to_string());
        let ignore = match map.shift_remove("ignore") {
            Some(Value::Sequence(items)) => items.iter().filter_map(string).collect(),
            Some(value) => string(&value).into_iter().collect(),
            None => Vec::new(),
        };
        let update_command = map.shift_remove("update").as_ref().and_then(string);
        let include_by_default = !matches!(map.shift_remove("includeByDefault"), Some(Value::Bool(false)));
        let chunk_strategy = match map.shift_remove("chunk_strategy") {
            None | Some(Value::Null) => None,
            Some(value) => Some(chunk_strategy_key(&name, &value)?),
        };
        let contexts = match map.shift_remove("context") {
            Some(Value::Mapping(entries)) => {
                entries.iter().filter_map(|(k, v)| Some((super::normalize_prefix(&string(k)?), string(v)?))).collect()
            }
            _ => Vec::new(),
        };
        Ok(Collection {
            name,
            path,
            pattern,
            ignore,
            update_command,
            include_by_default,
            chunk_strategy,
            contexts,
            extra: map,
            written_path: None,
        })
    }

    /// Resolves every collection's path against `at`
    /// ([`super::resolve_path`]); the file keeps them as written.
    pub fn resolve_paths(&mut self, at: &super::PathBase) {
        for c in &mut self.collections {
            let resolved = super::resolve_path(&c.path, at);
            if resolved != c.path {
                c.written_path = Some(std::mem::replace(&mut c.path, resolved));
            }
        }
    }

    /// Serialises back to YAML in qmd's key order.
    pub fn to_yaml(&self) -> Result<String> {
        let mut root = Mapping::new();
        if let Some(global) = &self.global_context {
            root.insert("global_context".into(), global.clone().into());
        }
        for (k, v) in &self.extra {
            root.insert(k.clone(), v.clone());
        }
        let mut collections = Mapping::new();
        for c in &self.collections {
            let mut map = Mapping::new();
            map.insert("path".into(), c.written_path.as_ref().unwrap_or(&c.path).clone().into());
            map.insert("pattern".into(), c.pattern.clone().into());
            if !c.ignore.is_empty() {
                map.insert("ignore".into(), Value::Sequence(c.ignore.iter().cloned().map(Value::from).collect()));
            }
            if let Some(cmd) = &c.update_command {
                map.insert("update".into(), cmd.clone().into());
            }
            if !c.include_by_default {
                map.insert("includeByDefault".into(), false.into());
            }
            if let Some(strategy) = c.chunk_strategy {
                map.insert("chunk_strategy".into(), strategy.name().into());
            }
            if !c.contexts.is_empty() {
                let contexts =
                    c.contexts.iter().map(|(p, t)| (Value::from(p.clone()), Value::from(t.clone()))).collect();
                map.insert("context".into(), Value::Mapping(contexts));
            }
            for (k, v) in &c.extra {
                map.insert(k.clone(), v.clone());
            }
            collections.insert(c.name.clone().into(), Value::Mapping(map));
        }
        root.insert("collections".into(), Value::Mapping(collections));
        // An error, never an empty string: the caller would write it over
        // the user's config.
        serde_norway::to_string(&Value::Mapping(root))
            .map_err(|e| Error::new(crate::ErrorKind::Internal, format!("cannot write index.yml: {e}")))
    }

    /// `models.<role>` (`embed`, `rerank`, `generate`): a model id or a
    /// local path, which wins over `QMD_<ROLE>_MODEL` (qmd's order). Kept
    /// with the other uninterpreted keys, so it is written back as read.
    pub fn model(&self, role: &str) -> Option<String> {
        match self.extra.get("models")? {
            Value::Mapping(models) => models.get(role).and_then(string).filter(|m| !m.trim().is_empty()),
            _ => None,
        }
    }

    /// Forgets the `models:` block (an untrusted project config's).
    pub fn clear_models(&mut self) {
        self.extra.shift_remove("models");
    }

    pub fn collection(&self, name: &str) -> Option<&Collection> {
        self.collections.iter().find(|c| c.name == name)
    }

    pub fn collection_mut(&mut self, name: &str) -> Option<&mut Collection> {
        self.collections.iter_mut().find(|c| c.name == name)
    }

    /// The collection or qmd's error for an unknown name.
    pub fn require(&self, name: &str) -> Result<&Collection> {
        self.collection(name).ok_or_else(|| Error::not_found(format!("Collection not found: {name}")))
    }

    /// Names searched when the caller names none: those included by default.
    pub fn default_collections(&self) -> Vec<String> {
        self.collections.iter().filter(|c| c.include_by_default).map(|c| c.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_paths_resolve_against_the_base_and_are_written_back_as_they_were() {
        let text = "collections:\n  d:\n    path: docs\n    pattern: '**/*.md'\n  a:\n    path: /abs/notes\n    pattern: '**/*.md'\n";
        let mut config = Config::parse(text).unwrap();
        config.resolve_paths(&crate::collection::PathBase { base: "/p/proj".into(), home: None });
        assert_eq!(config.collection("d").unwrap().path, "/p/proj/docs");
        assert_eq!(config.collection("a").unwrap().path, "/abs/notes");
        let yaml = config.to_yaml().unwrap();
        assert!(yaml.contains("path: docs\n") && yaml.contains("path: /abs/notes\n"), "{yaml}");
    }

    use super::*;

    const QMD_YML: &str = r#"global_context: Personal knowledge base
models:
  embed: hf:someone/model.gguf
collections:
  notes:
    path: /home/me/notes
    pattern: "**/*.md"
    context:
      /: Daily notes
      journals: Journals
  work:
    path: /home/me/work
    pattern: "**/*.{md,txt}"
    ignore:
      - archive/**
    includeByDefault: false
    update: git pull
"#;

    #[test]
    fn a_collections_chunk_strategy_is_read_written_back_and_checked() {
        let text = "collections:\n  code:\n    path: /src\n    pattern: '**/*.py'\n    chunk_strategy: auto\n  notes:\n    path: /n\n    pattern: '**/*.md'\n    chunk_strategy:\n";
        let config = Config::parse(text).unwrap();
        assert_eq!(config.require("code").unwrap().chunk_strategy, Some(ChunkStrategy::Auto));
        assert_eq!(config.require("notes").unwrap().chunk_strategy, None, "an empty key is no key");
        let yaml = config.to_yaml().unwrap();
        assert!(yaml.contains("chunk_strategy: auto\n"), "{yaml}");
        assert_eq!(Config::parse(&yaml).unwrap(), config);
        for (bad, shown) in [("ast", "ast"), ("[auto]", "- auto"), ("\"\\e[31mx\"", "\"\\e[31mx\"")] {
            let text = format!("collections:\n  code:\n    path: /src\n    chunk_strategy: {bad}\n");
            let err = Config::parse(&text).unwrap_err();
            assert!(
                err.message.starts_with("index.yml: collection 'code': chunk_strategy must be \"auto\" or \"regex\"")
            );
            assert!(err.message.contains(shown) || bad.contains("31m"), "{}", err.message);
            assert!(!err.message.contains('\x1b'), "control characters are escaped: {}", err.message);
        }
    }

    #[test]
    fn round_trips_qmd_config() {
        let config = Config::parse(QMD_YML).unwrap();
        assert_eq!(config.global_context.as_deref(), Some("Personal knowledge base"));
        assert_eq!(config.collections.len(), 2);
        let notes = &config.collections[0];
        assert_eq!(notes.name, "notes");
        assert_eq!(notes.contexts, vec![("/".into(), "Daily notes".into()), ("journals".into(), "Journals".into())]);
        let work = config.require("work").unwrap();
        assert!(!work.include_by_default);
        assert_eq!(work.ignore, vec!["archive/**"]);
        assert_eq!(work.update_command.as_deref(), Some("git pull"));
        assert_eq!(config.default_collections(), vec!["notes"]);
        let again = Config::parse(&config.to_yaml().unwrap()).unwrap();
        assert_eq!(again, config);
        assert!(config.to_yaml().unwrap().contains("embed: hf:someone/model.gguf"));
        assert_eq!(config.model("embed").as_deref(), Some("hf:someone/model.gguf"));
        assert_eq!(config.model("rerank"), None);
    }

    /// Found by fuzzing: an empty tag parses but cannot be written. Writing
    /// used to fall back to an empty string, which replaced the user's file.
    const UNWRITABLE: &str = "gl{obal_contextQ\u{fffd}*:\n  !   /: D";

    /// Found by fuzzing: keys qmd-wasm does not interpret moved around on
    /// every write (a swap-remove of the ones it does).
    #[test]
    fn unknown_keys_keep_their_order() {
        let text = "zeta: 1\nglobal_context: g\nalpha: 2\ncollections:\n  n:\n    path: /n\n    b: 1\n    update: x\n    a: 2\n";
        let once = Config::parse(text).unwrap().to_yaml().unwrap();
        assert_eq!(Config::parse(&once).unwrap().to_yaml().unwrap(), once);
        assert!(once.find("zeta").unwrap() < once.find("alpha").unwrap(), "{once}");
        assert!(once.find("    b: 1").unwrap() < once.find("    a: 2").unwrap(), "{once}");
    }

    #[test]
    fn a_config_that_cannot_be_written_is_an_error() {
        let config = Config::parse(UNWRITABLE).unwrap();
        let err = config.to_yaml().unwrap_err();
        assert!(err.message.starts_with("cannot write index.yml"), "{}", err.message);
    }

    #[test]
    fn saving_an_unwritable_config_leaves_the_file_alone() {
        use std::rc::Rc;

        use crate::directory::{Directory, RamDirectory};
        let config_dir = RamDirectory::new();
        config_dir.atomic_write("index.yml", UNWRITABLE.as_bytes()).unwrap();
        let engine = crate::Engine::new(
            Rc::new(RamDirectory::new()),
            Rc::new(config_dir.clone()),
            "index.yml",
            Rc::new(crate::MemorySource::new()),
        );
        assert!(engine.context_add("/", "global").is_err());
        assert_eq!(config_dir.read("index.yml").unwrap(), UNWRITABLE.as_bytes());
    }

    #[test]
    fn a_bad_models_block_is_an_error_not_the_defaults() {
        let err = Config::parse("models: oops").unwrap_err().message;
        assert!(err.contains("`models` must be a mapping"), "{err}");
        let err = Config::parse("models:\n  embed: [a, b]").unwrap_err().message;
        assert!(err.contains("`models.embed` must be a model id"), "{err}");
        assert!(Config::parse("models:\n  embed: ''").is_err(), "an empty id is refused");
        assert!(Config::parse("models:\n  embed:\n  future_role: [x]").is_ok(), "unset and unknown roles pass");
    }

    #[test]
    fn errors_are_clear() {
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert!(Config::parse("collections: [1,2]").unwrap_err().message.contains("must be a mapping"));
        assert!(Config::parse("collections:\n  x:\n    pattern: a").unwrap_err().message.contains("has no path"));
        assert_eq!(Config::default().require("nope").unwrap_err().message, "Collection not found: nope");
    }
}
