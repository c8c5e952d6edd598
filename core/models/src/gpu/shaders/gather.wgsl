// Rows of a model's matrix by index (an embedding table's rows for the
// tokens of a pass), decoded to f32: out[t] = matrix[ids[t]]. A thread
// decodes 8 consecutive values of one row (formats.wgsl).

struct Params {
    count: u32,
    cols: u32,
    format: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let eights = p.cols / 8u;
    let i = id.y * groups.x * 256u + id.x;
    if i >= p.count * eights {
        return;
    }
    let t = i / eights;
    let first = (i % eights) * 8u;
    let decoded = eight_values(p.format, p.cols, ids[t], first / BLOCK, first % BLOCK);
    for (var e = 0u; e < 8u; e++) {
        out[t * p.cols + first + e] = decoded[e];
    }
}
