//! qmd's trust gate for project-local configs (`<project>/.qmd/index.yml`).
//! Such a file arrives with a `git clone`, and three of its fields reach
//! outside the project: `update:` hooks, collection paths outside the
//! project, and non-default models. Until the user approves the file's
//! current set of them (`qmd trust`, a prompt on a terminal, or
//! `QMD_TRUST_LOCAL_CONFIG=1`), commands skip them and go on with the rest.
//! Approvals live in `<config dir>/trusted.json`, keyed by the config's
//! path, as a digest of the gated set: editing any of them asks again.
//! Your own config (`~/.config/qmd/*.yml`) is never gated.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use qmd_core::collection::Config;
use qmd_core::display::escape_controls;
use qmd_core::document::to_hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::models::defaults;
use crate::paths::ConfigFile;

/// The gated fields of a config: `(collection, command)`,
/// `(collection, path as written)`, `(role, model)`.
#[derive(Debug, Default, PartialEq)]
pub struct Gated {
    pub hooks: Vec<(String, String)>,
    pub paths: Vec<(String, String)>,
    pub models: Vec<(String, String)>,
}

impl Gated {
    /// What `config` (read from `file`) may only use once trusted; nothing
    /// for a config that is not project-local.
    pub fn of(file: &ConfigFile, config: &Config) -> Gated {
        let Some(root) = file.project_root() else { return Gated::default() };
        let hooks =
            config.collections.iter().filter_map(|c| Some((c.name.clone(), c.update_command.clone()?))).collect();
        let paths = config
            .collections
            .iter()
            .filter(|c| !inside(root, &c.path))
            .map(|c| (c.name.clone(), c.path.clone()))
            .collect();
        let models = [("embed", defaults::DEFAULT_EMBED_MODEL), ("rerank", defaults::DEFAULT_RERANK_MODEL)]
            .into_iter()
            .filter_map(|(role, default)| Some((role.to_string(), config.model(role).filter(|m| m != default)?)))
            .collect();
        Gated { hooks, paths, models }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty() && self.paths.is_empty() && self.models.is_empty()
    }

    /// qmd's digest: sha256 of the JSON of the sorted sets, paths resolved.
    fn digest(&self) -> String {
        let sorted = |items: &[(String, String)]| {
            let mut items = items.to_vec();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            items
        };
        let paths: Vec<(String, String)> = self
            .paths
            .iter()
            .map(|(c, p)| (c.clone(), real_path(Path::new(p)).to_string_lossy().into_owned()))
            .collect();
        // Keys in qmd's order (a JSON object here would sort them).
        let json = |items: &[(String, String)]| serde_json::to_string(&sorted(items)).expect("strings serialise");
        let canonical =
            format!(r#"{{"hooks":{},"paths":{},"models":{}}}"#, json(&self.hooks), json(&paths), json(&self.models));
        to_hex(&Sha256::digest(canonical))
    }

    /// qmd's listing of what the approval covers. Every item is shown with
    /// its control characters escaped: a hook holding `\r` and an erase
    /// sequence must not show the user a harmless command in its place.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let sections = [
            ("This project's config defines update commands:", &self.hooks),
            ("Collection paths outside this project:", &self.paths),
            ("Custom models:", &self.models),
        ];
        for (title, items) in sections.into_iter().filter(|(_, items)| !items.is_empty()) {
            writeln!(out, "{title}")?;
            for (name, value) in items {
                writeln!(out, "  {}: {}", escape_controls(name), escape_controls(value))?;
            }
        }
        Ok(())
    }
}

/// The path the system opens for `path` (already resolved by the config:
/// absolute, no `.` or `..`): every link followed as far as the path
/// exists, the rest as written. Containment is decided on this, never on
/// the names: `path: link` with `link` pointing outside is outside.
pub fn real_path(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether a collection path (as the config resolved it) stays inside the
/// project, once links are followed.
pub fn inside(root: &Path, path: &str) -> bool {
    real_path(Path::new(path)).starts_with(real_path(root))
}

/// `trusted.json`: `{ "<config path>": { "hooks": digest, "trustedAt": ISO } }`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    hooks: String,
    trusted_at: String,
}

