//! Where qmd keeps things, as qmd does: XDG cache and config directories,
//! named indexes, `INDEX_PATH` and `QMD_CONFIG_DIR` overrides.

use std::env;
use std::path::{Path, PathBuf};

fn home() -> PathBuf {
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
