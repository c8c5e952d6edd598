//! Where qmd keeps things, as qmd does: XDG cache and config directories,
//! named indexes, `INDEX_PATH` and `QMD_CONFIG_DIR` overrides, and
//! project-local `.qmd/` indexes.

use std::env;
use std::path::{Path, PathBuf};

/// The user's home folder (`HOME`, else `USERPROFILE`, else `/tmp`).
pub fn home() -> PathBuf {
    env::var_os("HOME").or_else(|| env::var_os("USERPROFILE")).map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

fn non_empty(var: &str) -> Option<PathBuf> {
    env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `${XDG_CACHE_HOME:-~/.cache}/qmd`.
pub fn cache_dir() -> PathBuf {
    non_empty("XDG_CACHE_HOME").unwrap_or_else(|| home().join(".cache")).join("qmd")
}

/// `$QMD_CONFIG_DIR` > `$XDG_CONFIG_HOME/qmd` > `~/.config/qmd`.
pub fn config_dir() -> PathBuf {
    non_empty("QMD_CONFIG_DIR")
        .or_else(|| non_empty("XDG_CONFIG_HOME").map(|p| p.join("qmd")))
        .unwrap_or_else(|| home().join(".config").join("qmd"))
}

/// An index's config file: `<config dir>/<index>.yml`, or, when that is a
/// symlink (dotfile managers make it one), the file it points to. The
/// engine is granted that file's real directory, so it can read the file
/// and replace it atomically there, which keeps the user's link intact.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    pub dir: PathBuf,
    pub name: String,
}

impl ConfigFile {
    pub fn for_index(index_name: &str) -> ConfigFile {
        let dir = config_dir();
        let name = format!("{index_name}.yml");
        // Followed by hand, so a link to a file not created yet works too.
        let mut path = dir.join(&name);
        for _ in 0..40 {
            let Ok(target) = std::fs::read_link(&path) else { break };
            path = path.parent().map_or(target.clone(), |parent| parent.join(&target));
        }
        match (path.parent(), path.file_name().and_then(|f| f.to_str())) {
            (Some(parent), Some(file)) if path != dir.join(&name) => {
                let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
                ConfigFile { dir: parent, name: file.to_string() }
            }
            _ => ConfigFile { dir, name },
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// A project's own config (`<project>/.qmd/index.yml`): it came with a
    /// checkout, so qmd's trust gate applies to it.
    pub fn is_local(&self) -> bool {
        self.dir.file_name().is_some_and(|n| n == LOCAL_DIR)
    }

    /// The folder holding `.qmd`, for a local config.
    pub fn project_root(&self) -> Option<&Path> {
        self.is_local().then(|| self.dir.parent()).flatten()
    }

    /// What relative collection paths in this config mean: the project's
    /// folder for a project config, the config's folder for the user's
    /// own, wherever the command runs from. The engine gets the same.
    pub fn path_base(&self) -> qmd_core::collection::PathBase {
        let base = self.project_root().unwrap_or(&self.dir);
        qmd_core::collection::PathBase {
            base: base.to_string_lossy().into_owned(),
            home: Some(home().to_string_lossy().into_owned()),
        }
    }

    /// The parsed config, collection paths resolved ([`Self::path_base`]);
    /// a missing file is an empty one. A file that cannot be parsed is an
    /// error naming it.
    pub fn load(&self) -> anyhow::Result<qmd_core::collection::Config> {
        let path = self.path();
        // A FIFO in its place is refused, not read (a read would block
        // every command).
        let text = match crate::files::regular::read(&path, MAX_CONFIG_BYTES) {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("cannot read {}: not UTF-8 text", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        let mut config = qmd_core::collection::Config::parse(&text)
            .map_err(|e| anyhow::anyhow!("{} ({})", e.message, path.display()))?;
        config.resolve_paths(&self.path_base());
        Ok(config)
    }
}

/// A project-local index's folder.
pub const LOCAL_DIR: &str = ".qmd";

/// The largest `index.yml` or `trusted.json` read (hand-written files of a
/// few KB; a larger one is refused rather than read whole).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Where a command's index lives: its name, config and index folder.
#[derive(Clone, Debug)]
pub struct Location {
    pub name: String,
    pub config: ConfigFile,
    pub index_dir: PathBuf,
}

impl Location {
    /// `--index <name>`'s, else a project-local `.qmd/index.yaml` (or
    /// `.yml`) found walking up from the current directory (its index
    /// beside it), else the global `index`. As qmd.
    pub fn find(index: Option<&str>) -> Location {
        if index.is_none_or(str::is_empty)
            && let Some(config) = env::current_dir().ok().and_then(|cwd| local_config(&cwd))
        {
            return Location::local(config);
        }
        let name = index_name(index);
        Location { config: ConfigFile::for_index(&name), index_dir: index_dir(&name), name }
    }

    /// The project index whose config is `config` (in a `.qmd` folder).
    pub fn local(config: ConfigFile) -> Location {
        let index_dir = non_empty("INDEX_PATH").unwrap_or_else(|| config.dir.join("index.qmdx"));
        Location { name: "index".into(), config, index_dir }
    }
}

/// The nearest `.qmd/index.yaml` or `.qmd/index.yml` at or above `start`.
pub fn local_config(start: &Path) -> Option<ConfigFile> {
    start.ancestors().find_map(|dir| config_in(&dir.join(LOCAL_DIR)))
}

/// `folder/index.yaml`, else `folder/index.yml`, whichever exists.
pub fn config_in(folder: &Path) -> Option<ConfigFile> {
    ["index.yaml", "index.yml"]
        .into_iter()
        .find(|name| folder.join(name).is_file())
        .map(|name| ConfigFile { dir: folder.to_path_buf(), name: name.to_string() })
}

/// qmd's `--index` rule: a name containing `/` is resolved against the
/// current directory, then `/` becomes `_` and a leading `_` is dropped.
pub fn index_name(raw: Option<&str>) -> String {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else { return "index".into() };
    if !raw.contains('/') {
        return raw.to_string();
    }
    let absolute = env::current_dir().map(|cwd| cwd.join(raw)).unwrap_or_else(|_| PathBuf::from(raw));
    let normalized: PathBuf = absolute.components().collect();
    normalized.to_string_lossy().replace('/', "_").trim_start_matches('_').to_string()
}

/// The index directory: `INDEX_PATH`, else `<cache>/<name>.qmdx`.
pub fn index_dir(name: &str) -> PathBuf {
    non_empty("INDEX_PATH").unwrap_or_else(|| cache_dir().join(format!("{name}.qmdx")))
}

/// `~/x` → `$HOME/x`; relative paths against the current directory.
pub fn absolute(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        return home().join(rest);
    }
    let p = Path::new(path);
    if p.is_absolute() { p.to_path_buf() } else { env::current_dir().unwrap_or_default().join(p) }
}
