// out[m×n] = x[m×k] · wᵀ (+ bias), w as the GPU keeps a GGUF matrix
// (gpu/layout.rs, decoded by formats.wgsl): its values packed in u32
// words, the scales (and Q4_1's minimums) of each 32-value block in
// `scales`. Each block is dequantized into workgroup memory as the tile
// reaches it; the weights stay quantized in GPU memory.
//
// A 16×16 workgroup computes a 128×128 tile of out, 8×8 values a
// thread, walking k one 32-value block at a time. The tiles are held
// k-major (`tile[kk][row]`), so a thread reads its 4 consecutive rows (or
// columns) as one vec4 and the 16 threads of a warp row read 256
// consecutive bytes: no bank conflicts, and 4 reads feed 64 fmas (the
// 64×64 tile of 4×4 a thread was bound by workgroup-memory reads).

struct Params {
    m: u32,
    n: u32,
    k: u32,
    // 0 F32, 1 F16, 2 Q8_0, 3 Q4_0, 4 Q4_1
    format: u32,
    has_bias: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>; // k is a multiple of 32
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const TILE: u32 = 128u;

var<workgroup> x_tile: array<vec4<f32>, 1024>; // BLOCK × TILE rows / 4
var<workgroup> w_tile: array<vec4<f32>, 1024>; // BLOCK × TILE weight rows / 4

// Stores `value` at k `kk` of the tile's row (or weight row) `row`.
fn put_x(kk: u32, row: u32, value: f32) {
    x_tile[kk * (TILE / 4u) + row / 4u][row % 4u] = value;
}

fn put_w(kk: u32, row: u32, value: f32) {
    w_tile[kk * (TILE / 4u) + row / 4u][row % 4u] = value;
}

// Eight values of weight row `row`, block `block`, from value `first`,
// into the tile's weight row `tile_row`.
fn load_eight(row: u32, block: u32, first: u32, tile_row: u32) {
    let decoded = eight_values(p.format, p.k, row, block, first);
    for (var e = 0u; e < 8u; e++) {
        put_w(first + e, tile_row, decoded[e]);
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
    // This thread's rows: 4 from local.y * 4 and 4 more 64 further; the
    // same for its columns with local.x.
    var acc: array<vec4<f32>, 16>; // [row i][column quad j] at 2i + j
    let blocks = p.k / BLOCK;
    let quads = p.k / 4u;
    for (var block = 0u; block < blocks; block++) {
        // The x tile: 128 rows × 8 quads of k, 4 quads a thread, read as
        // vec4 from rows of x (8 threads cover a row's 128 bytes).
        for (var i = 0u; i < 4u; i++) {
            let e = index + i * 256u;
            let r = e / 8u;
            let quad = e % 8u;
            var value = vec4<f32>(0.0);
            if row0 + r < p.m {
                value = x[(row0 + r) * quads + block * 8u + quad];
            }
            for (var c = 0u; c < 4u; c++) {
                put_x(quad * 4u + c, r, value[c]);
            }
        }
        // The weight tile: 2 threads a weight row, 16 values each.
        let w_row = index / 2u;
        let first = (index % 2u) * 16u;
        if col0 + w_row < p.n {
            load_eight(col0 + w_row, block, first, w_row);
            load_eight(col0 + w_row, block, first + 8u, w_row);
        } else {
            for (var e = 0u; e < 16u; e++) {
                put_w(first + e, w_row, 0.0);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BLOCK; kk++) {
            let at = kk * (TILE / 4u);
            let a0 = x_tile[at + local.y];
            let a1 = x_tile[at + 16u + local.y];
            let b0 = w_tile[at + local.x];
            let b1 = w_tile[at + 16u + local.x];
            for (var i = 0u; i < 4u; i++) {
                acc[2u * i] = fma(vec4<f32>(a0[i]), b0, acc[2u * i]);
                acc[2u * i + 1u] = fma(vec4<f32>(a0[i]), b1, acc[2u * i + 1u]);
                acc[8u + 2u * i] = fma(vec4<f32>(a1[i]), b0, acc[8u + 2u * i]);
                acc[8u + 2u * i + 1u] = fma(vec4<f32>(a1[i]), b1, acc[8u + 2u * i + 1u]);
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 8u; i++) {
        let r = row0 + (i / 4u) * 64u + local.y * 4u + i % 4u;
        if r >= p.m {
            continue;
        }
        for (var j = 0u; j < 2u; j++) {
            for (var c = 0u; c < 4u; c++) {
                let column = col0 + j * 64u + local.x * 4u + c;
                if column < p.n {
                    var value = acc[2u * i + j][c];
                    if p.has_bias != 0u {
                        value += bias[column];
                    }
                    out[column + r * p.n] = value;
                }
            }
        }
    }
}
