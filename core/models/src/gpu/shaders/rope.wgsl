// Rotary position embeddings in place on `[tokens × heads·head_dim]`,
// one thread per (token, head, pair). The (cos, sin) table is built on
// the CPU as ggml builds it, so the angles match it to the last bit.

struct Params {
    tokens: u32,
    heads: u32,
    head_dim: u32,
    // 0: dimension i with i + head_dim/2 (NEOX); 1: 2i with 2i + 1
    pairs: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
// Each token's position in its sequence.
@group(0) @binding(2) var<storage, read> positions: array<u32>;
// (cos, sin) per position and pair.
@group(0) @binding(3) var<storage, read> table: array<vec2<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let half = p.head_dim / 2u;
    let i = id.y * groups.x * 256u + id.x;
    if i >= p.tokens * p.heads * half {
        return;
    }
    let pair = i % half;
    let head = (i / half) % p.heads;
    let token = i / (half * p.heads);
    let angle = table[positions[token] * half + pair];
    let base = (token * p.heads + head) * p.head_dim;
    var a = base + pair;
    var b = base + pair + half;
    if p.pairs != 0u {
        a = base + 2u * pair;
        b = a + 1u;
    }
    let x0 = x[a];
    let x1 = x[b];
    x[a] = x0 * angle.x - x1 * angle.y;
    x[b] = x0 * angle.y + x1 * angle.x;
}
