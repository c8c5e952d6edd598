//! OpenAI-compatible model endpoints. As a server: `POST /v1/embeddings`
//! (OpenAI's shape) and `POST /v1/rerank` (the Jina / Cohere /
//! llama.cpp-server shape), answered by `qmd mcp --http` with its warm
//! local models, so other tools can share them. As a client: embedding on
//! such a server ([`client`]).

pub mod client;
pub mod serve;
pub mod wire;
