/*!
The qmd engine: collections of markdown files, an index of immutable
segments, BM25 keyword search, and qmd's document lookup (`get`,
`multi-get`, docids, `qmd://` paths).

The engine performs no I/O of its own. Index files come through a
[`Directory`], source documents through a [`SourceTree`], and time as
arguments, so the same code runs natively (tests, eval), inside the WASI
component (`--features component`, built for `wasm32-wasip2`) and in the
browser (`wasm32-unknown-unknown`).

```
use std::rc::Rc;
use qmd_core::{Engine, MemorySource, RamDirectory, SearchOptions};

let mut notes = MemorySource::new();
notes.insert("/notes", "cap.md", "# CAP theorem\n\nConsistency, availability, partitions.", 0);
let engine = Engine::new(Rc::new(RamDirectory::new()), Rc::new(RamDirectory::new()), "index.yml", Rc::new(notes));
engine.collection_add("/notes", Some("notes"), None).unwrap();
engine.update(&[], 0, &mut |_, _, _| {}).unwrap();
let hits = engine.search("availability", &SearchOptions::default()).unwrap();
assert_eq!(hits[0].path, "cap.md");
```
*/

pub mod analysis;
mod api;
#[cfg(feature = "models")]
pub mod arch;
pub mod chunk;
pub mod clock;
pub mod collection;
pub mod directory;
pub mod display;
pub mod document;
pub mod encoding;
mod engine;
mod error;
#[cfg(feature = "models")]
pub mod generate;
pub mod gguf;
#[cfg(feature = "models-wgpu")]
pub mod gpu;
pub mod index;
pub mod inference;
#[cfg(feature = "models")]
pub mod kernels;
pub mod lookup;
pub mod metadata;
#[cfg(feature = "models")]
pub mod model;
pub mod model_id;
pub mod query;
pub mod search;
pub mod serve;
pub mod site;
pub mod source;
pub mod vector;
pub mod vpath;
pub mod yaml;

#[cfg(feature = "component")]
mod component;
#[cfg(feature = "edge")]
mod edge;
#[cfg(any(feature = "component", feature = "edge"))]
mod wasi;

pub use api::*;
pub use directory::{Directory, RamDirectory};
pub use engine::{
    EmbedJob, EmbedOptions, EmbedReport, Engine, IndexCheck, Progress, QueryJob, QueryModels, QueryStep, SampleCheck,
    VectorSample, embed_fingerprint,
};
pub use error::{Error, ErrorKind, Result};
pub use source::{MemorySource, ReadFailure, SourceFile, SourceTree, WalkEntry};
