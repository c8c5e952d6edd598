// Rows per sequence of packed sequences: the mean of each sequence's
// rows, or one chosen row of each (the first, the last), one thread per
// (sequence, column).

struct Params {
    sequences: u32,
    width: u32,
    // 0 the mean of each span's rows, 1 the row each span starts at
    op: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// Per output row: a span of x's rows (first row, length).
@group(0) @binding(2) var<storage, read> spans: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = id.y * groups.x * 256u + id.x;
    if i >= p.sequences * p.width {
        return;
    }
    let s = i / p.width;
    let c = i % p.width;
    let span = spans[s];
    if p.op == 1u {
        out[i] = x[span.x * p.width + c];
        return;
    }
    var sum = 0.0;
    for (var r = 0u; r < span.y; r++) {
        sum += x[(span.x + r) * p.width + c];
    }
    out[i] = sum / f32(max(span.y, 1u));
}
