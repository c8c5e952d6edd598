//! [`Backend`] on a GPU: each operation is recorded as a dispatch of a
//! `shaders/` kernel over buffers that stay on the GPU; the CPU sees only
//! the input rows and what is read at the end. A model's matrices and
//! vectors are copied to the GPU the first time they are used (matrices
//! in their quantized blocks, [`super::layout`]) and kept by name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::context::{GpuContext, Shader, groups_for};
use super::layout::{self, Format};
use super::pool::PooledBuffer;
use super::wgpu;
use crate::arch::ops::{AttentionShape, Rope, Window, check_ids, rope_table};
use crate::arch::{Backend, Matrix, Vector, Weights};
use crate::error::Result;

/// Outputs a workgroup of `shaders/matmul.wgsl` computes on each side.
const MATMUL_TILE: usize = 128;

/// Products of at most this many rows (a decoded token) take
/// `shaders/matvec.wgsl` (its `MAX_M`), whose workgroups compute
/// `MATVEC_OUTPUTS` outputs of each row (its `ROWS`).
const MATVEC_ROWS: usize = 4;
const MATVEC_OUTPUTS: usize = 4;

/// Queries a workgroup of `shaders/attention.wgsl` takes (its `QUERIES`).
const QUERY_BLOCK: usize = 8;

/// `shaders/elementwise.wgsl`'s maps (`Params.op`).
#[derive(Clone, Copy)]
enum Map {
    Add = 0,
    Gelu = 1,
    GeluGate = 2,
    SiluGate = 3,
    RoundToF16 = 4,
    Scale = 5,
    AddRow = 6,
}

/// `shaders/rows.wgsl`'s operations (`Params.op`).
#[derive(Clone, Copy)]
enum RowsOp {
    /// The mean of each span's rows.
    Mean = 0,
    /// The row each span starts at.
    First = 1,
}

/// Activations on the GPU: `len` f32 values.
pub struct GpuTensor {
    buffer: PooledBuffer,
    len: usize,
}

struct GpuMatrix {
    values: wgpu::Buffer,
    scales: wgpu::Buffer,
    format: Format,
    rows: usize,
    cols: usize,
}

/// One model's GPU copy of its weights, and the device it runs on.
pub struct Gpu {
    context: Arc<GpuContext>,
    matrices: Mutex<HashMap<String, Arc<GpuMatrix>>>,
    vectors: Mutex<HashMap<String, Arc<wgpu::Buffer>>>,
}

impl Gpu {
    pub fn new(context: Arc<GpuContext>) -> Gpu {
        Gpu { context, matrices: Mutex::default(), vectors: Mutex::default() }
    }

    fn matrix(&self, weights: &Weights, m: &Matrix) -> Arc<GpuMatrix> {
        let mut cache = self.matrices.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(m.name().to_string())
            .or_insert_with(|| {
                let view = weights.view(m);
                let packed = layout::pack(&view);
                Arc::new(GpuMatrix {
                    values: self.context.buffer_with(m.name(), &packed.values),
                    scales: self.context.buffer_with(m.name(), &packed.scales),
                    format: packed.format,
                    rows: view.rows,
                    cols: view.cols,
                })
            })
            .clone()
    }

    /// `x`'s values once the GPU has computed them, without blocking.
    pub async fn read_async(&self, x: GpuTensor) -> Result<Vec<f32>> {
        self.context.read_async(&x.buffer, x.len).await
    }

    fn vector(&self, v: &Vector) -> Arc<wgpu::Buffer> {
        let mut cache = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(v.name().to_string())
            .or_insert_with(|| Arc::new(self.context.buffer_with(v.name(), v.values())))
            .clone()
    }

    fn tensor(&self, len: usize) -> GpuTensor {
        GpuTensor { buffer: self.context.activation(len), len }
    }

    /// `map` over `x` with `y` (or a row of `width` values), `factor`.
    fn elementwise(&self, map: Map, x: &mut GpuTensor, y: Option<&wgpu::Buffer>, width: usize, factor: f32) {
        let y = y.unwrap_or(self.context.empty());
        let params = [x.len as u32, map as u32, width as u32, factor.to_bits()];
        self.context.dispatch(Shader::Elementwise, &params, &[&x.buffer, y], groups_for(x.len, 256));
    }

