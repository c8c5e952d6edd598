// out[m×n] = x[m×k] · wᵀ (+ bias), w as the GPU keeps a GGUF matrix
// (gpu/weights.rs): its values packed in u32 words, the scales (and
// Q4_1's minimums) of each 32-value block in `scales`. Each block is
// dequantized into workgroup memory as the tile reaches it; the weights
// stay quantized in GPU memory.
//
// A 16×16 workgroup computes a 64×64 tile of out, 4×4 values a thread,
// walking k one 32-value block at a time. The tiles' rows are STRIDE
// (33) values apart, not 32: the 16 threads of a row reading the same
// k of 16 different weight rows then hit 16 different memory banks
// rather than one (a 16-way conflict that serialised every read).

struct Params {
    m: u32,
    n: u32,
    k: u32,
    // 0 F32, 1 F16, 2 Q8_0, 3 Q4_0, 4 Q4_1
    format: u32,
    has_bias: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const TILE: u32 = 64u;
const BLOCK: u32 = 32u;
const STRIDE: u32 = 33u;

var<workgroup> x_tile: array<f32, 2112>; // TILE rows × STRIDE
var<workgroup> w_tile: array<f32, 2112>; // TILE weight rows × STRIDE

// Eight values of weight row `row`, block `block`, from value `first`.
fn load_eight(row: u32, block: u32, first: u32, into: u32) {
    let at = row * p.k + block * BLOCK + first; // index of the first value
    let blocks_per_row = p.k / BLOCK;
    switch p.format {
        case 0u: {
            for (var e = 0u; e < 8u; e++) {
                w_tile[into + e] = bitcast<f32>(values[at + e]);
            }
        }
        case 1u: {
            for (var e = 0u; e < 8u; e += 2u) {
                let pair = unpack2x16float(values[(at + e) / 2u]);
                w_tile[into + e] = pair.x;
                w_tile[into + e + 1u] = pair.y;
            }
        }
        case 2u: {
            let d = scales[row * blocks_per_row + block];
            for (var e = 0u; e < 8u; e += 4u) {
                let word = i32(values[(at + e) / 4u]);
                for (var b = 0u; b < 4u; b++) {
                    w_tile[into + e + b] = d * f32(extractBits(word, 8u * b, 8u));
                }
            }
        }
        case 3u: {
            let d = scales[row * blocks_per_row + block];
            let word = values[at / 8u];
            for (var e = 0u; e < 8u; e++) {
                w_tile[into + e] = d * (f32(extractBits(word, 4u * e, 4u)) - 8.0);
            }
        }
        default: {
            let s = 2u * (row * blocks_per_row + block);
            let d = scales[s];
            let minimum = scales[s + 1u];
            let word = values[at / 8u];
            for (var e = 0u; e < 8u; e++) {
                w_tile[into + e] = d * f32(extractBits(word, 4u * e, 4u)) + minimum;
            }
        }
    }
}

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_id) local: vec3<u32>,
    @builtin(local_invocation_index) index: u32,
) {
    let row0 = group.y * TILE;
    let col0 = group.x * TILE;
    var acc: array<f32, 16>;
    let blocks = p.k / BLOCK;
    for (var block = 0u; block < blocks; block++) {
        for (var i = 0u; i < 8u; i++) {
            let e = index + i * 256u;
            let r = row0 + e / BLOCK;
            var value = 0.0;
            if r < p.m {
                value = x[r * p.k + block * BLOCK + e % BLOCK];
            }
            x_tile[(e / BLOCK) * STRIDE + e % BLOCK] = value;
        }
        let w_row = index / 4u;
        let first = (index % 4u) * 8u;
        let into = w_row * STRIDE + first;
        if col0 + w_row < p.n {
            load_eight(col0 + w_row, block, first, into);
        } else {
            for (var e = 0u; e < 8u; e++) {
                w_tile[into + e] = 0.0;
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BLOCK; kk++) {
            var a: array<f32, 4>;
            var b: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                a[i] = x_tile[(local.y + 16u * i) * STRIDE + kk];
                b[i] = w_tile[(local.x + 16u * i) * STRIDE + kk];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = fma(a[i], b[j], acc[i * 4u + j]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + local.y + 16u * i;
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + local.x + 16u * j;
            if r < p.m && c < p.n {
                var value = acc[i * 4u + j];
                if p.has_bias != 0u {
                    value += bias[c];
                }
                out[r * p.n + c] = value;
            }
        }
    }
}
