//! Matrix products on quantized weights, as llama.cpp computes them: the
//! activations are quantized to Q8_0 (32 values per f16 scale) and each
//! weight block is multiplied in integers, then scaled. The weights stay
//! in their file's blocks; nothing is dequantized at load.
//!
//! One module per instruction set: [`scalar`] (any CPU; the reference the
//! others are tested against), [`x86`] (AVX2, AVX-512 VNNI), `arm`
//! (NEON, with `sdot` where the CPU has it), `wasm`
//! (simd128, chosen when the browser build is compiled with it) and
//! `wasm_relaxed` (relaxed SIMD's 8-bit dot product, in the page's second
//! module, built with `--features relaxed-simd`). The widest
//! the CPU has is picked once, at run time. Q4_0 and Q4_1 weights have
//! kernels of their own on each (activations as Q8_0 and Q8_1, as
//! llama.cpp quantizes them for those types). K-quants multiply Q8_K
//! activations, in [`k_quants`].
//!
//! Float weights (F32, F16, BF16) are converted a few rows at a time into
//! a scratch tile and multiplied in f32 by `gemm`, as are attention's two
//! products ([`float::HeadProducts`]), but for the relaxed module's
//! embedding passes, where `wasm_relaxed_f32` runs those on fused
//! multiply-adds.

#[cfg(target_arch = "aarch64")]
mod arm;
pub mod dispatch;
pub mod float;
pub mod k_quants;
pub(crate) mod math;
pub(crate) mod multiversion;
pub(crate) mod parallel;
mod quantized_rows;
// Only the relaxed-SIMD module has kernels to race; the page installs the
// clock in either module.
#[cfg_attr(not(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd")), allow(dead_code))]
mod race;
mod scalar;
mod settings;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
// The relaxed-SIMD module replaces its kernels (their helpers serve both).
#[cfg_attr(feature = "relaxed-simd", allow(dead_code))]
pub(crate) mod wasm;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
mod wasm_relaxed;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
pub mod wasm_relaxed_elementwise;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
pub mod wasm_relaxed_f32;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use quantized_rows::{Bits, QuantizedRows};
pub use race::{Clock, install_clock};
pub use settings::{Settings, for_embedding, fused_attention, fused_element_wise};

use std::cell::OnceCell;
use std::ops::Range;

use crate::gguf::{GgmlType, TensorInfo, dequantize};
use k_quants::Q8KRows;

/// A weight matrix of `rows` outputs × `cols` inputs, each row whole
/// blocks of `kind`, borrowed from the model file.
#[derive(Clone, Copy)]
pub struct QMatrix<'a> {
    pub kind: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub data: &'a [u8],
}

impl<'a> QMatrix<'a> {
    /// The matrix of a 2-D tensor of `file` (rows = `dims[1]`).
    pub fn of(tensor: &TensorInfo, file: &'a [u8]) -> QMatrix<'a> {
        let (cols, rows) = tensor.rows();
        QMatrix { kind: tensor.kind, rows, cols, data: &file[tensor.range.clone()] }
    }

    fn row_bytes(&self) -> usize {
        self.kind.bytes_for(self.cols).expect("rows are whole blocks (checked when the file was read)")
    }

    /// Row `r`'s blocks.
    pub fn row(&self, r: usize) -> &'a [u8] {
        let n = self.row_bytes();
        &self.data[r * n..(r + 1) * n]
    }

    /// Rows `range` alone.
    pub fn row_range(&self, range: Range<usize>) -> QMatrix<'a> {
        let n = self.row_bytes();
        QMatrix { rows: range.len(), data: &self.data[range.start * n..range.end * n], ..*self }
    }

    /// Row `r` as floats.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        dequantize(self.kind, self.row(r), out);
    }
}

/// `row` replaced by its softmax ([`math::softmax_in_lanes`]), for the
/// GGUF models' attention and the browser's burn attention. In the
/// relaxed-SIMD module's embedding passes, on its fused multiply-add
/// (`kernels::wasm_relaxed_elementwise`).
pub(crate) fn softmax(row: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    if fused_element_wise() {
        return wasm_relaxed_elementwise::softmax(row);
    }
    math::softmax_in_lanes(row);
}

