//! Text generation on the decoder models (qmd's query expansion, a Qwen3
//! fine-tune): what constrains, samples and loops over the decoder.
//! [`grammar`] holds qmd's expansion grammar as an automaton over bytes
//! and the mask it puts on each step's tokens; [`sampler`] draws tokens as
//! qmd configures node-llama-cpp; [`session`] a running sequence over the
//! blocks' key/value caches, and generation under those limits;
//! [`chat`] writes a chat model's prompt as qmd's runtime does, and
//! [`expander`] puts them together as qmd's query expansion.

pub mod chat;
pub mod expander;
pub mod grammar;
pub mod sampler;
pub mod session;

pub use expander::{ExpansionRun, FollowedRun, QueryExpander};
pub use sampler::{Sampler, Sampling};
pub use session::{Generation, Limits, Session};
