//! The encoder's vectors of a site's pages, cached per model under
//! `~/.cache/qmd/site/`: embedding every page with the full encoder is the
//! slow part of a semantic build (minutes for thousands of pages on two
//! cores), so a rebuild embeds only the pages whose text changed. Entries
//! are keyed by a hash of the page's text; a cache file that does not read
//! back whole is ignored.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::models::{ModelSource, Models};

const MAGIC: &[u8] = b"QMDPVEC1";

/// Pages kept in the cache: this build's and, after them, earlier builds'
/// up to this many (30,000 MiniLM vectors are 46 MB).
const MAX_ENTRIES: usize = 30_000;

/// New vectors between saves of the cache during a build.
const SAVE_EVERY: usize = 1024;

/// Pages embedded per call of the encoder (progress is shown between).
const BATCH: usize = 32;

type Key = [u8; 16];

/// The encoder's unit vector of each text, from the cache where it has it.
pub fn embed(source: &ModelSource, models: &Models, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
    let file = super::vocabulary::model_key(source)
        .map(|key| crate::paths::cache_dir().join("site").join(format!("pages-{key}.bin")));
    let cached = file.as_deref().and_then(read).unwrap_or_default();
    let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
    let missing: Vec<usize> = (0..texts.len()).filter(|&i| !cached.entries.contains_key(&keys[i])).collect();
    let mut fresh: HashMap<Key, Vec<f32>> = HashMap::new();
    if !missing.is_empty() {
        let started = Instant::now();
        let mut saved = 0;
        for (done, batch) in missing.chunks(BATCH).enumerate() {
            eprint!("\r  {}/{} pages embedded", done * BATCH, missing.len());
            let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            for (&i, embedding) in batch.iter().zip(models.embed(&batch_texts)?) {
                fresh.insert(keys[i], embedding.vector);
            }
            // Saved as it goes: a build stopped part-way keeps its work.
            if let Some(file) = &file
                && fresh.len() - saved >= SAVE_EVERY
            {
                let _ = write(file, fresh.iter(), &cached);
                saved = fresh.len();
            }
        }
        eprintln!("\r  {0}/{0} pages embedded in {1:.1}s", missing.len(), started.elapsed().as_secs_f64());
    }
    if missing.len() < texts.len() {
        eprintln!("  {} pages' vectors from the cache", texts.len() - missing.len());
    }
    let vectors: Vec<Vec<f32>> =
        keys.iter().map(|k| fresh.get(k).or_else(|| cached.entries.get(k)).cloned().unwrap_or_default()).collect();
    // A cache that cannot be written costs the next build time, nothing else.
    if let Some(file) = file
        && !fresh.is_empty()
    {
        let _ = write(&file, keys.iter().zip(&vectors), &cached);
    }
    Ok(vectors)
}

fn key(text: &str) -> Key {
    let hash = Sha256::digest(text.as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&hash[..16]);
    key
}

#[derive(Default)]
struct Cache {
    /// Keys in file order (this build's first, then older).
    order: Vec<Key>,
    entries: HashMap<Key, Vec<f32>>,
}

/// This build's vectors, then the earlier entries that fit.
fn write<'a>(
    path: &Path,
    current: impl Iterator<Item = (&'a Key, &'a Vec<f32>)>,
    old: &'a Cache,
) -> anyhow::Result<()> {
    let mut current = current.peekable();
    let Some(dim) = current.peek().map(|(_, v)| v.len()) else { return Ok(()) };
    let mut seen = std::collections::HashSet::new();
    let earlier = old.order.iter().filter_map(|k| old.entries.get(k).map(|v| (k, v)));
    let kept: Vec<(&Key, &Vec<f32>)> =
        current.chain(earlier).filter(|(k, v)| v.len() == dim && seen.insert(**k)).take(MAX_ENTRIES).collect();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(kept.len() as u32).to_le_bytes());
    for (k, v) in kept {
        out.extend_from_slice(k);
        v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
    }
    crate::files::write_atomically(path, &out)
}

fn read(path: &Path) -> Option<Cache> {
    let bytes = crate::files::regular::read(path, u64::MAX).ok()?;
    let rest = bytes.strip_prefix(MAGIC)?;
    let dim = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let count = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
    let entry = 16 + dim.checked_mul(4)?;
    let body = rest.get(8..)?;
    if dim == 0 || body.len() != count.checked_mul(entry)? {
        return None;
    }
    let mut cache = Cache::default();
    for chunk in body.chunks_exact(entry) {
        let key: Key = chunk[..16].try_into().ok()?;
        let vector: Vec<f32> =
            chunk[16..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        // A damaged entry is embedded again.
        if vector.iter().any(|x| !x.is_finite()) {
            continue;
        }
        cache.order.push(key);
        cache.entries.insert(key, vector);
    }
    Some(cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_this_build_first_and_refuses_damage() {
        let dir = std::env::temp_dir().join(format!("qmd-page-vectors-{}", std::process::id()));
        let path = dir.join("p.bin");
        let old = Cache::default();
        let keys = [key("a"), key("b")];
        write(&path, keys.iter().zip(&[vec![1.0, 0.0], vec![0.0, 1.0]]), &old).unwrap();
        let first = read(&path).unwrap();
        assert_eq!(first.order, keys);
        assert_eq!(first.entries[&key("b")], vec![0.0, 1.0]);
        // A later build of other pages keeps the earlier ones after its own.
        write(&path, [key("c")].iter().zip(&[vec![0.5, 0.5]]), &first).unwrap();
        let second = read(&path).unwrap();
        assert_eq!(second.order, [key("c"), key("a"), key("b")]);
        let mut bytes = std::fs::read(&path).unwrap();
        // An entry that is not numbers is dropped, the others kept.
        let last = bytes.len() - 4;
        bytes[last..].copy_from_slice(&f32::NAN.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let damaged = read(&path).unwrap();
        assert_eq!(damaged.order, [key("c"), key("a")]);
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read(&path).is_none(), "a cut file is ignored");
        // A FIFO where the cache should be is refused, not read (a read
        // would block).
        #[cfg(unix)]
        {
            std::fs::remove_file(&path).unwrap();
            let made = std::process::Command::new("mkfifo").arg(&path).status().map(|s| s.success());
            if made.is_ok_and(|ok| ok) {
                assert!(read(&path).is_none());
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
