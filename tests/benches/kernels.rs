//! Quantized matrix products on this CPU: each weight type's own kernel
//! (`kernels::matmul`) against the float path (the weights dequantized a
//! tile at a time, then `gemm`, in tasks of 64 activation rows: what
//! K-quants ran on before they had a kernel), measured in one run on the matrices of a
//! Qwen3-1.7B layer (qmd's query-expansion model): 2,048 wide, 6,144 in
//! the feed-forward. One activation row is a decoded token; 512 a prompt.
//! `cargo bench -p qmd-tests --bench kernels` (`BENCH_ROWS=1,16` picks the
//! row counts).

use std::time::Instant;

use qmd_core::gguf::GgmlType;
use qmd_core::kernels::{QMatrix, float, instruction_set, matmul};
use rayon::prelude::*;

/// `(name, outputs, inputs)` of the layer's matrices.
const SHAPES: [(&str, usize, usize); 3] = [("attn_q", 2048, 2048), ("ffn_up", 6144, 2048), ("ffn_down", 2048, 6144)];
const KINDS: [GgmlType; 6] =
    [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1];

/// Blocks of random bytes whose f16 factors are numbers from 2⁻¹⁰ to
/// 2⁻³ of either sign (random bytes there could be NaN).
fn random_matrix(kind: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let factors: &[usize] = match kind {
        GgmlType::Q8_0 | GgmlType::Q4_0 => &[0],
        GgmlType::Q6_K => &[208],
        _ => &[0, 2],
    };
    let mut bytes: Vec<u8> = (0..kind.bytes_for(cols).unwrap() * rows).map(|_| next() as u8).collect();
    for block in bytes.chunks_exact_mut(kind.block_bytes()) {
        for &at in factors {
            let random = next() as u16;
            let half = (random & 0x83FF) | ((5 + random % 8) << 10);
            block[at..at + 2].copy_from_slice(&half.to_le_bytes());
        }
    }
    bytes
}

/// The float path as `kernels::matmul` ran it for K-quants before they
/// had a kernel: tasks of 64 activation rows.
fn dequantized(x: &[f32], w: &QMatrix, out: &mut [f32]) {
    let (k, n) = (w.cols, w.rows);
    out.par_chunks_mut(64 * n).enumerate().for_each(|(task, out)| {
        let rows = out.len() / n;
        float::matmul_dequantized(&x[task * 64 * k..(task * 64 + rows) * k], w, out);
    });
}

/// Best seconds of `f` over repetitions lasting about 0.3 s.
fn best_time(mut f: impl FnMut()) -> f64 {
    f();
    let (mut best, started) = (f64::MAX, Instant::now());
    while started.elapsed().as_secs_f64() < 0.3 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let rows: Vec<usize> = std::env::var("BENCH_ROWS")
        .unwrap_or_else(|_| "1,16,128,512".into())
        .split(',')
        .map(|r| r.trim().parse().expect("BENCH_ROWS: row counts"))
        .collect();
    println!("# Quantized products, {} threads, {}", rayon::current_num_threads(), instruction_set());
    println!("Time of the whole layer's three matrices; float path = weights dequantized to f32, then gemm.\n");
    println!("| weights | rows | own kernel (ms) | float path (ms) | own kernel = | weights read (GB/s, own) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for kind in KINDS {
        let matrices: Vec<(Vec<u8>, usize, usize)> =
            SHAPES.iter().map(|&(_, n, k)| (random_matrix(kind, n, k), n, k)).collect();
        let bytes: usize = matrices.iter().map(|(b, _, _)| b.len()).sum();
        for &m in &rows {
            let (mut own, mut float) = (0.0, 0.0);
            for (data, n, k) in &matrices {
                let w = QMatrix { kind, rows: *n, cols: *k, data };
                let x: Vec<f32> = (0..m * k).map(|i| (i * 7919 % 1013) as f32 / 1013.0 - 0.5).collect();
                let mut out = vec![0f32; m * n];
                own += best_time(|| matmul(&x, &w, None, &mut out));
                float += best_time(|| dequantized(&x, &w, &mut out));
            }
            println!(
                "| {kind} | {m} | {:.3} | {:.3} | {:.2}× | {:.1} |",
                own * 1e3,
                float * 1e3,
                float / own,
                bytes as f64 / own / 1e9
            );
        }
    }
}
