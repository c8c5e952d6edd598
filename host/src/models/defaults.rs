//! The models each role runs when the config names none: plain names that
//! the trust gate and `doctor` read too, apart from the model code.

pub const DEFAULT_EMBED_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
pub const DEFAULT_RERANK_MODEL: &str = "cross-encoder/ms-marco-MiniLM-L-6-v2";
/// qmd's query-expansion model (a Qwen3-1.7B fine-tune, 1.1 GB).
pub const DEFAULT_GENERATE_MODEL: &str = "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf";
