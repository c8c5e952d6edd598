//! How many tokens one forward pass holds: the one place every model sizes
//! its passes, by role (burn's encoders, the kernels' embedder, the
//! kernels' reranker) and device. A pass costs memory in proportion to its
//! tokens (activations, and attention scores on a GPU), and too small a
//! pass wastes the matrix products; each figure below says what it was
//! measured against.

/// A pass's tokens on each device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTokens {
    /// The largest pass on the CPU (over all its cores for the kernels).
    pub cpu: usize,
    /// A pass on a GPU, which larger passes keep busier.
    pub gpu: usize,
}

/// burn's encoders (`PassPlan`). On the CPU a pass is padded to its
/// longest text, so a large one spans a wide range of lengths: on tldr
/// pages 8,192-token passes were 44% padding, 1,024-token ones 7%, and
/// 1,024 rows keep the matrix products efficient (browser embedding 1.15×
/// faster). On a GPU: large enough to fill a discrete GPU, small enough
/// that the attention scores (tokens × heads × sequence length floats,
/// 200 MB for MiniLM at 16,384 tokens of 256) fit one buffer on the
/// adapters we know; in the browser WebGPU's default storage-buffer limit
/// (128 MiB) halves it.
pub const BURN: PassTokens = PassTokens { cpu: 1_024, gpu: if cfg!(target_family = "wasm") { 8_192 } else { 16_384 } };

/// The kernels' embedder: on the CPU the passes in flight at once, over
/// all its cores (activations for 8,192 tokens of a 768-wide model with a
/// 3,072-wide FFN are about 150 MB).
pub const KERNEL_EMBED: PassTokens = PassTokens { cpu: 8_192, gpu: 32_768 };

/// The kernels' reranker (a document longer than this is a pass of its
/// own). With Qwen3-Reranker-0.6B's shape, `qmd query` over 40 tldr pages
/// peaked at 820 MB with 4,096-token passes, 694 MB with 2,048 and 630 MB
/// with 1,024 (the file is 471 MB; no model: 26 MB); 2,048 was no slower
/// than 4,096 and 10% faster than 1,024.
pub const KERNEL_RANK: PassTokens = PassTokens { cpu: 2_048, gpu: 8_192 };

/// The smallest pass the CPU is given when spreading a call over its
/// workers: below this, per-operation overhead outweighs the matmuls.
pub const CPU_MIN_PASS_TOKENS: usize = 512;

/// The tokens of a CPU pass when a call of `tokens` is spread over
/// `workers` cores running passes side by side: a share each, at most
/// `largest`, and never under [`CPU_MIN_PASS_TOKENS`] (nor is `largest`).
/// The burn path and the kernels' embedder both cut their calls so.
pub fn cpu_pass_tokens(tokens: usize, workers: usize, largest: usize) -> usize {
    tokens.div_ceil(workers.max(1)).clamp(CPU_MIN_PASS_TOKENS, largest.max(CPU_MIN_PASS_TOKENS))
}
