//! `qmd-bench-texts [COUNT]`: the embedding benchmarks' texts as a JSON
//! array — the first COUNT (default 400) English tldr pages, each cut after
//! its 254th word piece of the test model (`qmd_tests::bench::tldr_embedding_texts`),
//! for runtimes outside this process (the browser bench).

use qmd_tests::bench::tldr_embedding_texts;
use qmd_tests::models::{NativeEmbedder, test_model_dir};

fn main() {
    let count = std::env::args().nth(1).map_or(400, |c| c.parse().expect("COUNT is a number"));
    let embedder = NativeEmbedder::load(&test_model_dir());
    let texts = tldr_embedding_texts(embedder.encoder.tokenizer(), count, 254);
    println!("{}", serde_json::to_string(&texts).expect("JSON"));
}
