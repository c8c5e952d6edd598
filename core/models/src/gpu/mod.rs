//! GGUF models on a GPU through wgpu (Vulkan, Metal, DX12; WebGPU in the
//! browser): the architectures of [`crate::arch`] over [`Gpu`], a
//! [`crate::arch::Backend`] whose operations are WGSL kernels (`shaders/`)
//! and whose matrices stay in their quantized blocks on the GPU
//! ([`layout`]). Natively a result may be read by waiting on the device;
//! a browser cannot wait, so there it is read with `Gpu::read_async`.

// burn's wgpu, so the device is shared with burn's models.
use burn::tensor::wgpu::wgpu;

mod backend;
mod context;
pub mod layout;
mod pool;

pub use backend::{Gpu, GpuKvCache, GpuTensor};
pub use context::{GpuContext, Profile};