    /// `map` over `x` and `y` value by value.
    fn map(&self, map: Map, x: &mut GpuTensor, y: Option<&GpuTensor>) {
        self.elementwise(map, x, y.map(|y| &*y.buffer), 1, 1.0);
    }

    fn norm(&self, x: &mut GpuTensor, weight: &Vector, bias: Option<&Vector>, eps: f32) {
        let width = weight.len();
        let rows = x.len / width;
        let weight = self.vector(weight);
        let bias = bias.map(|b| self.vector(b));
        let bias_buffer = bias.as_deref().unwrap_or(self.context.empty());
        let kind = u32::from(bias.is_some());
        self.context.dispatch(
            Shader::Norm,
            &[rows as u32, width as u32, eps.to_bits(), kind],
            &[&x.buffer, &weight, bias_buffer],
            groups_for(rows, 1),
        );
    }

    /// `shaders/attention.wgsl` over `blocks` of `q`'s queries and the
    /// key and value rows `kv`; `q` (and the result) start at the
    /// sequence's row `query_shift`.
    fn attend(
        &self,
        q: &GpuTensor,
        (k, v): (&wgpu::Buffer, &wgpu::Buffer),
        blocks: &[[u32; 4]],
        shape: AttentionShape,
        query_shift: usize,
    ) -> GpuTensor {
        let AttentionShape { heads, kv_heads, head_dim, scale, window, f16_sums } = shape;
        assert!(
            head_dim <= 256 && head_dim.is_multiple_of(4),
            "the attention kernel takes heads of a multiple of 4 dimensions, at most 256 (not {head_dim})"
        );
        assert!(blocks.len() <= 65_535, "{} query blocks in one GPU attention dispatch (65,535 fit)", blocks.len());
        let (window, half) = match window {
            Window::Full => (0, 0),
            Window::Symmetric(half) => (1, half as u32),
            Window::Causal => (2, 0),
        };
        let params = [
            (heads * head_dim) as u32,
            (kv_heads * head_dim) as u32,
            head_dim as u32,
            (heads / kv_heads.max(1)) as u32,
            scale.to_bits(),
            window,
            half,
            u32::from(f16_sums),
            query_shift as u32,
        ];
        let count = blocks.len() as u32;
        let blocks = self.context.buffer_with("blocks", blocks);
        let out = self.tensor(q.len);
        self.context.dispatch(
            Shader::Attention,
            &params,
            &[&q.buffer, k, v, &blocks, &out.buffer],
            (heads as u32, count),
        );
        out
    }

    /// One row per span (first row, length) of `x`'s rows.
    fn rows(&self, x: &GpuTensor, spans: &[[u32; 2]], width: usize, op: RowsOp) -> GpuTensor {
        let out = self.tensor(spans.len() * width);
        let params = [spans.len() as u32, width as u32, op as u32];
        let spans = self.context.buffer_with("spans", spans);
        self.context.dispatch(Shader::Rows, &params, &[&x.buffer, &spans, &out.buffer], groups_for(out.len, 256));
        out
    }
}

/// One block's keys and values of a sequence on the GPU, rounded to f16
/// (as llama.cpp's cache holds them) and stored as f32, the rows the
/// attention kernel reads; grown by doubling, so a decoded token seldom
/// copies the cache.
#[derive(Default)]
pub struct GpuKvCache {
    buffers: Option<(PooledBuffer, PooledBuffer)>,
    /// Rows the buffers have room for.
    capacity: usize,
    len: usize,
}

/// Rows a new cache has room for: a short prompt and its answer.
const CACHE_ROWS: usize = 256;

impl GpuKvCache {
    /// The keys' and values' buffers, with room for `tokens` more rows of
    /// `width` (grown, the rows so far copied over, where there is not).
    fn room_for(&mut self, gpu: &Gpu, tokens: usize, width: usize) -> (&wgpu::Buffer, &wgpu::Buffer) {
        let needed = self.len + tokens;
        if needed > self.capacity {
            let capacity = needed.max(2 * self.capacity).max(CACHE_ROWS);
            let grown = (gpu.context.activation(capacity * width), gpu.context.activation(capacity * width));
            if let Some((keys, values)) = &self.buffers {
                gpu.context.copy(keys, &grown.0, self.len * width);
                gpu.context.copy(values, &grown.1, self.len * width);
            }
            self.buffers = Some(grown);
            self.capacity = capacity;
        }
        let (keys, values) = self.buffers.as_ref().expect("buffers made above");
        (keys, values)
    }
}

