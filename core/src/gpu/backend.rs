//! [`Backend`] on a GPU: each operation is recorded as a dispatch of a
//! `shaders/` kernel over buffers that stay on the GPU; the CPU sees only
//! the input rows and what is read at the end. A model's matrices and
//! vectors are copied to the GPU the first time they are used (matrices
//! in their quantized blocks, [`super::layout`]) and kept by name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::context::{GpuContext, Kernel, groups_for};
use super::layout::{self, Format};
use super::wgpu;
use crate::arch::ops::{AttentionShape, Rope, Window, rope_table};
use crate::arch::{Backend, Matrix, Vector, Weights};
use crate::error::Result;

/// Outputs a workgroup of `shaders/matmul.wgsl` computes on each side.
const MATMUL_TILE: usize = 64;

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
    buffer: wgpu::Buffer,
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

    fn vector(&self, v: &Vector) -> Arc<wgpu::Buffer> {
        let mut cache = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(v.name().to_string())
            .or_insert_with(|| Arc::new(self.context.buffer_with(v.name(), v.values())))
            .clone()
    }

    fn tensor(&self, label: &str, len: usize) -> GpuTensor {
        GpuTensor { buffer: self.context.buffer(label, len), len }
    }

    fn elementwise(&self, map: Map, x: &mut GpuTensor, y: Option<&GpuTensor>) {
        let y = y.map_or(self.context.empty(), |y| &y.buffer);
        let params = [x.len as u32, map as u32];
        self.context.dispatch(Kernel::Elementwise, &params, &[&x.buffer, y], groups_for(x.len, 256));
    }

    fn norm(&self, x: &mut GpuTensor, weight: &Vector, bias: Option<&Vector>, eps: f32) {
        let width = weight.len();
        let rows = x.len / width;
        let weight = self.vector(weight);
        let bias = bias.map(|b| self.vector(b));
        let bias_buffer = bias.as_deref().unwrap_or(self.context.empty());
        let kind = u32::from(bias.is_some());
        self.context.dispatch(
            Kernel::Norm,
            &[rows as u32, width as u32, eps.to_bits(), kind],
            &[&x.buffer, &weight, bias_buffer],
            groups_for(rows, 1),
        );
    }

    /// One row per span (first row, length) of `x`'s rows.
    fn rows(&self, x: &GpuTensor, spans: &[[u32; 2]], width: usize, op: RowsOp) -> GpuTensor {
        let out = self.tensor("rows", spans.len() * width);
        let params = [spans.len() as u32, width as u32, op as u32];
        let spans = self.context.buffer_with("spans", spans);
        self.context.dispatch(Kernel::Rows, &params, &[&x.buffer, &spans, &out.buffer], groups_for(out.len, 256));
        out
    }
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

    fn upload(&self, rows: Vec<f32>) -> GpuTensor {
        GpuTensor { buffer: self.context.buffer_with("input", &rows), len: rows.len() }
    }

    fn read(&self, x: GpuTensor) -> Result<Vec<f32>> {
        self.context.read(&x.buffer, x.len)
    }

    fn copy(&self, x: &GpuTensor) -> GpuTensor {
        let out = self.tensor("copy", x.len);
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
            let out = self.tensor("product", rows * w.rows);
            let bias = bias.map(|b| self.vector(b));
            let params = [rows as u32, w.rows as u32, w.cols as u32, w.format as u32, u32::from(bias.is_some())];
            let bias_buffer = bias.as_deref().unwrap_or(self.context.empty());
            self.context.dispatch(
                Kernel::Matmul,
                &params,
                &[&x.buffer, &w.values, &w.scales, bias_buffer, &out.buffer],
                (w.rows.div_ceil(MATMUL_TILE) as u32, rows.div_ceil(MATMUL_TILE) as u32),
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
        self.elementwise(Map::Add, x, Some(y));
    }

    fn rope(&self, x: &mut GpuTensor, lengths: &[usize], head_dim: usize, base: f32, layout: Rope) {
        let tokens: usize = lengths.iter().sum();
        let heads = x.len / tokens.max(1) / head_dim;
        let positions: Vec<u32> = lengths.iter().flat_map(|&len| 0..len as u32).collect();
        let longest = lengths.iter().copied().max().unwrap_or(0);
        let table: Vec<[f32; 2]> =
            rope_table(longest, head_dim, base).into_iter().map(|(cos, sin)| [cos, sin]).collect();
        let positions = self.context.buffer_with("positions", &positions);
        let table = self.context.buffer_with("rope", &table);
        let pairs = u32::from(layout == Rope::Pairs);
        self.context.dispatch(
            Kernel::Rope,
            &[tokens as u32, heads as u32, head_dim as u32, pairs],
            &[&x.buffer, &positions, &table],
            groups_for(tokens * heads * head_dim / 2, 256),
        );
    }

    fn round_to_f16(&self, x: &mut GpuTensor) {
        self.elementwise(Map::RoundToF16, x, None);
    }

    fn attention(
        &self,
        q: &GpuTensor,
        k: &GpuTensor,
        v: &GpuTensor,
        lengths: &[usize],
        shape: AttentionShape,
    ) -> GpuTensor {
        let AttentionShape { heads, kv_heads, head_dim, scale, window } = shape;
        assert!(head_dim <= 256, "the attention kernel keeps at most 256 dimensions a head");
        // Blocks of up to QUERY_BLOCK queries, none across sequences.
        let block = QUERY_BLOCK as u32;
        let blocks: Vec<[u32; 4]> = spans(lengths)
            .into_iter()
            .flat_map(|[start, len]| {
                (0..len).step_by(QUERY_BLOCK).map(move |first| [start, len, first, (len - first).min(block)])
            })
            .collect();
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
        ];
        let count = blocks.len() as u32;
        let blocks = self.context.buffer_with("blocks", &blocks);
        let out = self.tensor("attention", q.len);
        self.context.dispatch(
            Kernel::Attention,
            &params,
            &[&q.buffer, &k.buffer, &v.buffer, &blocks, &out.buffer],
            (heads as u32, count),
        );
        out
    }

    fn gelu(&self, x: &mut GpuTensor) {
        self.elementwise(Map::Gelu, x, None);
    }

    fn gelu_gate(&self, gate: &mut GpuTensor, up: &GpuTensor) {
        self.elementwise(Map::GeluGate, gate, Some(up));
    }

    fn silu_gate(&self, gate: &mut GpuTensor, up: &GpuTensor) {
        self.elementwise(Map::SiluGate, gate, Some(up));
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