/// How finely Q8_0 products quantize their activations on this thread:
/// 8 bits, as llama.cpp does, but for the page's relaxed-SIMD modules in
/// [`for_embedding`], where they take 7.
fn q8_0_activation_bits() -> Bits {
    if Settings::current().embedding() { Bits::Seven } else { Bits::Eight }
}

/// Bytes of a Q8_0 block: an f16 scale, then 32 signed bytes.
const Q8_0_BLOCK_BYTES: usize = GgmlType::Q8_0.block_bytes();

/// Rows of activations computed per task: enough to amortise reading the
/// weights once per task, few enough that both cores get work.
const TASK_ROWS: usize = 64;

/// From this many activation rows on, a Q8_0 matrix is packed once for
/// the whole product rather than once per task (where this build's
/// kernel packs its weights: x86 with AVX-512 VNNI, the page's relaxed
/// SIMD module).
#[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd")))]
const PREPACK_ROWS: usize = 2 * TASK_ROWS;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
use wasm_relaxed::{matmul_packed as q8_0_packed_matmul, pack as pack_q8_0};
#[cfg(target_arch = "x86_64")]
use x86::{pack_for_vnni as pack_q8_0, vnni_matmul_packed as q8_0_packed_matmul};

/// Weight types whose products run on Q8_0/Q8_1 activations.
fn integer(kind: GgmlType) -> bool {
    matches!(kind, GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q4_1)
}

/// A product's activations, quantized on first need into each form the
/// weights multiply (a layer's q, k and v may mix Q8_0 and K-quants).
struct Inputs<'x> {
    x: &'x [f32],
    k: usize,
    q8: OnceCell<QuantizedRows>,
    q7: OnceCell<QuantizedRows>,
    q8k: OnceCell<Q8KRows>,
}

impl<'x> Inputs<'x> {
    fn new(x: &'x [f32], k: usize) -> Inputs<'x> {
        Inputs { x, k, q8: OnceCell::new(), q7: OnceCell::new(), q8k: OnceCell::new() }
    }

    fn q8(&self) -> &QuantizedRows {
        self.q8.get_or_init(|| QuantizedRows::quantize(self.x, self.k))
    }

    /// The activations as Q8_0 products take them here: 8 bits, or 7
    /// (see [`for_embedding`]).
    fn for_q8_0(&self) -> &QuantizedRows {
        match q8_0_activation_bits() {
            Bits::Eight => self.q8(),
            bits => self.q7.get_or_init(|| QuantizedRows::quantize_to(self.x, self.k, bits)),
        }
    }

    fn q8k(&self) -> &Q8KRows {
        self.q8k.get_or_init(|| Q8KRows::quantize(self.x, self.k))
    }
}

/// `out[m×n] = x[m×k] · wᵀ + bias`, row-major, `n = w.rows`, `k = w.cols`.
pub fn matmul(x: &[f32], w: &QMatrix, bias: Option<&[f32]>, out: &mut [f32]) {
    product(&Inputs::new(x, w.cols), w, out);
    add_bias(bias, w.rows, out);
}

/// `x · wᵀ` for each of several matrices of the same inputs (a layer's q,
/// k and v; its gate and up), the activations quantized once for all.
pub fn matmul_each<const N: usize>(x: &[f32], ws: [&QMatrix; N]) -> [Vec<f32>; N] {
    matmul_each_biased(x, ws.map(|w| (w, None)))
}

/// [`matmul_each`] with a bias for each product (BERT's q, k and v).
pub fn matmul_each_biased<const N: usize>(x: &[f32], ws: [(&QMatrix, Option<&[f32]>); N]) -> [Vec<f32>; N] {
    let inputs = Inputs::new(x, ws[0].0.cols);
    let m = x.len() / inputs.k;
    let mut outs = ws.map(|(w, _)| {
        assert_eq!(w.cols, inputs.k, "matmul_each: the matrices take the same inputs");
        vec![0f32; m * w.rows]
    });
    if m == 1 {
        // A decoded token: the products share one parallel step, so the
        // cores meet once for q, k and v rather than three times.
        let works = ws.map(|(w, _)| work(&inputs, w.kind));
        one_row_products(
            ws.iter().zip(&works).zip(outs.iter_mut()).map(|(((w, _), work), out)| (work, *w, &mut out[..])),
        );
    } else {
        for ((w, _), out) in ws.iter().zip(outs.iter_mut()) {
            product(&inputs, w, out);
        }
    }
    for ((w, bias), out) in ws.iter().zip(outs.iter_mut()) {
        add_bias(*bias, w.rows, out);
    }
    outs
}

/// A kernel's work: activation rows `rows` against every row of a weight
/// matrix, into `out` (`rows.len() × w.rows`).
type Work<'a> = Box<dyn Fn(Range<usize>, &QMatrix, &mut [f32]) + Sync + 'a>;

/// The kernel for weights of `kind`, on `inputs` quantized as it needs.
fn work<'a>(inputs: &'a Inputs, kind: GgmlType) -> Work<'a> {
    match kind {
        kind if integer(kind) => {
            let (rows, kernel) =
                if kind == GgmlType::Q8_0 { (inputs.for_q8_0(), q8_0_kernel().0) } else { (inputs.q8(), q4_kernel()) };
            Box::new(move |range, w, out| kernel(rows, range, w, out))
        }
        kind if k_quants::is_k_quant(kind) => {
            let rows = inputs.q8k();
            let kernel = k_quants::kernel();
            Box::new(move |range, w, out| kernel(rows, range, w, out))
        }
        _ => {
            let (x, k) = (inputs.x, inputs.k);
            Box::new(move |range: Range<usize>, w, out| {
                float::matmul_dequantized(&x[range.start * k..range.end * k], w, out)
            })
        }
    }
}

