//! Where a GGUF model's forward passes run: the CPU kernels, or the GPU
//! of the process's [`ModelDevice`] through [`crate::gpu`].

use super::ModelDevice;
use super::passes::PassTokens;
use crate::arch::{Cpu, Decoder, EmbeddingModel};
use crate::error::Result;

/// The token id sequences of one forward pass.
pub type Pass = Vec<Vec<u32>>;

pub enum KernelDevice {
    Cpu,
    #[cfg(feature = "gpu")]
    Gpu(crate::gpu::Gpu),
}

impl KernelDevice {
    /// The device's GPU when it has one, else the CPU.
    pub fn on(device: &ModelDevice) -> KernelDevice {
        #[cfg(feature = "gpu")]
        if let Some(context) = &device.gpu {
            return KernelDevice::Gpu(crate::gpu::Gpu::new(context.clone()));
        }
        let _ = device;
        KernelDevice::Cpu
    }

    /// `sequences` in forward passes, in order: a pass ends at the first
    /// sequence that brings it to the device's tokens of `budget`.
    pub fn passes(&self, sequences: Vec<Vec<u32>>, budget: PassTokens) -> Vec<Pass> {
        let limit = match self {
            KernelDevice::Cpu => budget.cpu,
            #[cfg(feature = "gpu")]
            KernelDevice::Gpu(_) => budget.gpu,
        };
        let mut passes = Vec::new();
        let mut pass = Vec::new();
        let mut tokens = 0;
        for sequence in sequences {
            tokens += sequence.len();
            pass.push(sequence);
            if tokens >= limit {
                passes.push(std::mem::take(&mut pass));
                tokens = 0;
            }
        }
        if !pass.is_empty() {
            passes.push(pass);
        }
        passes
    }

    /// One unit vector per sequence, waiting for a GPU without blocking (a
    /// browser cannot block; [`crate::arch::backend::now`] runs it
    /// natively).
    pub async fn embed_async(&self, model: &EmbeddingModel, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        match self {
            // An embedding pass may take the page's faster Q8_0 products
            // (7-bit activations in the relaxed-SIMD module).
            KernelDevice::Cpu => crate::kernels::for_embedding(|| model.embed(&Cpu, sequences)),
            #[cfg(feature = "gpu")]
            KernelDevice::Gpu(gpu) => Ok(model.unit_vectors(gpu.read_async(model.pooled(gpu, sequences)?).await?)),
        }
    }

    /// One unit vector per sequence of every pass, in order. On the CPU
    /// the passes run side by side, one a core (nested products share the
    /// cores as they free up): within one pass a product's bias, the
    /// residual adds and the pooling run on one core while the others
    /// wait. MiniLM Q8_0 on 2 cores embedded 1.15× faster so natively, and
    /// the page's threaded build 4% faster, level with helper Workers each
    /// running passes of its own.
    pub async fn embed_all_async(&self, model: &EmbeddingModel, passes: &[Pass]) -> Result<Vec<Vec<f32>>> {
        if matches!(self, KernelDevice::Cpu) {
            let vectors =
                crate::kernels::parallel::map(passes, |pass| crate::arch::backend::now(self.embed_async(model, pass)))?;
            return Ok(vectors.into_iter().flatten().collect());
        }
        let mut vectors = Vec::new();
        for pass in passes {
            vectors.extend(self.embed_async(model, pass).await?);
        }
        Ok(vectors)
    }

    /// The final-normed state of each sequence's last token, as
    /// [`embed_async`](Self::embed_async).
    pub async fn last_states_async(&self, model: &Decoder, sequences: &[Vec<u32>]) -> Result<Vec<f32>> {
        match self {
            KernelDevice::Cpu => model.last_states(&Cpu, sequences),
            #[cfg(feature = "gpu")]
            KernelDevice::Gpu(gpu) => gpu.read_async(model.last_states_on(gpu, sequences)?).await,
        }
    }
}
