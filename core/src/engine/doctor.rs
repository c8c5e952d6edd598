//! What `qmd doctor` asks the engine: is every byte of the index what its
//! checksums say ([`Engine::verify`]), and do stored vectors still come out
//! of the current model and pipeline ([`Engine::vector_sample`]).

use std::collections::HashMap;

use super::Engine;
use super::embed::embed_fingerprint;
use crate::error::Result;
use crate::inference::Inference;

/// A verified index: what was read.
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct IndexCheck {
    pub generation: u64,
    pub segments: u32,
    pub documents: u32,
    pub vector_rows: u64,
}

/// One re-embedded content: its document and the cosine distance between
/// the stored vector and the new one.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct SampleCheck {
    pub file: String,
    pub distance: f32,
}

#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct VectorSample {
    /// The current model's fingerprint, and what the vectors were made with.
    pub fingerprint: String,
    pub stored_fingerprint: Option<String>,
    pub stored_model: Option<String>,
    /// Contents the sample could draw from.
    pub eligible: u32,
    pub checked: Vec<SampleCheck>,
}

impl Engine {
    /// Checks every byte search and get read: each segment file whole
    /// (every section against its checksum, the deletions), then decodes
    /// every term dictionary and live document record and body, and every
    /// vector row against its checksum.
    pub fn verify(&self) -> Result<IndexCheck> {
        let index = self.index()?;
        let mut documents = 0;
        for segment in &index.segments {
            segment.verify_file()?;
            segment.terms_with_prefix("")?;
            for doc in 0..segment.meta.docs {
                if segment.is_deleted(doc)? {
                    continue;
                }
                segment.body(&segment.doc(doc)?)?;
                documents += 1;
            }
        }
        let vector_rows = match index.vectors()? {
            Some(set) => {
                set.verify()?;
                set.manifest.rows()
            }
            None => 0,
        };
        Ok(IndexCheck {
            generation: index.manifest.generation,
            segments: index.segments.len() as u32,
            documents,
            vector_rows,
        })
    }

    /// Re-embeds up to `count` stored contents and compares. Only contents
    /// embedded as one chunk at position 0 are drawn: their chunk is the
    /// whole body, so the same model and prompt must give the same vector.
    /// The draw is spread evenly over them (the same on every run).
    pub fn vector_sample(&self, inference: &dyn Inference, count: usize) -> Result<VectorSample> {
        let embedder = inference.embedder()?;
        let mut sample = VectorSample { fingerprint: embed_fingerprint(&embedder), ..VectorSample::default() };
        let index = self.index()?;
        let Some(set) = index.vectors()? else { return Ok(sample) };
        sample.stored_fingerprint = Some(set.manifest.fingerprint.clone());
        sample.stored_model = Some(set.manifest.model.clone());
        let by_hash: HashMap<&str, _> = index.catalog()?.iter().map(|e| (e.record.hash.as_str(), e)).collect();
        let eligible: Vec<_> = set
            .segments
            .iter()
            .flat_map(|s| s.contents.iter().map(move |c| (s, c)))
            .filter(|(s, c)| c.rows == 1 && s.positions[c.first as usize] == 0)
            .filter_map(|(s, c)| Some((s, c, *by_hash.get(c.hash.as_str())?)))
            .collect();
        sample.eligible = eligible.len() as u32;
        let picks = count.min(eligible.len());
        for k in 0..picks {
            let (segment, content, entry) = eligible[k * eligible.len() / picks];
            let body = index.body(entry)?;
            let fresh = inference.embed(&[embedder.document_text(Some(&entry.record.title), &body)])?;
            let stored = segment.exact(content)?;
            let (Some(fresh), Some(stored)) = (fresh.first(), stored.first()) else { continue };
            sample.checked.push(SampleCheck {
                file: format!("qmd://{}/{}", entry.record.collection, entry.record.path),
                distance: 1.0 - cosine(&fresh.vector, stored),
            });
        }
        Ok(sample)
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if a.len() != b.len() || norm(a) == 0.0 || norm(b) == 0.0 { 0.0 } else { dot / (norm(a) * norm(b)) }
}

#[cfg(test)]
mod tests {
    use crate::EmbedOptions;
    use crate::engine::embed::tests::{WordHash, engine};

    #[test]
    fn a_verified_index_and_a_sample_that_reproduces_its_vectors() {
        let engine = engine();
        let models = WordHash::new(512);
        let check = engine.verify().unwrap();
        assert!(check.documents > 0 && check.vector_rows == 0, "{check:?}");
        let before = engine.vector_sample(&models, 3).unwrap();
        assert!(before.stored_fingerprint.is_none() && before.checked.is_empty());

        engine.embed_with(&models, &EmbedOptions::default(), &mut |_, _, _| {}).unwrap();
        assert!(engine.verify().unwrap().vector_rows > 0);
        let sample = engine.vector_sample(&models, 3).unwrap();
        assert_eq!(sample.stored_fingerprint.as_deref(), Some(sample.fingerprint.as_str()));
        assert!(!sample.checked.is_empty() && sample.checked.len() <= 3, "{sample:?}");
        assert!(sample.checked.iter().all(|c| c.distance.abs() < 1e-5 && c.file.starts_with("qmd://")), "{sample:?}");
        // Another pipeline (a prompt now prepended) no longer reproduces them.
        let other = WordHash { document_prompt: "passage about something: ".into(), ..WordHash::new(512) };
        let changed = engine.vector_sample(&other, 3).unwrap();
        assert_ne!(changed.fingerprint, sample.fingerprint);
        assert!(changed.checked.iter().any(|c| c.distance > 1e-3), "{changed:?}");
    }
}
