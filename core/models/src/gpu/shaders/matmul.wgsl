// out[m×n] = x[m×k] · wᵀ (+ bias), w as the GPU keeps a GGUF matrix
// (gpu/layout.rs, decoded by formats.wgsl): its values packed in u32
// words, the scales (and Q4_1's minimums) of each 32-value block in
// `scales`. Each block is dequantized into workgroup memory as the tile
// reaches it; the weights stay quantized in GPU memory.
//
// A 16×16 workgroup computes a 128×128 tile of out, 8×8 values a
// thread, walking k KSTEP values at a time: a whole 32-value block where
// the device gives a workgroup 32 KB, half a block where it gives only
// WebGPU's default 16 KB (gpu/context.rs picks; the tiles hold KSTEP ×
// 128 floats each). The tiles are held
// k-major (`tile[kk][row]`), so a thread reads its 4 consecutive rows (or
// columns) as one vec4 and the 16 threads of a warp row read 256
// consecutive bytes: no bank conflicts, and 4 reads feed 64 fmas (the
// 64×64 tile of 4×4 a thread was bound by workgroup-memory reads).

const TILE: u32 = 128u;
const KSTEP: u32 = 32u;

var<workgroup> x_tile: array<vec4<f32>, KSTEP * 32u>; // KSTEP × TILE rows / 4
var<workgroup> w_tile: array<vec4<f32>, KSTEP * 32u>; // KSTEP × TILE weight rows / 4

// Each thread writes whole vec4s of the tiles, never one component: a
// component store can be a read-modify-write of the whole vector
// (SwiftShader's is), and threads storing the other components of the
// same vector at once would undo each other's.

// Eight values of block `block` from value `first` of the weight rows
// `col0 + quad·4 …+3` into the weight tile from its row `slot` (zeros past
// the last row).
fn load_weights(col0: u32, quad: u32, block: u32, first: u32, slot: u32) {
    var rows: array<array<f32, 8>, 4>;
    for (var r = 0u; r < 4u; r++) {
        let row = col0 + quad * 4u + r;
        // Zeroed by hand, not by the declaration (attention.wgsl says why).
        rows[r] = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        if row < p.n {
            rows[r] = eight_values(p.format, p.k, row, block, first);
        }
    }
    for (var e = 0u; e < 8u; e++) {
        w_tile[(slot + e) * (TILE / 4u) + quad] = vec4<f32>(rows[0][e], rows[1][e], rows[2][e], rows[3][e]);
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
    let quads = p.k / 4u;
    for (var step = 0u; step < p.k / KSTEP; step++) {
        let block = step * KSTEP / BLOCK;
        let base = step * KSTEP % BLOCK; // where in the block this step starts
        // The x tile: a thread reads 4 rows × 4 values of k as vec4s and
        // stores them transposed.
        if index < 32u * (KSTEP / 4u) {
            let row_quad = index / (KSTEP / 4u);
            let k_quad = index % (KSTEP / 4u);
            var rows: array<vec4<f32>, 4>;
            for (var r = 0u; r < 4u; r++) {
                let row = row0 + row_quad * 4u + r;
                rows[r] = vec4<f32>(0.0);
                if row < p.m {
                    rows[r] = x[row * quads + step * (KSTEP / 4u) + k_quad];
                }
            }
            for (var c = 0u; c < 4u; c++) {
                x_tile[(k_quad * 4u + c) * (TILE / 4u) + row_quad] = vec4<f32>(rows[0][c], rows[1][c], rows[2][c], rows[3][c]);
            }
        }
        // The weight tile: 4 weight rows × 8 values a thread.
        if index < 32u * (KSTEP / 8u) {
            let slot = (index / 32u) * 8u;
            load_weights(col0, index % 32u, block, base + slot, slot);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KSTEP; kk++) {
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
