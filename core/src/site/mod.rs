//! Static-site search: a bundle of immutable files a page searches with no
//! server (`qmd site build` writes it; the browser's keyword engine reads it).
//!
//! - [`format`]: the meta file, term shards and positions shards.
//! - [`builder`]: pages in ([`SitePage`]), named files out ([`SiteFiles`]).
//! - [`search`]: the page's side: which shards a query needs, then BM25 with
//!   the CLI's scoring code.
//! - [`excerpt`]: highlighted excerpts and per-heading sub-results.
//! - [`SiteMetadata`]: the pages' frontmatter, for metadata filters.

pub mod builder;
pub mod excerpt;
pub mod format;
mod page_metadata;
pub mod search;
pub mod semantic;

pub use builder::{Anchor, SiteBuilder, SiteFile, SiteFiles, SiteOptions, SitePage};
pub use excerpt::{Excerpt, excerpts};
pub use page_metadata::SiteMetadata;
pub use search::{SiteHit, SiteIndex, fuse};
pub use semantic::SemanticIndex;

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::document::extract_title;
    use crate::{Engine, MemorySource, RamDirectory, SearchOptions};

    const DOCS: &[(&str, &str)] = &[
        ("cap.md", "# CAP theorem\n\nConsistency, availability and partition tolerance: pick two."),
        ("raft.md", "# Raft\n\nLeader election: a candidate asks for votes. The leader replicates the log."),
        ("paxos.md", "# Paxos\n\nProposers, acceptors, learners. Multi-Paxos elects a distinguished leader."),
        ("gossip.md", "# Gossip protocols\n\nEpidemic dissemination; eventual consistency of membership."),
        ("clocks.md", "# Logical clocks\n\nLamport clocks order events; vector clocks detect concurrency."),
        ("notes/perf.md", "# Performance notes\n\nPerformance of leader-based replication under partitions."),
    ];

    fn site(shard_bytes: usize) -> (SiteIndex, Vec<SiteFile>) {
        let mut builder = SiteBuilder::new("notes");
        for (path, text) in DOCS {
            let page = SitePage {
                url: format!("/{path}"),
                path: path.to_string(),
                title: extract_title(text, path),
                text: text.to_string(),
                filters: vec![("dir".into(), if path.contains('/') { "notes" } else { "top" }.into())],
                ..SitePage::default()
            };
            builder.add(page);
        }
        let files = builder.finish(&SiteOptions { shard_bytes, semantic: None }).unwrap();
        let meta = files.files.iter().find(|f| f.name == files.meta).unwrap();
        (SiteIndex::open(&meta.bytes).unwrap(), files.files)
    }

    fn load(index: &mut SiteIndex, files: &[SiteFile], query: &str) -> usize {
        let needs = index.needs(query).unwrap();
        for name in &needs {
            let file = files.iter().find(|f| &f.name == name).unwrap();
            index.add_file(name, file.bytes.clone()).unwrap();
        }
        needs.len()
    }

    #[test]
    fn site_search_ranks_as_the_cli_index_does() {
        let mut source = MemorySource::new();
        for (path, text) in DOCS {
            source.insert("/notes", path, *text, 0);
        }
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source));
        engine.collection_add("/notes", Some("notes"), None).unwrap();
        engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
        // Tiny shards, so queries cross shard boundaries.
        let (mut index, files) = site(40);
        for query in [
            "leader",
            "leader election",
            "\"leader election\"",
            "consisten",
            "perf",
            "leader -raft",
            "leader-based replication",
            "clocks vector",
            "nothing-matches-this",
        ] {
            load(&mut index, &files, query);
            let site: Vec<(String, f64)> = index
                .search(query, 10, &[], None)
                .unwrap()
                .into_iter()
                .map(|h| (DOCS[h.doc as usize].0.to_string(), h.score))
                .collect();
            let cli: Vec<(String, f64)> = engine
                .search(query, &SearchOptions { limit: 10, ..SearchOptions::default() })
                .unwrap()
                .into_iter()
                .map(|h| (h.path, h.score))
                .collect();
            assert_eq!(site.len(), cli.len(), "{query}: {site:?} vs {cli:?}");
            for (s, c) in site.iter().zip(&cli) {
                assert_eq!(s.0, c.0, "{query}");
                assert!((s.1 - c.1).abs() < 1e-6, "{query}: {} vs {}", s.1, c.1);
            }
        }
    }

    #[test]
    fn a_query_fetches_only_its_shards_and_nothing_twice() {
        let (mut index, files) = site(40);
        let shards = files.iter().filter(|f| f.name.starts_with("t/")).count();
        assert!(shards > 4, "{shards} shards");
        assert_eq!(load(&mut index, &files, "gossip"), 1);
        assert_eq!(load(&mut index, &files, "gossip"), 0, "loaded shards are kept");
        assert_eq!(load(&mut index, &files, "\"vector clocks\""), 4, "a phrase adds positions");
        let err = index.search("zebra", 5, &[], None).map(|_| ()).unwrap_err();
        assert!(err.message.contains("was not loaded"), "{}", err.message);
    }

    /// A query is held to the CLI's length before it names a shard to
    /// fetch; within it, a shard many terms share is named once.
    #[test]
    fn long_queries_are_refused_and_shared_shards_named_once() {
        let (mut index, files) = site(40);
        let long = "gossip ".repeat(2000);
        for err in
            [index.needs(&long).map(|_| ()).unwrap_err(), index.search(&long, 5, &[], None).map(|_| ()).unwrap_err()]
        {
            assert!(err.message.contains("too long") && err.message.contains("10000"), "{}", err.message);
        }
        let prefixes = "c* \"vector clocks\" ".repeat(500);
        let needs = index.needs(&prefixes).unwrap();
        let mut unique = needs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(needs.len(), unique.len(), "{needs:?}");
        assert_eq!(load(&mut index, &files, &prefixes), needs.len());
        assert!(!index.search(&prefixes, 5, &[], None).unwrap().is_empty());
    }

    #[test]
    fn metadata_filters_keep_what_the_cli_keeps() {
        let note = |status: &str, priority: u32| {
            format!(
                "---\nqmd:\n  metadata:\n    status: {status}\n    priority: {priority}\n---\n# Leader {status}\n\nLeader election.\n"
            )
        };
        let docs = [
            ("a.md", note("published", 3)),
            ("b.md", note("draft", 9)),
            ("c.md", note("published", 8)),
            ("plain.md", "# Plain\n\nLeader election, no frontmatter.\n".to_string()),
            ("bad.md", "---\nqmd:\n  metadata:\n    x: null\n---\n# Bad\n\nLeader election.\n".to_string()),
        ];
        let mut source = MemorySource::new();
        let mut builder = SiteBuilder::new("notes");
        for (path, text) in &docs {
            source.insert("/notes", path, text.as_str(), 0);
            let metadata = crate::metadata::extract(path, text);
            let page = SitePage {
                path: path.to_string(),
                title: extract_title(text, path),
                text: text.clone(),
                metadata,
                ..SitePage::default()
            };
            builder.add(page);
        }
        let engine =
            Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(source));
        engine.collection_add("/notes", Some("notes"), None).unwrap();
        engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
        let files = builder.finish(&SiteOptions::default()).unwrap();
        let meta = files.files.iter().find(|f| f.name == files.meta).unwrap();
        let mut index = SiteIndex::open(&meta.bytes).unwrap();
        load(&mut index, &files.files, "leader");
        let name = index.metadata_file().unwrap();
        let bytes = &files.files.iter().find(|f| f.name == name).unwrap().bytes;
        let mut forged = bytes.clone();
        forged.push(b' ');
        let err = SiteMetadata::open(&name, &forged, index.docs()).map(|_| ()).unwrap_err();
        assert!(err.message.contains("does not match its name"), "{}", err.message);
        let metadata = SiteMetadata::open(&name, bytes, index.docs()).unwrap();
        for tree in [
            r#"{"key":"status","operator":"eq","value":"published"}"#,
            r#"{"and":[{"key":"priority","operator":"gt","value":5},{"not":{"key":"status","operator":"eq","value":"draft"}}]}"#,
            r#"{"key":"status","operator":"exists","value":false}"#,
            r#"{"or":[{"key":"priority","operator":"in","value":[3,9]},{"key":"status","operator":"exists","value":false}]}"#,
        ] {
            let filter = crate::metadata::Filter::parse_json(tree).unwrap();
            let passing = metadata.passing(&filter);
            let mut site: Vec<&str> = index
                .search("leader", 10, &[], Some(&passing))
                .unwrap()
                .iter()
                .map(|h| docs[h.doc as usize].0)
                .collect();
            let options = SearchOptions { limit: 10, filter: Some(filter), ..SearchOptions::default() };
            let cli = engine.search("leader", &options).unwrap();
            let mut cli: Vec<&str> = cli.iter().map(|h| h.path.as_str()).collect();
            site.sort();
            cli.sort();
            assert!(!site.is_empty(), "{tree}");
            assert_eq!(site, cli, "{tree}");
        }
        // A bundle without a metadata file: every page is tested as having no keys.
        let absent =
            crate::metadata::Filter::parse_json(r#"{"key":"status","operator":"exists","value":false}"#).unwrap();
        assert_eq!(SiteMetadata::without_file(3).passing(&absent), [0, 1, 2]);
    }

    #[test]
    fn filters_and_foreign_files() {
        let (mut index, files) = site(1 << 20);
        load(&mut index, &files, "leader");
        assert_eq!(index.search("leader", 10, &[], None).unwrap().len(), 3);
        let only = index.search("leader", 10, &[("dir".into(), "notes".into())], None).unwrap();
        assert_eq!(only.iter().map(|h| h.doc).collect::<Vec<_>>(), [5]);
        assert!(index.search("leader", 10, &[("dir".into(), "none".into())], None).unwrap().is_empty());
        // Counts of the whole site, and of a query's results (facets).
        let counts = |among: Option<&[u32]>| index.filters(among);
        let dir = |n_top: usize, n_notes: usize| {
            vec![("dir".to_string(), vec![("notes".into(), n_notes), ("top".into(), n_top)])]
        };
        assert_eq!(counts(None), dir(5, 1));
        let hits: Vec<u32> = index.search("leader", 10, &[], None).unwrap().iter().map(|h| h.doc).collect();
        assert_eq!(counts(Some(&hits)), dir(2, 1));
        assert_eq!(counts(Some(&[5, 5, 99])), dir(0, 1), "a page listed twice counts once, an unknown one not at all");
        assert_eq!(counts(Some(&[])), dir(0, 0));
        assert!(index.add_file("t/0000000000000000.bin", vec![]).is_err());
        let shard = files.iter().find(|f| f.name.starts_with("t/")).unwrap();
        let mut damaged = shard.bytes.clone();
        damaged.push(0);
        let err = index.add_file(&shard.name, damaged).unwrap_err();
        assert!(err.message.contains("does not match"), "{}", err.message);
    }
}
