//! The command line end to end, one test binary (each binary links the
//! whole engine: one link instead of twenty, and the two cores busy across
//! every file's tests rather than idle at the end of each). One module per
//! surface; `cargo test -p qmd-tests --test end_to_end <module>::` runs one.

mod common;

// Node runs qmd's own chunker: kept apart from the engine binary's GPU
// tests, whose software Vulkan device is slow to share the two cores.
mod chunk_parity;
mod cli;
mod containment;
mod crash;
mod embed_cli;
mod encodings;
mod expansion_cli;
mod hardening;
mod links;
mod metadata_cli;
mod openai_client;
mod output_edges;
mod owned_outputs;
mod project;
mod servers;
mod site_cli;
mod site_inputs;
mod skill;
mod untrusted_inputs;
mod untrusted_models;
mod walk;
mod watch;