type Store = BTreeMap<String, Record>;

fn store_path() -> PathBuf {
    crate::paths::config_dir().join("trusted.json")
}

/// A missing or unreadable store trusts nothing.
fn load() -> Store {
    let bytes = crate::files::regular::read(&store_path(), crate::paths::MAX_CONFIG_BYTES).ok();
    bytes.and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

fn save(store: &Store) -> Result<()> {
    crate::files::write_atomically(&store_path(), format!("{}\n", serde_json::to_string_pretty(store)?).as_bytes())
}

fn key(file: &ConfigFile) -> String {
    file.path().to_string_lossy().into_owned()
}

/// The config file and its gated set, read from disk.
pub struct Gate {
    pub file: ConfigFile,
    pub gated: Gated,
}

impl Gate {
    /// The gate of `config`, read from `file`.
    pub fn new(file: &ConfigFile, config: &Config) -> Gate {
        Gate { gated: Gated::of(file, config), file: file.clone() }
    }

    pub fn read(file: &ConfigFile) -> Result<Gate> {
        Ok(Gate::new(file, &file.load()?))
    }

    fn digest(&self) -> String {
        self.gated.digest()
    }

    /// Whether the gated fields may be used without asking: none, the
    /// environment opts in, or this exact set was approved.
    pub fn trusted(&self) -> bool {
        self.approved() || opted_in()
    }

    /// Whether the user has seen and approved this exact set (or it is
    /// empty); the environment's opt-in does not count.
    fn approved(&self) -> bool {
        self.gated.is_empty() || load().get(&key(&self.file)).is_some_and(|record| record.hooks == self.digest())
    }

    /// After a command edited the config (`collection add`, `update-cmd`):
    /// approves the new set only when the set before it was approved, so
    /// the one item the user just typed is all that is new. A command
    /// never approves items it did not write: qmd 2.8.3 records trust for
    /// the whole file here, which let a hook already in a cloned config run
    /// unseen. Otherwise says what stays gated and how to approve it.
    pub fn approve_edit(before: &Gate, file: &ConfigFile, out: &mut dyn Write) -> Result<()> {
        let after = Gate::read(file)?;
        if after.approved() {
            return Ok(());
        }
        if before.approved() {
            return after.approve();
        }
        writeln!(out, "This project's .qmd config has items you have not approved:")?;
        after.gated.print(out)?;
        writeln!(
            out,
            "They stay skipped until you approve them: 'qmd update' asks on a terminal, or run 'qmd trust'."
        )?;
        Ok(())
    }

    /// Records the current set as approved (for a local config).
    pub fn approve(&self) -> Result<()> {
        if !self.file.is_local() {
            return Ok(());
        }
        let mut store = load();
        store.insert(
            key(&self.file),
            Record { hooks: self.digest(), trusted_at: crate::clock::iso8601(crate::clock::now_ms()) },
        );
        save(&store)
    }

    /// qmd's decision before the commands that use a project config's
    /// gated fields: run, or (off a terminal, or when the user says no)
    /// skip them and go on. The notice goes to `out` (stdout for `update`
    /// as in qmd; stderr where stdout carries results).
    pub fn resolve(&self, out: &mut dyn Write) -> Result<bool> {
        if self.trusted() {
            return Ok(true);
        }
        self.gated.print(out)?;
        writeln!(out, "Config that came with a checkout is not trusted by default.")?;
        if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            writeln!(out, "Skipping them — no terminal to confirm on. Indexing of this project continues.")?;
            writeln!(out, "Approve with 'qmd trust', or set QMD_TRUST_LOCAL_CONFIG=1 for unattended runs.\n")?;
            return Ok(false);
        }
        write!(out, "Trust this project's .qmd config? [y/N] ")?;
        out.flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            writeln!(out, "Skipped. Indexing of this project continues.\n")?;
            return Ok(false);
        }
        self.approve()?;
        writeln!(
            out,
            "Trusted {}. Editing a hook, path, or model will ask again.\n",
            escape_controls(&self.file.path().to_string_lossy())
        )?;
        Ok(true)
    }
}

