//! The calling thread's kernel settings: whether its products run as an
//! embedding model's (the page's relaxed-SIMD modules take 7-bit
//! activations and fused multiply-adds there). Thread-locals, which
//! the thread pool (`parallel.rs`) carries onto its threads with each task.

/// Whether this thread's attention products of heads `head_dim` wide
/// take relaxed SIMD's fused multiply-add (`wasm_relaxed_f32`): in the
/// relaxed-SIMD modules' embedding passes, for widths of a multiple of 8.
pub fn fused_attention(head_dim: usize) -> bool {
    fused_element_wise() && head_dim.is_multiple_of(8)
}

/// Whether this thread's softmax and GELU take relaxed SIMD's fused
/// multiply-add (`wasm_relaxed_elementwise`): in the relaxed-SIMD modules'
/// embedding passes.
pub fn fused_element_wise() -> bool {
    Settings::current().embedding()
}

/// Whether this build has the relaxed-SIMD kernels, the one place that
/// heeds [`for_embedding`].
const SEVEN_BIT_KERNELS: bool = cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"));

thread_local! {
    static EMBEDDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The calling thread's kernel settings (thread-locals), which
/// `kernels::parallel` carries onto the pool's threads with each task.
#[derive(Clone, Copy)]
pub struct Settings {
    /// Inside [`for_embedding`], in a build that heeds it.
    embedding: bool,
}

impl Settings {
    /// This thread's settings.
    pub fn current() -> Settings {
        Settings { embedding: SEVEN_BIT_KERNELS && EMBEDDING.get() }
    }

    /// Inside [`for_embedding`], in a build that heeds it.
    pub fn embedding(self) -> bool {
        self.embedding
    }

    /// Runs `f` under these settings, and puts this thread's back after it
    /// (on a panic too).
    pub fn apply<T>(self, f: impl FnOnce() -> T) -> T {
        /// Puts the previous setting back, on a panic too.
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                EMBEDDING.set(self.0);
            }
        }
        let _restore = Restore(EMBEDDING.replace(self.embedding));
        f()
    }
}

/// Runs `f`'s products as an embedding model's. In the page's relaxed-SIMD
/// modules its Q8_0 products quantize their activations to 7 bits: one
/// 8-bit dot a byte pair rather than two, 1.2× the texts a second for
/// MiniLM, whose vectors then stay within cosine 0.998 of the 8-bit
/// ones (README, *The relaxed module*). Elsewhere, and for rerankers and
/// generation everywhere (a yes/no logit moved by 0.03), nothing changes.
pub fn for_embedding<T>(f: impl FnOnce() -> T) -> T {
    Settings { embedding: SEVEN_BIT_KERNELS }.apply(f)
}
