// Norms of rows: RMS (`x / sqrt(mean(x²) + eps) · weight`) or layer
// (`(x − mean) / sqrt(var + eps) · weight + bias`), `width` values a row
// (a whole state, or one head), in place. One workgroup per row.

struct Params {
    rows: u32,
    width: u32,
    eps: f32,
    // 0 RMS, 1 layer norm
    kind: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;

var<workgroup> partial: array<f32, 256>;

// The sum over the workgroup of each thread's `value`.
fn total(index: u32, value: f32) -> f32 {
    partial[index] = value;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride /= 2u) {
        if index < stride {
            partial[index] += partial[index + stride];
        }
        workgroupBarrier();
    }
    let sum = partial[0];
    workgroupBarrier();
    return sum;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) index: u32,
) {
    let row = group.y * groups.x + group.x;
    if row >= p.rows {
        return;
    }
    let base = row * p.width;
    let n = f32(p.width);
    var mean = 0.0;
    if p.kind == 1u {
        var sum = 0.0;
        for (var i = index; i < p.width; i += 256u) {
            sum += x[base + i];
        }
        mean = total(index, sum) / n;
    }
    var squares = 0.0;
    for (var i = index; i < p.width; i += 256u) {
        let d = x[base + i] - mean;
        squares += d * d;
    }
    let scale = 1.0 / sqrt(total(index, squares) / n + p.eps);
    for (var i = index; i < p.width; i += 256u) {
        var value = (x[base + i] - mean) * scale * weight[i];
        if p.kind == 1u {
            value += bias[i];
        }
        x[base + i] = value;
    }
}