/// `QMD_TRUST_LOCAL_CONFIG` or `QMD_TRUST_UPDATE_HOOKS` set to anything but
/// an off-word.
fn opted_in() -> bool {
    ["QMD_TRUST_LOCAL_CONFIG", "QMD_TRUST_UPDATE_HOOKS"].iter().any(|var| {
        std::env::var(var)
            .is_ok_and(|v| !matches!(v.trim().to_lowercase().as_str(), "" | "0" | "false" | "off" | "no" | "none"))
    })
}

/// `qmd trust [list|revoke]`.
pub fn command(file: &ConfigFile, action: Option<&str>) -> Result<std::process::ExitCode> {
    // Printed escaped: a project folder's name is the repository's choice.
    let path = file.path();
    let path = escape_controls(&path.to_string_lossy()).into_owned();
    match action {
        Some("list") => {
            let store = load();
            if store.is_empty() {
                println!("No trusted project configs.");
            }
            for (path, record) in store {
                println!("{} (trusted {})", escape_controls(&path), escape_controls(&record.trusted_at));
            }
        }
        Some("revoke") => {
            if !file.is_local() {
                println!("No project-local .qmd config in scope — {} is your own config and is never gated.", path);
                println!("Run this from inside the project, or see 'qmd trust list'.");
                return Ok(std::process::ExitCode::SUCCESS);
            }
            let mut store = load();
            if store.remove(&key(file)).is_some() {
                save(&store)?;
                println!("✓ Revoked trust for {}", path);
            } else {
                println!("{} was not trusted.", path);
            }
        }
        Some(_) => {
            eprintln!("Usage: qmd trust [list|revoke]");
            return Ok(std::process::ExitCode::FAILURE);
        }
        None => {
            if !file.is_local() {
                println!("{} is your own config — it is never gated. Nothing to trust.", path);
                return Ok(std::process::ExitCode::SUCCESS);
            }
            let gate = Gate::read(file)?;
            if gate.gated.is_empty() {
                println!(
                    "{} defines no update commands, out-of-project collection paths, or custom models. Nothing to trust.",
                    path
                );
                return Ok(std::process::ExitCode::SUCCESS);
            }
            gate.gated.print(&mut std::io::stdout())?;
            gate.approve()?;
            println!("✓ Trusted {}", path);
            println!(
                "Editing a hook, out-of-project path, or custom model will ask again. Revoke with 'qmd trust revoke'."
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_project_once_links_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::os::unix::fs::symlink(outside.join("deep"), root.join("link")).unwrap();
        let at = qmd_core::collection::PathBase { base: root.to_string_lossy().into(), home: None };
        let resolved = |raw: &str| qmd_core::collection::resolve_path(raw, &at);
        assert!(inside(&root, &resolved("docs")));
        assert!(inside(&root, &resolved("./docs/../notes")), "a folder not made yet");
        assert!(inside(&root, &resolved("link/..")), "`..` by name: the project itself, which is what is opened");
        assert!(!inside(&root, &resolved("link")), "a link to a folder outside");
        assert!(!inside(&root, &resolved("link/sub/new")), "under a link, not made yet");
        assert!(!inside(&root, &resolved("../outside")));
        assert!(!inside(&root, "/etc"));
        let sibling = tmp.path().join("proj-two");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(!inside(&root, &sibling.to_string_lossy()), "a shared name prefix is not inside");
    }

    #[test]
    fn the_digest_ignores_order_and_follows_every_change() {
        let a = Gated { hooks: vec![("b".into(), "x".into()), ("a".into(), "y".into())], ..Default::default() };
        let b = Gated { hooks: vec![("a".into(), "y".into()), ("b".into(), "x".into())], ..Default::default() };
        assert_eq!(a.digest(), b.digest());
        let c = Gated { hooks: vec![("a".into(), "y".into()), ("b".into(), "x2".into())], ..Default::default() };
        assert_ne!(a.digest(), c.digest());
        // qmd's canonical JSON, byte for byte.
        let empty = Gated::default();
        assert_eq!(empty.digest(), to_hex(&Sha256::digest(r#"{"hooks":[],"paths":[],"models":[]}"#)));
    }
}