/// `[start, len, first, count]` for the blocks of up to QUERY_BLOCK
/// queries of the sequence of `len` rows from row `start`, from its
/// position `from` on.
fn query_blocks(start: u32, len: u32, from: u32) -> impl Iterator<Item = [u32; 4]> {
    (from..len).step_by(QUERY_BLOCK).map(move |first| [start, len, first, (len - first).min(QUERY_BLOCK as u32)])
}

/// Each sequence's first row and length.
fn spans(lengths: &[usize]) -> Vec<[u32; 2]> {
    let mut at = 0;
    lengths
        .iter()
        .map(|&len| {
            let span = [at as u32, len as u32];
            at += len;
            span
        })
        .collect()
}

impl Backend for Gpu {
    type Tensor = GpuTensor;
    type Cache = GpuKvCache;

    fn upload(&self, rows: Vec<f32>) -> GpuTensor {
        GpuTensor { buffer: self.context.activation_with(&rows), len: rows.len() }
    }

    fn read(&self, x: GpuTensor) -> Result<Vec<f32>> {
        self.context.read(&x.buffer, x.len)
    }

    fn lookup(&self, weights: &Weights, m: &Matrix, ids: &[u32]) -> Result<GpuTensor> {
        let w = self.matrix(weights, m);
        check_ids(ids, w.rows)?;
        assert!(w.cols.is_multiple_of(8), "the gather kernel takes rows of a multiple of 8 values (not {})", w.cols);
        let out = self.tensor(ids.len() * w.cols);
        let params = [ids.len() as u32, w.cols as u32, w.format as u32];
        let ids = self.context.buffer_with("ids", ids);
        self.context.dispatch(
            Shader::Gather,
            &params,
            &[&ids, &w.values, &w.scales, &out.buffer],
            groups_for(out.len / 8, 256),
        );
        Ok(out)
    }

    fn copy(&self, x: &GpuTensor) -> GpuTensor {
        let out = self.tensor(x.len);
        self.context.copy(&x.buffer, &out.buffer, x.len);
        out
    }

    fn matmul_each<const N: usize>(
        &self,
        weights: &Weights,
        x: &GpuTensor,
        ms: [(&Matrix, Option<&Vector>); N],
    ) -> [GpuTensor; N] {
        ms.map(|(m, bias)| {
            let w = self.matrix(weights, m);
            let rows = x.len / w.cols;
            let out = self.tensor(rows * w.rows);
            let bias = bias.map(|b| self.vector(b));
            let params = [rows as u32, w.rows as u32, w.cols as u32, w.format as u32, u32::from(bias.is_some())];
            let bias_buffer = bias.as_deref().unwrap_or(self.context.empty());
            let (kernel, groups) = match rows <= MATVEC_ROWS {
                true => (Shader::Matvec, groups_for(w.rows, MATVEC_OUTPUTS)),
                false => (Shader::Matmul, (w.rows.div_ceil(MATMUL_TILE) as u32, rows.div_ceil(MATMUL_TILE) as u32)),
            };
            self.context.dispatch(
                kernel,
                &params,
                &[&x.buffer, &w.values, &w.scales, bias_buffer, &out.buffer],
                groups,
            );
            out
        })
    }

    fn rms_norm(&self, x: &mut GpuTensor, weight: &Vector, eps: f32) {
        self.norm(x, weight, None, eps);
    }

    fn layer_norm(&self, x: &mut GpuTensor, weight: &Vector, bias: &Vector, eps: f32) {
        self.norm(x, weight, Some(bias), eps);
    }

    fn add(&self, x: &mut GpuTensor, y: &GpuTensor) {
        self.map(Map::Add, x, Some(y));
    }

    fn add_row(&self, x: &mut GpuTensor, row: &Vector) {
        let buffer = self.vector(row);
        self.elementwise(Map::AddRow, x, Some(&buffer), row.len(), 1.0);
    }

