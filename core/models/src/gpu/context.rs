//! One wgpu device and queue (burn's, shared), the compute pipelines of
//! `shaders/`, and the command encoder operations are recorded into.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::pool::{Pool, PooledBuffer, size_class};
use super::wgpu;
use wgpu::util::DeviceExt;

use crate::arch::backend::now;
use crate::error::{Error, Result};

/// The shaders, one pipeline each.
#[derive(Clone, Copy)]
pub enum Shader {
    Matmul,
    Matvec,
    Norm,
    Elementwise,
    Rope,
    Attention,
    Rows,
    Gather,
}

impl Shader {
    const ALL: [Shader; 8] = [
        Shader::Matmul,
        Shader::Matvec,
        Shader::Norm,
        Shader::Elementwise,
        Shader::Rope,
        Shader::Attention,
        Shader::Rows,
        Shader::Gather,
    ];

    /// Its name and WGSL source for a device giving a workgroup
    /// `workgroup_bytes` of shared memory.
    fn source(self, workgroup_bytes: u32) -> (&'static str, Cow<'static, str>) {
        match self {
            // The kernels reading a model's matrices share their decoder.
            Shader::Matmul => {
                let source = concat!(
                    include_str!("shaders/formats.wgsl"),
                    include_str!("shaders/product.wgsl"),
                    include_str!("shaders/matmul.wgsl")
                );
                // Its tiles take 32 KB with 32 values of k a step; WebGPU
                // promises only 16 KB, so half a block a step there.
                let source = if workgroup_bytes < MATMUL_WORKGROUP_BYTES {
                    Cow::Owned(source.replace("const KSTEP: u32 = 32u;", "const KSTEP: u32 = 16u;"))
                } else {
                    Cow::Borrowed(source)
                };
                ("matmul", source)
            }
            Shader::Matvec => {
                let source = concat!(
                    include_str!("shaders/formats.wgsl"),
                    include_str!("shaders/product.wgsl"),
                    include_str!("shaders/matvec.wgsl")
                );
                ("matvec", source.into())
            }
            Shader::Gather => {
                ("gather", concat!(include_str!("shaders/formats.wgsl"), include_str!("shaders/gather.wgsl")).into())
            }
            Shader::Norm => ("norm", include_str!("shaders/norm.wgsl").into()),
            Shader::Elementwise => (
                "elementwise",
                concat!(include_str!("shaders/f16.wgsl"), include_str!("shaders/elementwise.wgsl")).into(),
            ),
            Shader::Rope => ("rope", include_str!("shaders/rope.wgsl").into()),
            Shader::Attention => {
                ("attention", concat!(include_str!("shaders/f16.wgsl"), include_str!("shaders/attention.wgsl")).into())
            }
            Shader::Rows => ("rows", include_str!("shaders/rows.wgsl").into()),
        }
    }

    /// What a profile adds a dispatch's time to: the kernel, and for a
    /// matrix product its weight's shape (`out×in`).
    fn profile_key(self, params: &[u32]) -> String {
        match self {
            Shader::Matmul => format!("matmul {}x{}", params[1], params[2]),
            Shader::Matvec => format!("matvec {}x{}", params[1], params[2]),
            other => other.source(MATMUL_WORKGROUP_BYTES).0.to_string(),
        }
    }
}

/// Workgroup memory the matmul's full-block tiles take.
const MATMUL_WORKGROUP_BYTES: u32 = 32 * 1024;

/// Seconds and dispatches per [`Shader::profile_key`].
pub type Profile = BTreeMap<String, (f64, u32)>;

/// The runtime checks our kernels keep (see `GpuContext::new`).
const TRUSTED: wgpu::ShaderRuntimeChecks = wgpu::ShaderRuntimeChecks {
    bounds_checks: false,
    force_loop_bounding: false,
    int_div_checks: false,
    ..wgpu::ShaderRuntimeChecks::checked()
};

/// Commands recorded before the encoder is submitted without waiting:
/// the GPU starts on them, and the buffers they free are reclaimed
/// (a whole forward pass in one submission held every intermediate).
const COMMANDS_PER_SUBMIT: usize = 64;

pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Each kernel's pipeline and bind group layout, in `Shader::ALL`'s order.
    pipelines: Vec<(wgpu::ComputePipeline, wgpu::BindGroupLayout)>,
    /// Bound where a kernel's optional input is absent.
    empty: wgpu::Buffer,
    pending: Mutex<Pending>,
    pool: Arc<Mutex<Pool>>,
    /// With `QMD_GPU_PROFILE` set, each dispatch is run alone and timed
    /// (slower overall; for finding the kernel that takes the time).
    profile: Option<Mutex<Profile>>,
}

