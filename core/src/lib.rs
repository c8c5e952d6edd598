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
pub mod chunk;
pub mod clock;
pub mod collection;
pub mod directory;
pub mod display;
pub mod document;
pub mod encoding;
mod engine;
mod error;
pub mod index;
pub mod inference;
pub mod lookup;
pub mod metadata;
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
// The model code, its own crate (`qmd-models`), under the names the engine's
// users have always called it by.
pub use directory::{Directory, RamDirectory};
pub use engine::{
    EmbedJob, EmbedOptions, EmbedReport, Engine, IndexCheck, Progress, QueryJob, QueryModels, QueryStep, SampleCheck,
    VectorSample, embed_fingerprint,
};
pub use error::{Error, ErrorKind, Result};
#[cfg(feature = "models-wgpu")]
pub use qmd_models::gpu;
#[cfg(feature = "models")]
pub use qmd_models::{arch, generate, gguf, kernels, model};
pub use source::{MemorySource, ReadFailure, SourceFile, SourceTree, WalkEntry};