/// `out = x · wᵀ`, on the kernel of `w`'s type.
fn product(inputs: &Inputs, w: &QMatrix, out: &mut [f32]) {
    let (x, k, n) = (inputs.x, w.cols, w.rows);
    assert!(x.len().is_multiple_of(k) && out.len() == x.len() / k * n, "matmul shapes");
    let m = x.len() / k;
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    if w.kind == GgmlType::Q8_0 && m >= PREPACK_ROWS {
        // The relaxed module's products of many rows are its Q8_0 trial.
        let rows = inputs.for_q8_0();
        let packed = pack_q8_0(w).expect("the relaxed packer packs every Q8_0 matrix");
        return Q8_0_TRIAL.run((n, k), m, |candidate| match candidate {
            FUSED_DOT => by_rows(out, n, &|range, out| q8_0_packed_matmul(rows, range, &packed, out)),
            _ => by_rows(out, n, &|range, out| wasm_relaxed::matmul_packed_split(rows, range, &packed, out)),
        });
    }
    #[cfg(target_arch = "x86_64")]
    if w.kind == GgmlType::Q8_0
        && m >= PREPACK_ROWS
        && let Some(packed) = pack_q8_0(w)
    {
        let rows = inputs.for_q8_0();
        return by_rows(out, n, &|range, out| q8_0_packed_matmul(rows, range, &packed, out));
    }
    let work = work(inputs, w.kind);
    // Up to a task per core, split the weight rows instead: 81 prompt
    // tokens as tasks of 64 and 17 rows left one core idle most of the
    // product.
    if m <= TASK_ROWS * parallel::workers() {
        by_columns(m, w, out, &work);
    } else {
        by_rows(out, n, &|range, out| work(range, w, out));
    }
}

/// Tasks of [`TASK_ROWS`] activation rows each, over the cores.
fn by_rows(out: &mut [f32], n: usize, work: &(dyn Fn(Range<usize>, &mut [f32]) + Sync)) {
    parallel::chunks_mut(out, TASK_ROWS * n, |task, out| {
        let first = task * TASK_ROWS;
        work(first..first + out.len() / n, out);
    });
}

/// Weight rows a task of [`by_columns`] takes: a few tasks a core, so a
/// core that starts late still gets its share.
fn rows_per_task(n: usize) -> usize {
    n.div_ceil(4 * parallel::workers()).next_multiple_of(16)
}

/// One activation row against each matrix, into its output (`w.rows`
/// values): every product cut into pieces of [`rows_per_task`] weight
/// rows, all the pieces in one parallel step.
fn one_row_products<'a>(products: impl Iterator<Item = (&'a Work<'a>, &'a QMatrix<'a>, &'a mut [f32])>) {
    let mut tasks = Vec::new();
    for (work, w, out) in products {
        let per_task = rows_per_task(w.rows);
        for (i, out) in out.chunks_mut(per_task).enumerate() {
            let first = i * per_task;
            tasks.push((work, w.row_range(first..first + out.len()), out));
        }
    }
    parallel::chunks_mut(&mut tasks, 1, |_, task| {
        let (work, w, out) = &mut task[0];
        work(0..1, w, out);
    });
}

