//! A K-quant super-block of 256 weights, read in one form for every type:
//! unsigned values `v` (0–63), a scale `s` and an offset `o` per 16
//! values, and two float factors, so that weight `i` of group `g` is
//! `d · s[g] · v[i] − dmin · o[g]`. A product with Q8_K activations is
//! then `d·dx · Σ_g s[g] Σ v·x  −  dmin·dx · Σ_g o[g] · sum[g]`, whatever
//! the type (ggml's `ggml_vec_dot_q{4,5,6}_K_q8_K` each spell this out).
//!
//! - Q4_K (`d`, `dmin`, 12 bytes of 6-bit scales and minimums, 128 bytes
//!   of nibbles): 8 groups of 32 share a scale and minimum.
//! - Q5_K: Q4_K with a fifth bit per value (32 bytes of high bits).
//! - Q6_K (128 bytes of low nibbles, 64 of 2-bit highs, 16 signed scales,
//!   `d`): values stored 32 above the weight, so the offset is `32 · s`.

use super::q8k_rows::{GROUP, SUPER};
use crate::gguf::dequant::scale_min_k4;
use crate::gguf::{GgmlType, half_at};

/// Groups of 16 per super-block.
pub const GROUPS: usize = SUPER / GROUP;

/// The per-group integers and the float factors of a super-block.
pub struct Scales {
    pub scales: [i16; GROUPS],
    pub offsets: [i16; GROUPS],
    pub d: f32,
    pub dmin: f32,
}

/// Whether `kind` is a K-quant these kernels read.
pub fn is_k_quant(kind: GgmlType) -> bool {
    matches!(kind, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K)
}

pub fn scales(kind: GgmlType, block: &[u8]) -> Scales {
    match kind {
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let packed = &block[4..16];
            let (mut scales, mut offsets) = ([0i16; GROUPS], [0i16; GROUPS]);
            for g in 0..GROUPS / 2 {
                let (s, m) = scale_min_k4(g, packed);
                scales[2 * g..2 * g + 2].fill(i16::from(s));
                offsets[2 * g..2 * g + 2].fill(i16::from(m));
            }
            Scales { scales, offsets, d: half_at(block, 0), dmin: half_at(block, 2) }
        }
        GgmlType::Q6_K => {
            let scales: [i16; GROUPS] = std::array::from_fn(|g| i16::from(block[192 + g] as i8));
            let d = half_at(block, 208);
            Scales { scales, offsets: scales.map(|s| 32 * s), d, dmin: d }
        }
        other => unreachable!("{other} is not a K-quant"),
    }
}

/// The 256 unsigned values of a super-block, in weight order.
pub fn values(kind: GgmlType, block: &[u8]) -> [u8; SUPER] {
    let mut v = [0u8; SUPER];
    match kind {
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let (qh, qs) =
                if kind == GgmlType::Q5_K { (&block[16..48], &block[48..176]) } else { (&[][..], &block[16..144]) };
            for (c, (q, v)) in qs.chunks_exact(32).zip(v.chunks_exact_mut(64)).enumerate() {
                for l in 0..32 {
                    let high = |bit: usize| qh.get(l).map_or(0, |h| ((h >> bit) & 1) << 4);
                    v[l] = (q[l] & 0xF) | high(2 * c);
                    v[l + 32] = (q[l] >> 4) | high(2 * c + 1);
                }
            }
        }
        GgmlType::Q6_K => {
            for half in 0..2 {
                let ql = &block[64 * half..][..64];
                let qh = &block[128 + 32 * half..][..32];
                let v = &mut v[128 * half..][..128];
                for l in 0..32 {
                    v[l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
                    v[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
                    v[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                    v[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                }
            }
        }
        other => unreachable!("{other} is not a K-quant"),
    }
    v
}