    fn scale(&self, x: &mut GpuTensor, factor: f32) {
        self.elementwise(Map::Scale, x, None, 1, factor);
    }

    fn rope_from(&self, x: &mut GpuTensor, sequences: &[(usize, usize)], head_dim: usize, base: f32, layout: Rope) {
        let tokens: usize = sequences.iter().map(|&(_, len)| len).sum();
        let heads = x.len / tokens.max(1) / head_dim;
        // The table covers the positions seen, from the first of them.
        let start = sequences.iter().map(|&(first, _)| first).min().unwrap_or(0);
        let end = sequences.iter().map(|&(first, len)| first + len).max().unwrap_or(0);
        let positions: Vec<u32> =
            sequences.iter().flat_map(|&(first, len)| (first - start) as u32..(first - start + len) as u32).collect();
        let table: Vec<[f32; 2]> =
            rope_table(start..end, head_dim, base).into_iter().map(|(cos, sin)| [cos, sin]).collect();
        let positions = self.context.buffer_with("positions", &positions);
        let table = self.context.buffer_with("rope", &table);
        let pairs = u32::from(layout == Rope::Pairs);
        self.context.dispatch(
            Shader::Rope,
            &[tokens as u32, heads as u32, head_dim as u32, pairs],
            &[&x.buffer, &positions, &table],
            groups_for(tokens * heads * head_dim / 2, 256),
        );
    }

    fn round_to_f16(&self, x: &mut GpuTensor) {
        self.map(Map::RoundToF16, x, None);
    }

    fn attention(
        &self,
        q: &GpuTensor,
        k: &GpuTensor,
        v: &GpuTensor,
        lengths: &[usize],
        shape: AttentionShape,
    ) -> GpuTensor {
        // Blocks of up to QUERY_BLOCK queries, none across sequences.
        let blocks: Vec<[u32; 4]> =
            spans(lengths).into_iter().flat_map(|[start, len]| query_blocks(start, len, 0)).collect();
        self.attend(q, (&k.buffer, &v.buffer), &blocks, shape, 0)
    }

    fn attention_cached(
        &self,
        q: &GpuTensor,
        mut k: GpuTensor,
        mut v: GpuTensor,
        cache: &mut GpuKvCache,
        shape: AttentionShape,
    ) -> GpuTensor {
        let kv_width = shape.kv_heads * shape.head_dim;
        let (cached, tokens) = (cache.len, k.len / kv_width);
        self.round_to_f16(&mut k);
        self.round_to_f16(&mut v);
        let (keys, values) = cache.room_for(self, tokens, kv_width);
        self.context.copy_at(&k.buffer, keys, k.len, cached * kv_width);
        self.context.copy_at(&v.buffer, values, v.len, cached * kv_width);
        let blocks: Vec<[u32; 4]> = query_blocks(0, (cached + tokens) as u32, cached as u32).collect();
        let out = self.attend(q, (keys, values), &blocks, shape, cached);
        cache.len += tokens;
        out
    }

    fn gelu(&self, x: &mut GpuTensor) {
        self.map(Map::Gelu, x, None);
    }

    fn gelu_gate(&self, gate: &mut GpuTensor, up: &GpuTensor) {
        self.map(Map::GeluGate, gate, Some(up));
    }

    fn silu_gate(&self, gate: &mut GpuTensor, up: &GpuTensor) {
        self.map(Map::SiluGate, gate, Some(up));
    }

    fn last_rows(&self, x: &GpuTensor, lengths: &[usize], width: usize) -> GpuTensor {
        let last: Vec<[u32; 2]> = spans(lengths).into_iter().map(|[first, len]| [first + len - 1, 1]).collect();
        self.rows(x, &last, width, RowsOp::First)
    }

    fn first_rows(&self, x: &GpuTensor, lengths: &[usize], width: usize) -> GpuTensor {
        self.rows(x, &spans(lengths), width, RowsOp::First)
    }

