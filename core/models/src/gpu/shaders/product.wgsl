// The bindings the matrix products share (matmul.wgsl, matvec.wgsl):
// out[m×n] = x[m×k] · wᵀ (+ bias), w as formats.wgsl decodes it.

struct Params {
    m: u32,
    n: u32,
    k: u32,
    // formats.wgsl's numbers
    format: u32,
    has_bias: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>; // k is a multiple of 32
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

