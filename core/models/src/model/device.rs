//! Where models run: burn's CPU backend (flex), or a GPU through burn's
//! wgpu backend (Vulkan, Metal, DX12 natively; WebGPU in the browser).

use burn::tensor::Device;

use crate::error::{Error, Result};

/// What the user asked for (`QMD_DEVICE`, `--no-gpu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// A hardware GPU when there is one, else the CPU backend. Software
    /// adapters (Mesa's llvmpipe, SwiftShader) are passed over: they are
    /// slower than the CPU backend on the same cores.
    Auto,
    Cpu,
    /// Any wgpu adapter, software ones included; an error if none.
    Gpu,
}

impl DeviceChoice {
    pub fn parse(value: &str) -> Result<DeviceChoice> {
        match value.trim().to_lowercase().as_str() {
            "" | "auto" => Ok(DeviceChoice::Auto),
            "cpu" => Ok(DeviceChoice::Cpu),
            "gpu" | "wgpu" => Ok(DeviceChoice::Gpu),
            other => Err(Error::invalid(format!("unknown device {other:?}: expected auto, cpu or gpu"))),
        }
    }
}

/// A device models can run on, and how to name it to the user.
#[derive(Clone)]
pub struct ModelDevice {
    pub device: Device,
    /// e.g. "CPU (burn flex)" or "GPU: NVIDIA H200 (Vulkan, discrete)".
    pub description: String,
    /// The same GPU for GGUF models' own kernels ([`crate::gpu`]).
    #[cfg(feature = "gpu")]
    pub gpu: Option<std::sync::Arc<crate::gpu::GpuContext>>,
}

impl std::fmt::Debug for ModelDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.description)
    }
}

/// How [`ModelDevice::cpu`] is named, before any note on the choice.
const BURN_CPU: &str = "CPU (burn flex)";

impl ModelDevice {
    /// How to name the device when the engine's kernels run a model on
    /// it: its GPU, or the CPU at the kernels' instruction set, with what
    /// the choice noted (a software adapter passed over).
    pub fn kernels_description(&self) -> String {
        #[cfg(feature = "gpu")]
        if self.gpu.is_some() {
            return self.description.clone();
        }
        let notes = self.description.strip_prefix(BURN_CPU).unwrap_or("");
        // The page's threaded module says how many Workers its pool has.
        let workers = crate::kernels::parallel::workers();
        let threads =
            if cfg!(target_family = "wasm") && workers > 1 { format!(", {workers} threads") } else { String::new() };
        format!("CPU: {}{threads}{notes}", crate::kernels::instruction_set())
    }

    /// burn's CPU backend.
    pub fn cpu() -> ModelDevice {
        ModelDevice {
            device: Device::flex(),
            description: BURN_CPU.into(),
            #[cfg(feature = "gpu")]
            gpu: None,
        }
    }

    /// The device for `choice`, acquiring a wgpu adapter where one is
    /// asked for. Only `Gpu` fails (when there is no adapter at all).
    #[cfg(all(feature = "gpu", not(target_family = "wasm")))]
    pub fn select(choice: DeviceChoice) -> Result<ModelDevice> {
        use burn::tensor::DeviceKind;
        match choice {
            DeviceChoice::Cpu => Ok(ModelDevice::cpu()),
            DeviceChoice::Auto => {
                let hardware = [DeviceKind::DiscreteGpu(0), DeviceKind::IntegratedGpu(0), DeviceKind::VirtualGpu(0)];
                Ok(hardware.into_iter().find_map(|kind| wgpu::acquire(kind).ok()).unwrap_or_else(|| {
                    let mut cpu = ModelDevice::cpu();
                    cpu.description.push_str(", no GPU adapter found");
                    cpu
                }))
            }
            DeviceChoice::Gpu => wgpu::acquire(DeviceKind::DefaultDevice)
                .map_err(|e| Error::not_found(format!("no GPU adapter for the models: {e}"))),
        }
    }

    /// Without the wgpu backend built in, every choice but `Gpu` is the CPU.
    #[cfg(not(all(feature = "gpu", not(target_family = "wasm"))))]
    pub fn select(choice: DeviceChoice) -> Result<ModelDevice> {
        match choice {
            DeviceChoice::Gpu => Err(Error::not_found("no GPU adapter for the models: built without the wgpu backend")),
            _ => Ok(ModelDevice::cpu()),
        }
    }

    /// The browser's device: WebGPU when the browser offers an adapter
    /// (software ones included: the page cannot tell, and the CPU backend
    /// is single-threaded there), else the CPU backend with the reason.
    #[cfg(all(feature = "gpu", target_family = "wasm"))]
    pub async fn select_async(choice: DeviceChoice) -> Result<ModelDevice> {
        if choice == DeviceChoice::Cpu {
            return Ok(ModelDevice::cpu());
        }
        match Device::wgpu_options().init_with_setup_async().await {
            Ok((device, setup)) => {
                let gpu = crate::gpu::GpuContext::new(setup.device.clone(), setup.queue.clone());
                Ok(ModelDevice { device, description: "GPU: WebGPU".into(), gpu: Some(std::sync::Arc::new(gpu)) })
            }
            Err(e) if choice == DeviceChoice::Auto => {
                let mut cpu = ModelDevice::cpu();
                cpu.description.push_str(&format!(", no WebGPU adapter ({e})"));
                Ok(cpu)
            }
            Err(e) => Err(Error::not_found(format!("no WebGPU adapter for the models: {e}"))),
        }
    }

    /// [`select`](Self::select), for callers that must not block.
    #[cfg(not(all(feature = "gpu", target_family = "wasm")))]
    pub async fn select_async(choice: DeviceChoice) -> Result<ModelDevice> {
        Self::select(choice)
    }
}

#[cfg(all(feature = "gpu", not(target_family = "wasm")))]
mod wgpu {
    use burn::tensor::wgpu::wgpu::DeviceType;
    use burn::tensor::{Device, DeviceKind};

    use super::ModelDevice;
    use crate::gpu::GpuContext;

    /// Initialises burn's wgpu runtime on an adapter of `kind`.
    pub fn acquire(kind: DeviceKind) -> Result<ModelDevice, String> {
        let (device, setup) = Device::wgpu_options().device_kind(kind).init_with_setup().map_err(|e| e.to_string())?;
        let info = setup.adapter.get_info();
        let kind = match info.device_type {
            DeviceType::DiscreteGpu => "discrete",
            DeviceType::IntegratedGpu => "integrated",
            DeviceType::VirtualGpu => "virtual",
            DeviceType::Cpu => "software",
            DeviceType::Other => "other",
        };
        let description = format!("GPU: {} ({:?}, {kind})", info.name, info.backend);
        let gpu = GpuContext::new(setup.device.clone(), setup.queue.clone());
        Ok(ModelDevice { device, description, gpu: Some(std::sync::Arc::new(gpu)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_unknown_ones_are_named() {
        assert_eq!(DeviceChoice::parse("").unwrap(), DeviceChoice::Auto);
        assert_eq!(DeviceChoice::parse(" CPU ").unwrap(), DeviceChoice::Cpu);
        assert_eq!(DeviceChoice::parse("wgpu").unwrap(), DeviceChoice::Gpu);
        let err = DeviceChoice::parse("tpu").unwrap_err();
        assert!(err.message.contains("\"tpu\"") && err.message.contains("auto, cpu or gpu"), "{}", err.message);
    }
}
