// Self-attention of packed sequences, one workgroup per (query token,
// head): the query's keys are scored 64 at a time into workgroup memory
// and folded into a running softmax (the running maximum rescales what
// was summed before it), so no score matrix is ever stored. Each thread
// keeps up to 4 of the head's output dimensions (head_dim ≤ 256).

struct Params {
    q_width: u32,
    kv_width: u32,
    head_dim: u32,
    // Query heads per key/value head.
    group: u32,
    scale: f32,
    // 0 every key of the sequence, 1 keys within `half` on either side,
    // 2 the keys up to the query (causal)
    window: u32,
    half: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
// Per token: its sequence's first token and the sequence's length.
@group(0) @binding(4) var<storage, read> spans: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const THREADS: u32 = 64u;

var<workgroup> query: array<f32, 256>;
var<workgroup> weights: array<f32, 64>;
var<workgroup> partial: array<f32, 64>;
var<workgroup> keys: vec2<u32>;

fn reduce_max(index: u32, value: f32) -> f32 {
    partial[index] = value;
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride /= 2u) {
        if index < stride {
            partial[index] = max(partial[index], partial[index + stride]);
        }
        workgroupBarrier();
    }
    let result = partial[0];
    workgroupBarrier();
    return result;
}

fn reduce_sum(index: u32, value: f32) -> f32 {
    partial[index] = value;
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride /= 2u) {
        if index < stride {
            partial[index] += partial[index + stride];
        }
        workgroupBarrier();
    }
    let result = partial[0];
    workgroupBarrier();
    return result;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) index: u32) {
    let head = group.x;
    let token = group.y;
    let kv_column = (head / p.group) * p.head_dim;
    if index == 0u {
        let span = spans[token];
        let position = token - span.x;
        var first = 0u;
        var end = span.y;
        if p.window == 1u {
            first = select(0u, position - p.half, position > p.half);
            end = min(position + p.half + 1u, span.y);
        } else if p.window == 2u {
            end = position + 1u;
        }
        keys = vec2<u32>(span.x + first, span.x + end);
    }
    for (var d = index; d < p.head_dim; d += THREADS) {
        query[d] = q[token * p.q_width + head * p.head_dim + d];
    }
    // Uniform for the barriers in the loop below.
    let range = workgroupUniformLoad(&keys);

    var running_max = -3.4e38;
    var running_sum = 0.0;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var tile = range.x; tile < range.y; tile += THREADS) {
        let key = tile + index;
        var score = -3.4e38;
        if key < range.y {
            var dot = 0.0;
            let row = key * p.kv_width + kv_column;
            for (var d = 0u; d < p.head_dim; d++) {
                dot = fma(query[d], k[row + d], dot);
            }
            score = dot * p.scale;
        }
        let new_max = max(running_max, reduce_max(index, score));
        var weight = 0.0;
        if key < range.y {
            weight = exp(score - new_max);
        }
        weights[index] = weight;
        let correction = exp(running_max - new_max);
        running_sum = running_sum * correction + reduce_sum(index, weight);
        running_max = new_max;
        let count = min(THREADS, range.y - tile);
        for (var j = 0u; j < 4u; j++) {
            let d = index + j * THREADS;
            if d < p.head_dim {
                var value = acc[j] * correction;
                for (var t = 0u; t < count; t++) {
                    value = fma(weights[t], v[(tile + t) * p.kv_width + kv_column + d], value);
                }
                acc[j] = value;
            }
        }
        workgroupBarrier();
    }
    for (var j = 0u; j < 4u; j++) {
        let d = index + j * THREADS;
        if d < p.head_dim {
            out[token * p.q_width + head * p.head_dim + d] = acc[j] / running_sum;
        }
    }
}