    fn mean_rows(&self, x: &GpuTensor, lengths: &[usize], width: usize) -> GpuTensor {
        self.rows(x, &spans(lengths), width, RowsOp::Mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::{GgmlType, GgufFile};
    use crate::kernels::tests::{random_matrix, xorshift};
    use crate::model::{DeviceChoice, ModelDevice};

    /// The process's one wgpu device (burn registers its runtime once).
    fn test_context() -> Arc<GpuContext> {
        static DEVICE: std::sync::OnceLock<ModelDevice> = std::sync::OnceLock::new();
        let device = DEVICE
            .get_or_init(|| ModelDevice::select(DeviceChoice::Gpu).expect("a wgpu adapter (Mesa's lavapipe in CI)"));
        device.gpu.clone().expect("the GPU kernels' context")
    }

    /// Threads sharing one context (as a server's requests share the
    /// model's): each uploads values of its own, copies them through
    /// pooled buffers and reads them back, so buffers pass between threads
    /// through the pool and every read races the others' recording and
    /// submitting. Each thread reads its own values, every round.
    #[test]
    fn threads_sharing_a_context_read_their_own_results() {
        let context = test_context();
        std::thread::scope(|scope| {
            for thread in 0..4usize {
                let context = &context;
                scope.spawn(move || {
                    for round in 0..150usize {
                        let values: Vec<f32> =
                            (0..1024).map(|j| (thread * 1_000_000 + round * 1024 + j) as f32).collect();
                        let source = context.activation_with(&values);
                        let target = context.activation(values.len());
                        context.copy(&source, &target, values.len());
                        drop(source);
                        let read = context.read(&target, values.len()).unwrap();
                        assert!(
                            read == values,
                            "thread {thread}, round {round}: another thread's values or stale ones"
                        );
                    }
                });
            }
        });
    }

    /// ggml's number of each type (the reader's `GgmlType::from_id`).
    const TYPES: [(GgmlType, u32); 9] = [
        (GgmlType::F32, 0),
        (GgmlType::F16, 1),
        (GgmlType::Q4_0, 2),
        (GgmlType::Q4_1, 3),
        (GgmlType::Q8_0, 8),
        (GgmlType::Q4_K, 12),
        (GgmlType::Q5_K, 13),
        (GgmlType::Q6_K, 14),
        (GgmlType::BF16, 30),
    ];

    /// A GGUF v3 file without metadata holding `tensors` (name, type id,
    /// rows, cols, data).
    fn gguf(tensors: &[(String, u32, usize, usize, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((tensors.len() as u64).to_le_bytes());
        out.extend(0u64.to_le_bytes());
        let mut offset = 0u64;
        for (name, id, rows, cols, data) in tensors {
            out.extend((name.len() as u64).to_le_bytes());
            out.extend(name.as_bytes());
            out.extend(2u32.to_le_bytes());
            out.extend((*cols as u64).to_le_bytes());
            out.extend((*rows as u64).to_le_bytes());
            out.extend(id.to_le_bytes());
            out.extend(offset.to_le_bytes());
            offset += (data.len() as u64).next_multiple_of(32);
        }
        for (_, _, _, _, data) in tensors {
            out.resize(out.len().next_multiple_of(32), 0);
            out.extend(data);
        }
        out
    }

    /// Every weight format's matrix product and row lookup on the GPU (the software
    /// Vulkan where there is no GPU) against the values the shader reads
    /// (which the layout test holds to the file's), summed in f64; shapes
    /// that are not whole tiles, with a bias.
    #[test]
    fn products_and_lookups_of_every_weight_format_match_a_reference() {
        let context = test_context();
        // And the matmul's half-block tiles, for devices giving a workgroup
        // only WebGPU's default 16 KB.
        let small = GpuContext::with_workgroup_memory(context.device.clone(), context.queue.clone(), 16 * 1024);
        for gpu in [Gpu::new(context), Gpu::new(Arc::new(small))] {
            check_every_format(&gpu);
        }
    }

    /// A sequence's attention through the GPU's KV cache, fed in pieces
    /// that grow the cache past its first buffers, equals the CPU cache's
    /// (both hold keys and values rounded to f16): long pieces summed in
    /// f32, short ones (a decoded token) key by key in f16 as llama.cpp.
    #[test]
    fn cached_attention_matches_the_cpu_cache_as_the_cache_grows() {
        use crate::arch::Cpu;
        use crate::arch::kv_cache::KvCache;
        let gpu = Gpu::new(test_context());
        let (heads, kv_heads, head_dim) = (4, 2, 16);
        let mut next = xorshift(11);
        let mut random = |n: usize| -> Vec<f32> { (0..n).map(|_| ((next() % 2001) as f32 - 1000.0) / 500.0).collect() };
        let (mut on_gpu, mut on_cpu) = (GpuKvCache::default(), KvCache::default());
        let mut seen = 0;
        for tokens in [70, 1, 1, 200, 3, 1, 300] {
            let f16_sums = tokens < 64;
            let shape = AttentionShape { heads, kv_heads, head_dim, scale: 0.25, window: Window::Causal, f16_sums };
            let mut q = random(tokens * heads * head_dim);
            if f16_sums {
                q = crate::arch::ops::round_to_f16(q);
            }
            let (k, v) = (random(tokens * kv_heads * head_dim), random(tokens * kv_heads * head_dim));
            let want = Cpu.attention_cached(&q, k.clone(), v.clone(), &mut on_cpu, shape);
            let (q, k, v) = (gpu.upload(q), gpu.upload(k), gpu.upload(v));
            let got = gpu.read(gpu.attention_cached(&q, k, v, &mut on_gpu, shape)).unwrap();
            seen += tokens;
            let worst = got.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            // f16 sums round at 2^-10 of values up to 2.
            let bound = if f16_sums { 4e-3 } else { 1e-5 };
            assert!(worst <= bound, "{tokens} tokens after {}: the GPU's attention differs by {worst}", seen - tokens);
        }
        assert_eq!(on_gpu.len, seen);
    }

    fn check_every_format(gpu: &Gpu) {
        // The tiled product, and the one for a few rows (a decoded token).
        for tokens in [150, 1, 3] {
            check_every_format_with(gpu, tokens);
        }
    }

    fn check_every_format_with(gpu: &Gpu, tokens: usize) {
        let (rows, cols) = (200, 256);
        let tensors: Vec<_> = TYPES
            .iter()
            .enumerate()
            .map(|(i, &(kind, id))| {
                (format!("{kind:?}"), id, rows, cols, random_matrix(kind, rows, cols, 40 + i as u64))
            })
            .collect();
        let bytes = gguf(&tensors);
        let file = GgufFile::parse("formats.gguf", &bytes).unwrap();
        let weights = Weights::new(&file, Arc::new(bytes.clone()));
        let mut next = xorshift(7);
        let x: Vec<f32> = (0..tokens * cols).map(|_| ((next() % 2001) as f32 - 1000.0) / 500.0).collect();
        let bias = Vector::new("bias", (0..rows).map(|r| r as f32 / 100.0).collect());
        let input = gpu.upload(x.clone());
        for (kind, _) in TYPES {
            let m = weights.matrix(&format!("{kind:?}"), rows, cols).unwrap();
            let packed = layout::pack(&weights.view(&m));
            let got = gpu.read(gpu.project(&weights, &input, &m, Some(&bias))).unwrap();
            assert_eq!(got.len(), tokens * rows);
            for t in 0..tokens {
                for r in 0..rows {
                    let terms =
                        (0..cols).map(|c| f64::from(x[t * cols + c]) * f64::from(layout::read(&packed, cols, r, c)));
                    let scale: f64 = terms.clone().map(f64::abs).sum::<f64>().max(1.0);
                    let want = terms.sum::<f64>() + f64::from(bias.values()[r]);
                    let value = f64::from(got[t * rows + r]);
                    assert!(
                        (value - want).abs() <= 1e-5 * scale,
                        "{kind:?} {tokens} rows, [{t}, {r}]: {value} vs {want}"
                    );
                }
            }
            // The same values looked up as an embedding table's rows.
            let ids = [5u32, 0, 199, 5];
            let rows_of = gpu.read(gpu.lookup(&weights, &m, &ids).unwrap()).unwrap();
            for (i, &id) in ids.iter().enumerate() {
                for c in 0..cols {
                    assert_eq!(rows_of[i * cols + c], layout::read(&packed, cols, id as usize, c), "{kind:?} row {id}");
                }
            }
            let err = gpu.lookup(&weights, &m, &[3, 200]).err().expect("an id past the table");
            assert!(err.message.contains("token id 200") && err.message.contains("200"), "{}", err.message);
        }
    }
}
