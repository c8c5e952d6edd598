// The GPU's weight formats (gpu/layout.rs), decoded: shared by the
// kernels that read a model's matrices (matmul, gather), which declare
// the `values` (u32 words) and `scales` (f32, one or two per 32-value
// block) bindings this reads.

const BLOCK: u32 = 32u;

// Eight values of row `row` of a matrix of `cols` columns in `format`
// (0 F32, 1 F16, 2 Q8_0, 3 Q4_0, 4 Q4_1 and Q4_K, 5 Q5_K, 6 Q6_K, 7 BF16),
// from value `first` (a multiple of 8) of block `block`.
fn eight_values(format: u32, cols: u32, row: u32, block: u32, first: u32) -> array<f32, 8> {
    let at = row * cols + block * BLOCK + first; // index of the first value
    let blocks_per_row = cols / BLOCK;
    var out: array<f32, 8>;
    switch format {
        case 0u: {
            for (var e = 0u; e < 8u; e++) {
                out[e] = bitcast<f32>(values[at + e]);
            }
        }
        case 1u: {
            for (var e = 0u; e < 8u; e += 2u) {
                let pair = unpack2x16float(values[(at + e) / 2u]);
                out[e] = pair.x;
                out[e + 1u] = pair.y;
            }
        }
        case 2u: {
            let d = scales[row * blocks_per_row + block];
            for (var e = 0u; e < 8u; e += 4u) {
                let word = i32(values[(at + e) / 4u]);
                for (var b = 0u; b < 4u; b++) {
                    out[e + b] = d * f32(extractBits(word, 8u * b, 8u));
                }
            }
        }
        case 3u: {
            let d = scales[row * blocks_per_row + block];
            let word = values[at / 8u];
            for (var e = 0u; e < 8u; e++) {
                out[e] = d * (f32(extractBits(word, 4u * e, 4u)) - 8.0);
            }
        }
        case 5u: {
            // Per block, four words of nibbles, then one of fifth bits.
            let s = 2u * (row * blocks_per_row + block);
            let d = scales[s];
            let minimum = scales[s + 1u];
            let base = (at / BLOCK) * 5u;
            let word = values[base + first / 8u];
            let high = values[base + 4u];
            for (var e = 0u; e < 8u; e++) {
                let value = extractBits(word, 4u * e, 4u) | (extractBits(high, first + e, 1u) << 4u);
                out[e] = d * f32(value) + minimum;
            }
        }
        case 6u: {
            // Signed bytes; the block's halves have their own scales.
            let d = scales[2u * (row * blocks_per_row + block) + first / 16u];
            for (var e = 0u; e < 8u; e += 4u) {
                let word = i32(values[(at + e) / 4u]);
                for (var b = 0u; b < 4u; b++) {
                    out[e + b] = d * f32(extractBits(word, 8u * b, 8u));
                }
            }
        }
        case 7u: {
            for (var e = 0u; e < 8u; e += 2u) {
                let pair = values[(at + e) / 2u];
                out[e] = bitcast<f32>(pair << 16u);
                out[e + 1u] = bitcast<f32>(pair & 0xffff0000u);
            }
        }
        default: {
            let s = 2u * (row * blocks_per_row + block);
            let d = scales[s];
            let minimum = scales[s + 1u];
            let word = values[at / 8u];
            for (var e = 0u; e < 8u; e++) {
                out[e] = d * f32(extractBits(word, 4u * e, 4u)) + minimum;
            }
        }
    }
    return out;
}
