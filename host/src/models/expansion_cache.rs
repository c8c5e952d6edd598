//! qmd's expansion cache (its `llm_cache` rows for `expandQuery`), one
//! file per query and model under `~/.cache/qmd/expansions/`: a warm
//! repeat of a query skips the generation model, and never loads it.
//!
//! Files are written whole (temporary file and rename). A file that does
//! not read back as an entry for exactly this query and model (cut short,
//! overwritten, edited) is a miss and is replaced, so a damaged cache
//! costs one generation, never a failed or wrong query. Expansions depend
//! on the query and the model only, not on the index, so `update` keeps
//! them (qmd clears its whole `llm_cache` there).

use std::path::{Path, PathBuf};

use qmd_core::TypedSearch;
use qmd_core::query::expansion::{cache_key, decode_cached, encode_cached};

/// Entries kept: past this, the oldest go (qmd prunes to its newest 1,000).
const MAX_ENTRIES: usize = 1000;

pub struct ExpansionCache {
    dir: PathBuf,
}

impl ExpansionCache {
    pub fn new(dir: PathBuf) -> ExpansionCache {
        ExpansionCache { dir }
    }

    fn file(&self, query: &str, model: &str) -> PathBuf {
        self.dir.join(format!("{}.json", cache_key(query, model)))
    }

    pub fn get(&self, query: &str, model: &str) -> Option<Vec<TypedSearch>> {
        let bytes = std::fs::read(self.file(query, model)).ok()?;
        decode_cached(&bytes, query, model)
    }

    /// Stores an expansion; a cache that cannot be written only costs the
    /// next query a generation.
    pub fn put(&self, query: &str, model: &str, searches: &[TypedSearch]) {
        let written = crate::files::write_atomically(&self.file(query, model), &encode_cached(query, model, searches));
        if written.is_ok() {
            prune(&self.dir, MAX_ENTRIES);
        }
    }

    pub fn remove(&self, query: &str, model: &str) {
        let _ = std::fs::remove_file(self.file(query, model));
    }
}

/// Removes the oldest entries (by modification time) past `keep`.
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= keep {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmd_core::SearchType;

    fn searches(text: &str) -> Vec<TypedSearch> {
        vec![TypedSearch { kind: SearchType::Vec, query: text.into() }]
    }

    #[test]
    fn entries_round_trip_and_damage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ExpansionCache::new(dir.path().join("expansions"));
        assert_eq!(cache.get("rotate keys", "m"), None, "no folder yet");
        cache.put("rotate keys", "m", &searches("rotate api keys"));
        assert_eq!(cache.get("rotate keys", "m"), Some(searches("rotate api keys")));
        assert_eq!(cache.get("rotate keys", "other"), None);
        // Damage: cut short, then another entry's bytes under this name.
        let file = cache.file("rotate keys", "m");
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
        assert_eq!(cache.get("rotate keys", "m"), None);
        std::fs::write(&file, encode_cached("other query", "m", &searches("other"))).unwrap();
        assert_eq!(cache.get("rotate keys", "m"), None);
        // A folder in the file's place is a miss too, and a put that
        // cannot write is not an error.
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        assert_eq!(cache.get("rotate keys", "m"), None);
        cache.put("rotate keys", "m", &searches("rotate api keys"));
        cache.remove("rotate keys", "m");
    }

    #[test]
    fn the_oldest_entries_go_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("{i}.json")), b"{}").unwrap();
            let time = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i);
            std::fs::File::options()
                .write(true)
                .open(dir.path().join(format!("{i}.json")))
                .unwrap()
                .set_modified(time)
                .unwrap();
        }
        prune(dir.path(), 3);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["2.json", "3.json", "4.json"]);
    }
}
