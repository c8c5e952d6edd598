//! Where a GGUF model's forward passes run: the CPU kernels, or the GPU
//! of the process's [`ModelDevice`] through [`crate::gpu`].

use super::ModelDevice;
use crate::arch::{Cpu, Decoder, Encoder};
use crate::error::Result;

pub enum GgufDevice {
    Cpu,
    #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
    Gpu(crate::gpu::Gpu),
}

impl GgufDevice {
    /// The device's GPU when it has one, else the CPU.
    pub fn on(device: &ModelDevice) -> GgufDevice {
        #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
        if let Some(context) = &device.gpu {
            return GgufDevice::Gpu(crate::gpu::Gpu::new(context.clone()));
        }
        let _ = device;
        GgufDevice::Cpu
    }

    /// Tokens per forward pass: on the CPU, activations for 8,192 tokens
    /// of a 768-wide model with a 3,072-wide FFN are about 150 MB; a GPU
    /// is kept busier by larger passes.
    pub fn pass_tokens(&self) -> usize {
        match self {
            GgufDevice::Cpu => 8192,
            #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
            GgufDevice::Gpu(_) => 32_768,
        }
    }

    pub fn embed(&self, model: &Encoder, sequences: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        match self {
            GgufDevice::Cpu => model.embed(&Cpu, sequences),
            #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
            GgufDevice::Gpu(gpu) => model.embed(gpu, sequences),
        }
    }

    pub fn last_states(&self, model: &Decoder, sequences: &[Vec<u32>]) -> Result<Vec<f32>> {
        match self {
            GgufDevice::Cpu => model.last_states(&Cpu, sequences),
            #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
            GgufDevice::Gpu(gpu) => model.last_states(gpu, sequences),
        }
    }
}
