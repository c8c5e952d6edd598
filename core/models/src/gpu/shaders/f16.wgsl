// Rounding to f16 as the CPU rounds (shared by the kernels that need it).

// The nearest f16 (ties to even), as an f32. WGSL's pack2x16float leaves
// the rounding to the implementation.
fn round_to_f16(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    let exponent = (bits >> 23u) & 0xffu;
    if exponent == 255u {
        return v;
    }
    if exponent < 113u {
        // f16 subnormals: multiples of 2^-24 (round() ties to even).
        return round(v * 16777216.0) / 16777216.0;
    }
    let lsb = (bits >> 13u) & 1u;
    let rounded = bitcast<f32>((bits + 0xfffu + lsb) & 0xffffe000u);
    if abs(rounded) > 65504.0 {
        // Past f16's largest finite value: infinity, as the cast gives.
        return bitcast<f32>((bits & 0x80000000u) | 0x7f800000u);
    }
    return rounded;
}

