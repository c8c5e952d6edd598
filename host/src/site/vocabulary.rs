//! The embedded vocabulary a semantic tier is distilled from, cached per
//! model under `~/.cache/qmd/site/`: embedding every token takes ~20 s on
//! two cores and depends only on the model's files, so a rebuild of the
//! site reuses it. A cache file that does not read back whole is ignored.

use std::path::{Path, PathBuf};

use anyhow::Result;
use qmd_core::document::to_hex;
use sha2::{Digest, Sha256};

use crate::models::pull::sha256_file;
use crate::models::{ModelSource, Models, REQUIRED_FILES};

const MAGIC: &[u8] = b"QMDVOCC1";

/// Tokens in id order and each token's vector.
pub type Embedded = (Vec<String>, Vec<Vec<f32>>);

/// The vocabulary of the embedding model `source`, embedded by `models`.
pub fn embedded(source: &ModelSource, models: &Models) -> Result<Embedded> {
    let cache = cache_file(source);
    if let Some(hit) = cache.as_deref().and_then(read) {
        eprintln!("  {} tokens embedded (cached)", hit.0.len());
        return Ok(hit);
    }
    let started = std::time::Instant::now();
    let fresh = models
        .embed_vocabulary(&mut |done, total| eprint!("\r  {done}/{total} tokens embedded"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!(" in {:.1}s", started.elapsed().as_secs_f64());
    // A cache that cannot be written costs the next build time, nothing else.
    if let Some(path) = cache {
        let _ = write(&path, &fresh);
    }
    Ok(fresh)
}

/// `site/vocab-<model key>.bin`.
fn cache_file(source: &ModelSource) -> Option<PathBuf> {
    Some(crate::paths::cache_dir().join("site").join(format!("vocab-{}.bin", model_key(source)?)))
}

/// A hash of the model's files (a GGUF model's one file, or a repository's
/// required files): what the site caches are keyed by; none if a file is
/// unreadable.
pub(super) fn model_key(source: &ModelSource) -> Option<String> {
    let files: Vec<PathBuf> = match &source.gguf {
        Some(gguf) => vec![gguf.path.clone()],
        None => REQUIRED_FILES.iter().map(|name| source.dir.join(name)).collect(),
    };
    let mut hash = Sha256::new();
    for file in files {
        hash.update(sha256_file(&file).ok()?);
    }
    Some(to_hex(&hash.finalize()[..16]))
}

fn write(path: &Path, (vocab, vectors): &Embedded) -> Result<()> {
    let dim = vectors.first().map_or(0, Vec::len);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(vocab.len() as u32).to_le_bytes());
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    for token in vocab {
        out.extend_from_slice(&(token.len() as u32).to_le_bytes());
        out.extend_from_slice(token.as_bytes());
    }
    for v in vectors {
        v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
    }
    crate::files::write_atomically(path, &out)
}

fn read(path: &Path) -> Option<Embedded> {
    let bytes = crate::files::regular::read(path, u64::MAX).ok()?;
    let mut at = MAGIC.len();
    if !bytes.starts_with(MAGIC) {
        return None;
    }
    let u32_at = |at: &mut usize| -> Option<usize> {
        let v = u32::from_le_bytes(bytes.get(*at..*at + 4)?.try_into().ok()?);
        *at += 4;
        Some(v as usize)
    };
    let (count, dim) = (u32_at(&mut at)?, u32_at(&mut at)?);
    let mut vocab = Vec::with_capacity(count.min(1 << 20));
    for _ in 0..count {
        let len = u32_at(&mut at)?;
        vocab.push(String::from_utf8(bytes.get(at..at.checked_add(len)?)?.to_vec()).ok()?);
        at += len;
    }
    let floats = bytes.get(at..)?;
    if dim == 0 || floats.len() != count.checked_mul(dim)?.checked_mul(4)? {
        return None;
    }
    let values: Vec<f32> = floats.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Some((vocab, values.chunks(dim).map(<[f32]>::to_vec).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let dir = std::env::temp_dir().join(format!("qmd-vocab-cache-{}", std::process::id()));
        let path = dir.join("v.bin");
        let data: Embedded = (vec!["[PAD]".into(), "walrus".into()], vec![vec![0.0, 0.0], vec![0.5, -1.0]]);
        write(&path, &data).unwrap();
        assert_eq!(read(&path), Some(data));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(read(&path), None, "a cut file is ignored");
        let _ = std::fs::remove_dir_all(dir);
    }
}
