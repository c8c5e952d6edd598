// out[m×n] = x[m×k] · wᵀ (+ bias) for a few rows of x (a decoded token,
// a prompt of a few tokens): matmul.wgsl computes 128 rows of x a
// tile, all but one of them wasted on a single row. Here a workgroup
// takes ROWS weight rows; its threads walk k eight values at a time
// (consecutive threads reading consecutive values of a row), multiply
// them into each row of x, and their partial sums meet in workgroup
// memory. Weights are decoded by formats.wgsl, as the matmul's are.

const THREADS: u32 = 64u;
// Weight rows a workgroup computes.
const ROWS: u32 = 4u;
// Rows of x a dispatch takes at most (gpu/backend.rs's MATVEC_ROWS).
const MAX_M: u32 = 4u;

var<workgroup> partial: array<f32, 1024>; // [x row × weight row][thread]

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) index: u32,
) {
    let first_row = (group.y * groups.x + group.x) * ROWS;
    // Zeroed by hand (attention.wgsl says why).
    var acc: array<f32, 16>; // [x row][weight row]
    for (var a = 0u; a < MAX_M * ROWS; a++) {
        acc[a] = 0.0;
    }
    let quads = p.k / 4u;
    for (var c = index; c < p.k / 8u; c += THREADS) {
        let block = c / 4u;
        let first = (c % 4u) * 8u;
        for (var r = 0u; r < ROWS; r++) {
            let row = first_row + r;
            if row < p.n {
                let w = eight_values(p.format, p.k, row, block, first);
                let low = vec4<f32>(w[0], w[1], w[2], w[3]);
                let high = vec4<f32>(w[4], w[5], w[6], w[7]);
                for (var i = 0u; i < MAX_M; i++) {
                    if i < p.m {
                        let at = i * quads + 2u * c;
                        acc[i * ROWS + r] += dot(x[at], low) + dot(x[at + 1u], high);
                    }
                }
            }
        }
    }
    for (var a = 0u; a < MAX_M * ROWS; a++) {
        partial[a * THREADS + index] = acc[a];
    }
    workgroupBarrier();
    if index < MAX_M * ROWS {
        let i = index / ROWS;
        let row = first_row + index % ROWS;
        if i < p.m && row < p.n {
            var sum = 0.0;
            for (var t = 0u; t < THREADS; t++) {
                sum += partial[index * THREADS + t];
            }
            if p.has_bias != 0u {
                sum += bias[row];
            }
            out[i * p.n + row] = sum;
        }
    }
}
