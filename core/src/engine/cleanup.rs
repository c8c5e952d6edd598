//! `cleanup`: qmd's maintenance in this index's terms. Deleted documents
//! (old versions of changed files, removed files) stay in their segments
//! until a merge rewrites them, and vectors of contents no document has any
//! more stay until a vector merge; cleanup rewrites both away now, each as
//! an ordinary atomic commit.

use std::collections::HashSet;

use super::Engine;
use crate::api::CleanupReport;
use crate::error::Result;
use crate::index::{Index, compact};
use crate::vector::{VectorChange, commit_vectors};

/// Deleted documents and orphaned vector rows of `index`.
fn reclaimable(index: &Index) -> Result<(u32, u64)> {
    let inactive = index.manifest.segments.iter().map(|s| s.deleted).sum();
    let live = index.live_hashes()?;
    let orphaned = match index.vectors()? {
        None => 0,
        Some(set) => set
            .segments
            .iter()
            .flat_map(|s| s.contents.iter())
            .filter(|c| !live.contains(c.hash.as_str()))
            .map(|c| u64::from(c.rows))
            .sum(),
    };
    Ok((inactive, orphaned))
}

impl Engine {
    /// Reclaims (or, with `dry_run`, counts) what `cleanup` removes.
    pub fn cleanup(&self, dry_run: bool) -> Result<CleanupReport> {
        let index = self.index()?;
        let (inactive_documents, orphaned_vectors) = reclaimable(&index)?;
        let mut report = CleanupReport {
            inactive_documents,
            orphaned_vectors,
            segments_before: index.manifest.segments.len() as u32,
            bytes_before: index.size_bytes(),
            ..CleanupReport::default()
        };
        if !dry_run {
            if orphaned_vectors > 0 {
                // Rewrites the vector segments keeping live contents only.
                commit_vectors(&index, VectorChange::Remove(HashSet::new()))?;
            }
            compact(&*self.index()?)?;
        }
        let after = self.index()?;
        report.segments_after = after.manifest.segments.len() as u32;
        report.bytes_after = after.size_bytes();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::Engine;
    use crate::directory::RamDirectory;
    use crate::source::MemorySource;

    #[test]
    fn cleanup_rewrites_deleted_documents_away_and_keeps_every_live_one() {
        let notes = Rc::new(RefCell::new(MemorySource::new()));
        for i in 0..6 {
            notes.borrow_mut().insert("/n", &format!("n{i}.md"), format!("# Note {i}\n\nwalrus number {i}\n"), 1_000);
        }
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", notes.clone());
        engine.collection_add("/n", Some("n"), None).unwrap();
        engine.update(&[], 100_000, &mut |_, _, _| {}).unwrap();
        notes.borrow_mut().insert("/n", "n0.md", "# Note 0\n\nwalrus changed\n", 2_000);
        notes.borrow_mut().remove("/n", "n1.md");
        engine.update(&[], 200_000, &mut |_, _, _| {}).unwrap();

        let generation = engine.index().unwrap().manifest.generation;
        let dry = engine.cleanup(true).unwrap();
        assert_eq!(dry.inactive_documents, 2, "the old n0 and the removed n1");
        assert_eq!(
            (dry.segments_after, engine.index().unwrap().manifest.generation),
            (dry.segments_before, generation)
        );

        let done = engine.cleanup(false).unwrap();
        assert_eq!((done.inactive_documents, done.segments_before, done.segments_after), (2, 2, 1));
        assert!(done.bytes_after < done.bytes_before, "{done:?}");
        assert_eq!(engine.cleanup(true).unwrap().inactive_documents, 0, "nothing left to reclaim");
        let options = crate::SearchOptions { limit: 10, ..Default::default() };
        let hits = engine.search("walrus", &options).unwrap();
        assert_eq!(hits.len(), 5, "every live document is still found");
        assert!(hits.iter().any(|h| h.snippet.contains("changed")));
        let generation = engine.index().unwrap().manifest.generation;
        engine.cleanup(false).unwrap();
        assert_eq!(engine.index().unwrap().manifest.generation, generation, "a clean index is left as it is");
    }
}
