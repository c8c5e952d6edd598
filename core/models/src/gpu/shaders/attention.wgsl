// Self-attention of packed sequences. A workgroup takes one head and a
// block of up to 8 consecutive queries of one sequence: each key and
// value row it reads serves all 8 (one query per workgroup read every key
// once per query, and that traffic was most of a pass). Keys are scored
// 64 at a time into workgroup memory and folded into a running softmax
// per query (the running maximum rescales what was summed before it), so
// no score matrix is ever stored. Each thread keeps up to 4 of the head's
// output dimensions for each query (head_dim ≤ 256).

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
    // 1: llama.cpp's CPU flash attention for passes of few queries, key by
    // key with the values' running sum held in f16 (see `flash_f16.rs`).
    f16_sums: u32,
    // Rows of the sequence before `q`'s first (a KV cache's): `q` and
    // `out` hold the rows from there on, `k` and `v` every row.
    query_shift: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// Read four dimensions at a time (head_dim, widths and head offsets are
// multiples of 4).
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
// Per block: the sequence's first token, its length, the block's first
// position in it and its number of queries.
@group(0) @binding(4) var<storage, read> blocks: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const THREADS: u32 = 64u;
const QUERIES: u32 = 8u;
const LOW: f32 = -3.4e38;
// Threads a query's softmax step takes (THREADS / QUERIES).
const LANES: u32 = 8u;

var<workgroup> query: array<vec4<f32>, 512>; // QUERIES × head_dim / 4
var<workgroup> scores: array<f32, 512>; // QUERIES × THREADS keys
var<workgroup> lane_maxima: array<f32, 64>; // QUERIES × LANES
var<workgroup> lane_sums: array<f32, 64>; // QUERIES × LANES
var<workgroup> block_keys: vec2<u32>;