struct Pending {
    encoder: Option<wgpu::CommandEncoder>,
    commands: usize,
}

impl GpuContext {
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> GpuContext {
        let workgroup_bytes = device.limits().max_compute_workgroup_storage_size;
        GpuContext::with_workgroup_memory(device, queue, workgroup_bytes)
    }

    /// The kernels built for `workgroup_bytes` of workgroup memory (at most
    /// what the device gives: the tests use it to build the small tiles
    /// on a device that has more).
    pub fn with_workgroup_memory(device: wgpu::Device, queue: wgpu::Queue, workgroup_bytes: u32) -> GpuContext {
        let pipelines = Shader::ALL
            .iter()
            .map(|kernel| {
                let (label, source) = kernel.source(workgroup_bytes);
                let descriptor =
                    wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(source) };
                // SAFETY: these are our own kernels, not a page's: every
                // loop is bounded by its parameters, no divisor is zero,
                // and each kernel checks its indices itself. Buffer
                // accesses stay bounded where the platform bounds them
                // (Vulkan's robust buffer access); what is dropped is
                // naga's per-access clamps and loop counters, which cost
                // the inner loops most of their speed.
                let module = unsafe { device.create_shader_module_trusted(descriptor, TRUSTED) };
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(label),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
                let layout = pipeline.get_bind_group_layout(0);
                (pipeline, layout)
            })
            .collect();
        let empty = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("empty"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let profile = std::env::var_os("QMD_GPU_PROFILE").map(|_| Mutex::default());
        GpuContext {
            device,
            queue,
            pipelines,
            empty,
            pending: Mutex::new(Pending { encoder: None, commands: 0 }),
            pool: Arc::default(),
            profile,
        }
    }

    /// The time each kernel took, where `QMD_GPU_PROFILE` is set.
    pub fn profile(&self) -> Option<Profile> {
        self.profile.as_ref().map(|p| p.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    pub fn empty(&self) -> &wgpu::Buffer {
        &self.empty
    }

    /// A buffer holding `data` (activations, weights, indices).
    pub fn buffer_with<T: bytemuck::Pod>(&self, label: &str, data: &[T]) -> wgpu::Buffer {
        let contents: &[u8] = bytemuck::cast_slice(data);
        // Bindings cannot be empty.
        let contents = if contents.is_empty() { &[0u8; 4][..] } else { contents };
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        })
    }

