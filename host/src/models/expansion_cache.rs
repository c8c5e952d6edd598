//! qmd's expansion cache (its `llm_cache` rows for `expandQuery`), one
//! file per query and model under `~/.cache/qmd/expansions/`: a warm
//! repeat of a query skips the generation model, and never loads it.
//!
//! Files are written whole (temporary file and rename). An entry is read
//! only from a regular file of at most [`MAX_ENTRY_BYTES`] (a FIFO, device
//! or socket in its place is never opened for a blocking read), and only
//! if it is what a fresh expansion of this query by this model could have
//! been ([`bounded`] of qmd's reading of the searches as lines). Anything
//! else (cut short, overwritten, edited, oversized, 10,000 searches, a
//! line past the query limit) is a miss and is replaced, so a damaged
//! cache costs one generation, never a hang, a failed or wrong query, or
//! memory. Expansions depend on the query and the model only, not on the
//! index, so `update` keeps them (qmd clears its whole `llm_cache` there).

use std::path::{Path, PathBuf};

use qmd_core::TypedSearch;
use qmd_core::query::check_length;
use qmd_core::query::document::type_name;
use qmd_core::query::expansion::{cache_key, decode_cached, encode_cached, parse_expansion};
use qmd_core::serve::MAX_SEARCHES;

use crate::files::regular;

/// Entries kept: past this, the oldest go (qmd prunes to its newest 1,000).
const MAX_ENTRIES: usize = 1000;

/// The largest entry read (or written). The largest entry a fresh
/// expansion makes holds the query and [`MAX_SEARCHES`] texts of at most
/// `MAX_QUERY_CHARS` (10,000) characters each: at most 11 × 10,000 × 6
/// bytes (a control character JSON-escaped as `\uXXXX`), 660 KB, plus the
/// model's name.
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// An expansion as a query runs it: at most [`MAX_SEARCHES`] searches
/// (the bound on a query's typed searches), each within the query length
/// limit (`check_length`, as a typed search's text is); longer lines are
/// dropped. Applied to every fresh expansion before it runs or is cached.
pub fn bounded(searches: Vec<TypedSearch>) -> Vec<TypedSearch> {
    searches.into_iter().filter(|s| check_length("Expansion", &s.query).is_ok()).take(MAX_SEARCHES).collect()
}

/// Whether `searches` are what a fresh expansion of `query` yields: read
/// back as the model's lines by qmd's rules (types, a shared term, not the
/// query itself) and [`bounded`], they come out unchanged.
fn as_generated(searches: &[TypedSearch], query: &str) -> bool {
    if searches.is_empty() || searches.len() > MAX_SEARCHES {
        return false;
    }
    let lines: Vec<String> = searches.iter().map(|s| format!("{}: {}", type_name(s.kind), s.query)).collect();
    bounded(parse_expansion(&lines.join("\n"), query, true)) == searches
}

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
        let bytes = regular::read(&self.file(query, model), MAX_ENTRY_BYTES).ok()?;
        decode_cached(&bytes, query, model).filter(|searches| as_generated(searches, query))
    }

    /// Stores an expansion; a cache that cannot be written only costs the
    /// next query a generation.
    pub fn put(&self, query: &str, model: &str, searches: &[TypedSearch]) {
        let entry = encode_cached(query, model, searches);
        if entry.len() as u64 > MAX_ENTRY_BYTES {
            return;
        }
        let written = crate::files::write_atomically(&self.file(query, model), &entry);
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

    /// What a hostile cache holds: each is a miss, read within a bound
    /// (a FIFO is never opened for a blocking read), and a put replaces it.
    #[test]
    fn entries_no_fresh_expansion_could_make_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ExpansionCache::new(dir.path().to_path_buf());
        let (query, model) = ("rotate keys", "m.gguf");
        let file = cache.file(query, model);
        let entry = |searches: Vec<serde_json::Value>| {
            serde_json::json!({"query": query, "model": model, "searches": searches}).to_string()
        };
        let search = |kind: &str, text: String| serde_json::json!({"type": kind, "query": text});
        // A FIFO in the entry's place: no writer ever comes.
        let status = std::process::Command::new("mkfifo").arg(&file).status().expect("run mkfifo");
        assert!(status.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = ExpansionCache::new(dir.path().to_path_buf());
        std::thread::spawn(move || tx.send(reader.get("rotate keys", "m.gguf")));
        let got = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a FIFO entry must not block");
        assert_eq!(got, None);
        cache.put(query, model, &searches("rotate keys safely"));
        assert_eq!(cache.get(query, model), Some(searches("rotate keys safely")), "the put replaced the FIFO");
        // One vec line of 54 MB: never read whole.
        let huge = entry(vec![search("vec", format!("rotate keys {}", "x".repeat(54 << 20)))]);
        std::fs::write(&file, huge).unwrap();
        assert_eq!(cache.get(query, model), None);
        // Small enough to read, but no expansion runs these: 10,000
        // searches, a line past the query limit, a line sharing no term.
        let many: Vec<_> = (0..10_000).map(|i| search("lex", format!("rotate keys {i}"))).collect();
        let long = vec![search("vec", format!("rotate keys {}", "y".repeat(10_001)))];
        let foreign = vec![search("lex", "unrelated words".into())];
        let padded = vec![search("lex", " rotate keys safely".into())];
        for bad in [many, long, foreign, padded] {
            std::fs::write(&file, entry(bad)).unwrap();
            assert_eq!(cache.get(query, model), None);
        }
        // At the bounds it is a hit: 10 searches, a line of 10,000
        // characters, qmd's fallback.
        let ten: Vec<_> = (0..10).map(|i| search("lex", format!("rotate keys {i}"))).collect();
        let longest = format!("rotate keys {}", "z".repeat(10_000 - 12));
        let kept = [ten, vec![search("hyde", longest)], vec![search("hyde", "Information about rotate keys".into())]];
        for good in kept {
            let text = entry(good.clone());
            std::fs::write(&file, &text).unwrap();
            assert_eq!(cache.get(query, model).map(|s| s.len()), Some(good.len()), "{}", &text[..200.min(text.len())]);
        }
    }

    #[test]
    fn fresh_expansions_are_bounded_as_cached_ones_are_read() {
        let lines: String = (0..30).map(|i| format!("lex: rotate keys {i}\n")).collect();
        let long = format!("vec: rotate keys {}\n", "w".repeat(10_000));
        let searches = bounded(parse_expansion(&format!("{long}{lines}"), "rotate keys", true));
        assert_eq!(searches.len(), MAX_SEARCHES);
        assert_eq!(searches[0].query, "rotate keys 0", "the line past the limit is dropped");
        assert!(as_generated(&searches, "rotate keys"));
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
