//! Browser bindings for the qmd engine (wasm-bindgen, OPFS, WebGPU) arrive
//! with the browser issue. Until then this crate proves that the engine
//! builds and runs for `wasm32-unknown-unknown` through its storage traits.

use std::rc::Rc;

use qmd_core::{Engine, MemorySource, RamDirectory, SearchOptions};

/// Indexes `(path, text)` pairs in memory and returns the paths matching
/// `query`, best first: the whole engine, with no filesystem.
pub fn search_in_memory(files: &[(&str, &str)], query: &str) -> Result<Vec<String>, qmd_core::Error> {
    let mut source = MemorySource::new();
    for (path, text) in files {
        source.insert("/mem", path, *text, 0);
    }
    let engine = Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source));
    engine.collection_add("/mem", Some("mem"), None)?;
    engine.update(&[], 0, &mut |_, _, _| {})?;
    let hits = engine.search(query, &SearchOptions::default())?;
    Ok(hits.into_iter().map(|h| h.path).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn searches_without_a_filesystem() {
        let files = [("a.md", "# Raft\n\nLeader election."), ("b.md", "# Paxos\n\nConsensus.")];
        assert_eq!(super::search_in_memory(&files, "leader").unwrap(), vec!["a.md"]);
    }
}