// The keys position `i` of a `len`-token sequence sees.
fn window(i: u32, len: u32) -> vec2<u32> {
    if p.window == 1u {
        return vec2<u32>(select(0u, i - p.half, i > p.half), min(i + p.half + 1u, len));
    }
    if p.window == 2u {
        return vec2<u32>(0u, i + 1u);
    }
    return vec2<u32>(0u, len);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) index: u32) {
    let head = group.x;
    let block = blocks[group.y];
    let start = block.x;
    let len = block.y;
    let first = block.z;
    let count = block.w;
    let kv_column = (head / p.group) * p.head_dim;
    if index == 0u {
        // Windows only move forward with the query.
        block_keys = vec2<u32>(window(first, len).x, window(first + count - 1u, len).y);
    }
    // Whole vec4s a thread (a store of one component can rewrite the
    // whole vector, racing the threads that store the others).
    let quads = p.head_dim / 4u;
    for (var e = index; e < QUERIES * quads; e += THREADS) {
        let i = e / quads;
        var value = vec4<f32>(0.0);
        if i < count {
            value = q[((start + first + i - p.query_shift) * p.q_width + head * p.head_dim) / 4u + e % quads];
        }
        query[e] = value;
    }
    // Uniform for the barriers in the loop below.
    let keys = workgroupUniformLoad(&block_keys);

    // Every thread keeps every query's running maximum and sum (the same
    // values in each), so no thread waits for another's rescale factor.
    let mine = index / LANES;
    let lane = index % LANES;
    var running_max: array<f32, 8>;
    var running_sum: array<f32, 8>;
    for (var i = 0u; i < QUERIES; i++) {
        running_max[i] = LOW;
    }
    var acc: array<f32, 32>; // [query][dimension slot]
    for (var tile = keys.x; tile < keys.y; tile += THREADS) {
        let key = tile + index;
        // Zeroed by hand each tile: Chromium's WebGPU (Tint, SwiftShader)
        // kept the last tile's sums in a `var` declared in the loop.
        var dots: array<f32, 8>;
        for (var i = 0u; i < QUERIES; i++) {
            dots[i] = 0.0;
        }
        if key < keys.y {
            let row = ((start + key) * p.kv_width + kv_column) / 4u;
            for (var d = 0u; d < quads; d++) {
                let kd = k[row + d];
                for (var i = 0u; i < QUERIES; i++) {
                    dots[i] += dot(query[i * quads + d], kd);
                }
            }
        }
        for (var i = 0u; i < QUERIES; i++) {
            let seen = window(first + i, len);
            var score = LOW;
            if key < keys.y && i < count && key >= seen.x && key < seen.y {
                score = dots[i] * p.scale;
            }
            scores[i * THREADS + index] = score;
        }
        workgroupBarrier();
        let in_tile = min(THREADS, keys.y - tile);
        if p.f16_sums == 1u {
            // Each thread walks the tile's keys in order for its
            // dimensions of every query, as llama.cpp does: the largest
            // score so far, the sum rescaled when it moves, each value
            // added at e^(s − max), the sum rounded to f16 after each step.
            for (var t = 0u; t < in_tile; t++) {
                for (var i = 0u; i < QUERIES; i++) {
                    let s = scores[i * THREADS + t];
                    if s <= LOW {
                        continue;
                    }
                    var rescale = 1.0;
                    var weight = 1.0;
                    if s > running_max[i] {
                        rescale = exp(running_max[i] - s);
                        running_max[i] = s;
                    } else {
                        weight = exp(s - running_max[i]);
                    }
                    running_sum[i] = running_sum[i] * rescale + weight;
                    for (var j = 0u; j < 4u; j++) {
                        let d = index + j * THREADS;
                        if d < p.head_dim {
                            var sum = acc[i * 4u + j];
                            if rescale != 1.0 {
                                sum = round_to_f16(sum * rescale);
                            }
                            let vd = v[(start + tile + t) * p.kv_width + kv_column + d];
                            acc[i * 4u + j] = round_to_f16(fma(vd, weight, sum));
                        }
                    }
                }
            }
            workgroupBarrier();
            continue;
        }
        // The softmax step, LANES threads a query: each lane takes every
        // LANES-th score of its query's tile; the lanes' maximums and sums
        // meet in workgroup memory.
        var lane_max = LOW;
        for (var t = lane; t < in_tile; t += LANES) {
            lane_max = max(lane_max, scores[mine * THREADS + t]);
        }
        lane_maxima[index] = lane_max;
        workgroupBarrier();
        var new_max: array<f32, 8>;
        var correction: array<f32, 8>;
        for (var i = 0u; i < QUERIES; i++) {
            var tile_max = LOW;
            for (var l = 0u; l < LANES; l++) {
                tile_max = max(tile_max, lane_maxima[i * LANES + l]);
            }
            new_max[i] = max(running_max[i], tile_max);
            correction[i] = 0.0;
            if running_max[i] > LOW {
                correction[i] = exp(running_max[i] - new_max[i]);
            }
            running_max[i] = new_max[i];
        }
        var lane_sum = 0.0;
        for (var t = lane; t < in_tile; t += LANES) {
            let s = scores[mine * THREADS + t];
            var w = 0.0;
            if s > LOW {
                w = exp(s - new_max[mine]);
            }
            scores[mine * THREADS + t] = w;
            lane_sum += w;
        }
        lane_sums[index] = lane_sum;
        workgroupBarrier();
        for (var i = 0u; i < QUERIES; i++) {
            var sum = 0.0;
            for (var l = 0u; l < LANES; l++) {
                sum += lane_sums[i * LANES + l];
            }
            running_sum[i] = running_sum[i] * correction[i] + sum;
        }
        for (var j = 0u; j < 4u; j++) {
            let d = index + j * THREADS;
            if d < p.head_dim {
                var values: array<f32, 8>;
                for (var i = 0u; i < QUERIES; i++) {
                    values[i] = acc[i * 4u + j] * correction[i];
                }
                for (var t = 0u; t < in_tile; t++) {
                    let vd = v[(start + tile + t) * p.kv_width + kv_column + d];
                    for (var i = 0u; i < QUERIES; i++) {
                        values[i] = fma(scores[i * THREADS + t], vd, values[i]);
                    }
                }
                for (var i = 0u; i < QUERIES; i++) {
                    acc[i * 4u + j] = values[i];
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < count; i++) {
        for (var j = 0u; j < 4u; j++) {
            let d = index + j * THREADS;
            if d < p.head_dim {
                var value = acc[i * 4u + j] / running_sum[i];
                if p.f16_sums == 1u {
                    value = acc[i * 4u + j] * (1.0 / running_sum[i]);
                }
                out[(start + first + i - p.query_shift) * p.q_width + head * p.head_dim + d] = value;
            }
        }
    }
}
