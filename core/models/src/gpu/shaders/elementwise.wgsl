// Element-wise maps in place over `count` values: x += y, GELU (ggml's
// tanh form), GELU or SiLU gates (x = act(x) · y), rounding to f16,
// scaling, and adding one row of `width` values (y) to every row.

struct Params {
    count: u32,
    // 0 add, 1 gelu, 2 gelu gate, 3 silu gate, 4 round to f16, 5 scale,
    // 6 add a row
    op: u32,
    width: u32,
    factor: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;

fn gelu(v: f32) -> f32 {
    let t = 0.7978846 * v * (1.0 + 0.044715 * v * v);
    // tanh(t) = 1 − 2 / (e^{2t} + 1), which saturates instead of
    // overflowing for large |t|.
    return 0.5 * v * (2.0 - 2.0 / (exp(2.0 * t) + 1.0));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = id.y * groups.x * 256u + id.x;
    if i >= p.count {
        return;
    }
    let v = x[i];
    switch p.op {
        case 0u: { x[i] = v + y[i]; }
        case 1u: { x[i] = gelu(v); }
        case 2u: { x[i] = gelu(v) * y[i]; }
        case 3u: { x[i] = v / (1.0 + exp(-v)) * y[i]; }
        case 4u: { x[i] = round_to_f16(v); }
        case 5u: { x[i] = v * p.factor; }
        default: { x[i] = v + y[i % p.width]; }
    }
}