    /// A buffer for `floats` f32 values of activations, reused from a
    /// dropped one of its size class where there is one; its contents are
    /// whatever was there.
    pub fn activation(&self, floats: usize) -> PooledBuffer {
        let size = size_class((floats.max(1) * 4) as u64);
        let reused = self.pool.lock().unwrap_or_else(|p| p.into_inner()).take(size);
        let buffer = reused.unwrap_or_else(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("activation"),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        PooledBuffer::new(buffer, self.pool.clone())
    }

    /// An activation buffer holding `values`.
    pub fn activation_with(&self, values: &[f32]) -> PooledBuffer {
        let buffer = self.activation(values.len());
        // A reused buffer may still be read by commands recorded but not
        // yet submitted, and the queue writes before the next submission:
        // submit those first.
        self.submit();
        self.queue.write_buffer(&buffer, 0, bytemuck::cast_slice(values));
        buffer
    }

    /// Records `kernel` over `buffers` (bindings 1, 2, …; binding 0 is
    /// `params`) on `groups` workgroups.
    pub fn dispatch(&self, kernel: Shader, params: &[u32], buffers: &[&wgpu::Buffer], groups: (u32, u32)) {
        let (pipeline, layout) = &self.pipelines[kernel as usize];
        let mut padded = params.to_vec();
        padded.resize(params.len().next_multiple_of(4).max(4), 0);
        let uniform = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: bytemuck::cast_slice(&padded),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() }),
        );
        let bind_group =
            self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout, entries: &entries });
        let Some(profile) = &self.profile else {
            self.record(|encoder| Self::compute(encoder, pipeline, &bind_group, groups));
            return;
        };
        // What was recorded before runs first, so the timing is this
        // dispatch's alone (and its submission's).
        self.submit_and_wait();
        let start = Instant::now();
        self.record(|encoder| Self::compute(encoder, pipeline, &bind_group, groups));
        self.submit_and_wait();
        let mut profile = profile.lock().unwrap_or_else(|p| p.into_inner());
        let entry = profile.entry(kernel.profile_key(params)).or_default();
        entry.0 += start.elapsed().as_secs_f64();
        entry.1 += 1;
    }

    fn compute(
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        groups: (u32, u32),
    ) {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }

    /// Submits what was recorded, then `last` recorded after it (where
    /// there is a `last`), without waiting. The encoder is taken and
    /// submitted under the recording lock: threads sharing this context
    /// record into one encoder, and were one to take it while another
    /// submitted a later one in between, the later commands would run
    /// first (a read's copy before the dispatches it reads, a reused
    /// buffer's upload before the commands still reading it). It happened
    /// under the test harness's threads: a greedy decode on the GPU parted
    /// from llama.cpp at its second token while other models ran.
    fn submit_then(&self, last: Option<&dyn Fn(&mut wgpu::CommandEncoder)>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.commands = 0;
        let mut encoder = pending.encoder.take();
        if let Some(last) = last {
            last(encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default())));
        }
        if let Some(encoder) = encoder {
            self.queue.submit([encoder.finish()]);
        }
    }

    /// Submits what was recorded, without waiting.
    fn submit(&self) {
        self.submit_then(None);
    }

    /// Submits what was recorded and waits until the GPU has run it.
    fn submit_and_wait(&self) {
        self.submit();
        // Profiling only: a device lost here shows in the next read.
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
    }

    /// Records a copy of `floats` values from `from` to `to`.
    pub fn copy(&self, from: &wgpu::Buffer, to: &wgpu::Buffer, floats: usize) {
        self.copy_at(from, to, floats, 0);
    }

    /// Records a copy of `from`'s first `floats` values into `to` from its
    /// value `at` on.
    pub fn copy_at(&self, from: &wgpu::Buffer, to: &wgpu::Buffer, floats: usize, at: usize) {
        let bytes = (floats * 4) as u64;
        self.record(|encoder| encoder.copy_buffer_to_buffer(from, 0, to, (at * 4) as u64, bytes));
    }

    /// Records a command into the pending encoder, submitting it every
    /// [`COMMANDS_PER_SUBMIT`] commands.
    fn record(&self, command: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let full = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            command(pending.encoder.get_or_insert_with(|| self.device.create_command_encoder(&Default::default())));
            pending.commands += 1;
            pending.commands >= COMMANDS_PER_SUBMIT
        };
        if full {
            self.submit();
        }
    }

    /// Runs what was recorded and returns `buffer`'s first `floats`
    /// values, waiting on the device: natively only (a browser cannot
    /// wait; there the result comes from [`read_async`](Self::read_async)).
    pub fn read(&self, buffer: &wgpu::Buffer, floats: usize) -> Result<Vec<f32>> {
        now(self.read_async(buffer, floats))
    }

    /// Runs what was recorded and returns `buffer`'s first `floats`
    /// values when the GPU has them.
    pub async fn read_async(&self, buffer: &wgpu::Buffer, floats: usize) -> Result<Vec<f32>> {
        let size = (floats * 4) as u64;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read"),
            size: size.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.submit_then(Some(&|encoder| encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size)));
        #[cfg_attr(target_family = "wasm", allow(unused_mut))]
        let (sender, mut receiver) = futures_channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        let failed = |e: String| Error::io(format!("reading the GPU's result: {e}"));
        // Natively the callback runs inside a `poll`, but not always this
        // thread's: with threads sharing the device, another's poll may
        // have taken the callback and not run it yet when this one returns
        // (it happened under the tests' threads), so wait for it. A
        // browser runs it from its event loop.
        #[cfg(not(target_family = "wasm"))]
        let mapped = loop {
            self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| failed(e.to_string()))?;
            match receiver.try_recv() {
                Ok(Some(mapped)) => break mapped,
                Ok(None) => std::thread::yield_now(),
                Err(e) => return Err(failed(e.to_string())),
            }
        };
        #[cfg(target_family = "wasm")]
        let mapped = receiver.await.map_err(|e| failed(e.to_string()))?;
        mapped.map_err(|e| failed(e.to_string()))?;
        let view = staging.get_mapped_range(..).map_err(|e| failed(e.to_string()))?;
        let values = bytemuck::cast_slice::<u8, f32>(&view[..size as usize]).to_vec();
        drop(view);
        staging.unmap();
        Ok(values)
    }
}

/// Workgroups for `count` items of `per_group` each, spread over two
/// dimensions (a dimension holds at most 65,535).
pub fn groups_for(count: usize, per_group: usize) -> (u32, u32) {
    let groups = count.div_ceil(per_group).max(1);
    let x = groups.min(65_535);
    (x as u32, groups.div_ceil(x) as u32)
}