/// Tasks of a few weight rows each, over the cores: with fewer activation
/// rows than a task (a decoded token), splitting the rows would leave
/// every core but one idle.
fn by_columns(m: usize, w: &QMatrix, out: &mut [f32], work: &Work) {
    if m == 1 {
        return one_row_products(std::iter::once((work, w, out)));
    }
    let n = w.rows;
    let per_task = rows_per_task(n);
    let starts: Vec<usize> = (0..n).step_by(per_task).collect();
    let parts = parallel::map(&starts, |&c| {
        let part = w.row_range(c..(c + per_task).min(n));
        let mut y = vec![0f32; m * part.rows];
        work(0..m, &part, &mut y);
        Ok(y)
    })
    .expect("products do not fail");
    for (c, part) in starts.into_iter().zip(parts) {
        let width = part.len() / m;
        for (out, part) in out.chunks_exact_mut(n).zip(part.chunks_exact(width)) {
            out[c..c + width].copy_from_slice(part);
        }
    }
}

fn add_bias(bias: Option<&[f32]>, n: usize, out: &mut [f32]) {
    if let Some(bias) = bias {
        for row in out.chunks_exact_mut(n) {
            row.iter_mut().zip(bias).for_each(|(y, b)| *y += b);
        }
    }
}

/// Multiplies activation rows `rows` with every row of a Q8_0 matrix into
/// `out` (`rows.len() × w.rows`).
type Q8Kernel = fn(&QuantizedRows, Range<usize>, &QMatrix, &mut [f32]);

fn q8_0_kernel() -> (Q8Kernel, &'static str) {
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = x86::q8_0_kernel() {
        return kernel;
    }
    #[cfg(target_arch = "aarch64")]
    {
        arm::q8_0_kernel()
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    match Q8_0_TRIAL.winner() {
        Some(SPLIT_DOT) => {
            (wasm_relaxed::q8_0_matmul_split, "WebAssembly relaxed SIMD (Q8_0's dot product split: faster on this CPU)")
        }
        // Said at load, before any product: the page's device line.
        None if race::trials_run() => (wasm_relaxed::q8_0_matmul, "WebAssembly relaxed SIMD (Q8_0 kernels on trial)"),
        _ => (wasm_relaxed::q8_0_matmul, "WebAssembly relaxed SIMD"),
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", not(feature = "relaxed-simd")))]
    {
        (wasm::q8_0_matmul, "WebAssembly SIMD")
    }
    #[cfg(not(any(target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    {
        (scalar::q8_0_matmul, "portable code")
    }
}

/// The relaxed module's Q8_0 kernels, on trial (see [`race`]): its
/// products of [`PREPACK_ROWS`] rows or more take turns on the packed
/// kernel with relaxed SIMD's fused 8-bit dot product ([`FUSED_DOT`], the
/// default) and with that product split in two steps ([`SPLIT_DOT`]:
/// three instructions where V8 lowers the fused one to five, on x86
/// without AVX-VNNI) until one is known to be faster on this CPU, which
/// then runs every Q8_0 product. Both give the scalar kernel's results
/// bit for bit, so the trial changes speed alone.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
static Q8_0_TRIAL: race::Trial = race::Trial::new();
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
const FUSED_DOT: usize = 0;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
const SPLIT_DOT: usize = 1;

/// The widest Q4_0/Q4_1 kernel this CPU runs.
fn q4_kernel() -> Q8Kernel {
    #[cfg(target_arch = "x86_64")]
    if let Some(kernel) = x86::q4_kernel() {
        return kernel;
    }
    #[cfg(target_arch = "aarch64")]
    {
        arm::q4_kernel()
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
    {
        wasm_relaxed::q4_matmul
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128", not(feature = "relaxed-simd")))]
    {
        wasm::q4_matmul
    }
    #[cfg(not(any(target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    {
        scalar::q4_matmul
    }
}

/// What the quantized products run on here (`AVX-512 VNNI`, `AVX2`,
/// `portable code`), for reports.
pub fn instruction_set() -> &'static str {
    q8_0_kernel().1
}

#[cfg(test)]
pub(crate) mod tests;
