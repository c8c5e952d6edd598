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

    /// Tokens per forward pass: `cpu` on the CPU, `gpu` on a GPU (which
    /// larger passes keep busier).
    pub fn pass_tokens(&self, cpu: usize, gpu: usize) -> usize {
        match self {
            GgufDevice::Cpu => {
                let _ = gpu;
                cpu
            }
            #[cfg(all(feature = "models-wgpu", not(target_family = "wasm")))]
            GgufDevice::Gpu(_) => gpu,
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
