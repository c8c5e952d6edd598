//! GGUF models on a GPU through wgpu (Vulkan, Metal, DX12): the
//! architectures of [`crate::arch`] over [`Gpu`], a [`crate::arch::Backend`]
//! whose operations are WGSL kernels (`shaders/`) and whose matrices stay
//! in their quantized blocks on the GPU ([`layout`]).
//!
//! Natively only so far: reading a result blocks on the device, which a
//! browser's WebGPU cannot do (it would need an asynchronous read).

// burn's wgpu, so the device is shared with burn's models.
use burn::tensor::wgpu::wgpu;

mod backend;
mod context;
pub mod layout;

pub use backend::{Gpu, GpuTensor};
pub use context::{GpuContext, Profile};
