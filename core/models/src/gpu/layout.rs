//! A GGUF matrix in the layout `shaders/matmul.wgsl` reads: the values
//! packed in aligned u32 words (a Q8_0 block's 34 bytes are not), each
//! 32-value block's scale (and minimum) as f32 beside them. The values
//! keep their file's bits or close: Q8_0 stays 8 bits and Q4 4 bits a
//! value. The K-quants' super-blocks become 32-value blocks with their
//! group scales folded in (`d·s`, `−dmin·m`): Q4_K is then a Q4_1 matrix
//! (6 bits a value with its two f32, from 4.5), Q5_K nibbles plus a word
//! of fifth bits (7, from 5.5), Q6_K signed bytes with a scale per 16
//! values (10, from 6.6).

use crate::gguf::{GgmlType, half_at};
use crate::kernels::QMatrix;
use crate::kernels::k_quants::blocks;

/// The shader's weight formats (`Params.format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    F32 = 0,
    F16 = 1,
    Q8_0 = 2,
    Q4_0 = 3,
    Q4_1 = 4,
    /// Q5_K: per 32 values, four words of nibbles and one of fifth bits.
    Q5 = 5,
    /// Q6_K: signed bytes, a scale per 16 values.
    Q6 = 6,
    BF16 = 7,
}

pub struct PackedMatrix {
    pub format: Format,
    pub values: Vec<u32>,
    /// Per block of 32 values: its scale (Q8_0, Q4_0), its scale and
    /// minimum (Q4_1, Q5), or the scales of its two halves (Q6); empty
    /// for float formats.
    pub scales: Vec<f32>,
}

/// 32 nibbles of a Q4 block (`qs[j]` holds value j low, j + 16 high) as
/// four words of eight values in order, value e at bits 4·(e % 8).
fn nibble_words(qs: &[u8], out: &mut Vec<u32>) {
    let nibble = |e: usize| if e < 16 { qs[e] & 0x0f } else { qs[e - 16] >> 4 };
    nibbles_in_order(&std::array::from_fn::<u8, 32, _>(nibble), out);
}

/// The low nibbles of 32 values as four words, value e at bits 4·(e % 8).
fn nibbles_in_order(values: &[u8], out: &mut Vec<u32>) {
    for eight in values.chunks_exact(8) {
        out.push(eight.iter().enumerate().fold(0u32, |acc, (e, &v)| acc | u32::from(v & 0x0f) << (4 * e)));
    }
}

/// Four values a word, as bytes.
fn byte_words(values: impl Iterator<Item = u8>, out: &mut Vec<u32>) {
    let bytes: Vec<u8> = values.collect();
    out.extend(bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
}

/// A K-quant matrix as 32-value blocks (see the module's comment).
fn pack_k_quant(m: &QMatrix) -> PackedMatrix {
    let blocks = m.data.chunks_exact(m.kind.block_bytes());
    let (mut values, mut scales) = (Vec::new(), Vec::new());
    for block in blocks {
        let s = blocks::scales(m.kind, block);
        let v = blocks::values(m.kind, block);
        for (j, v) in v.chunks_exact(32).enumerate() {
            let (first, second) = (s.scales[2 * j], s.scales[2 * j + 1]);
            match m.kind {
                GgmlType::Q6_K => {
                    scales.extend([s.d * f32::from(first), s.d * f32::from(second)]);
                    byte_words(v.iter().map(|&v| (v as i8 - 32) as u8), &mut values);
                }
                _ => {
                    scales.extend([s.d * f32::from(first), -(s.dmin * f32::from(s.offsets[2 * j]))]);
                    nibbles_in_order(v, &mut values);
                    if m.kind == GgmlType::Q5_K {
                        values.push(v.iter().enumerate().fold(0u32, |acc, (e, &v)| acc | u32::from(v >> 4) << e));
                    }
                }
            }
        }
    }
    let format = match m.kind {
        GgmlType::Q4_K => Format::Q4_1,
        GgmlType::Q5_K => Format::Q5,
        _ => Format::Q6,
    };
    PackedMatrix { format, values, scales }
}

pub fn pack(m: &QMatrix) -> PackedMatrix {
    let data = m.data;
    let words = |bytes: &[u8]| -> Vec<u32> {
        bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
    };
    match m.kind {
        GgmlType::F32 => PackedMatrix { format: Format::F32, values: words(data), scales: Vec::new() },
        GgmlType::F16 => PackedMatrix { format: Format::F16, values: words(data), scales: Vec::new() },
        GgmlType::Q8_0 => {
            let blocks = data.chunks_exact(m.kind.block_bytes());
            let scales = blocks.clone().map(|b| half_at(b, 0)).collect();
            let values = blocks.flat_map(|b| words(&b[2..])).collect();
            PackedMatrix { format: Format::Q8_0, values, scales }
        }
        GgmlType::Q4_0 => {
            let mut values = Vec::with_capacity(data.len() / 18 * 4);
            let mut scales = Vec::with_capacity(data.len() / 18);
            for block in data.chunks_exact(m.kind.block_bytes()) {
                scales.push(half_at(block, 0));
                nibble_words(&block[2..], &mut values);
            }
            PackedMatrix { format: Format::Q4_0, values, scales }
        }
        GgmlType::Q4_1 => {
            let mut values = Vec::with_capacity(data.len() / 20 * 4);
            let mut scales = Vec::with_capacity(data.len() / 20 * 2);
            for block in data.chunks_exact(m.kind.block_bytes()) {
                scales.extend([half_at(block, 0), half_at(block, 2)]);
                nibble_words(&block[4..], &mut values);
            }
            PackedMatrix { format: Format::Q4_1, values, scales }
        }
        GgmlType::BF16 => PackedMatrix { format: Format::BF16, values: words(data), scales: Vec::new() },
        GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => pack_k_quant(m),
    }
}

/// Value `(r, c)` as the shader reads it from `packed` (`cols` a row):
/// what the tests check the packing against.
#[cfg(test)]
pub fn read(packed: &PackedMatrix, cols: usize, r: usize, c: usize) -> f32 {
    let at = r * cols + c;
    let block = at / 32;
    let nibble = |word: u32| ((word >> (4 * (at % 8))) & 0xf) as f32;
    match packed.format {
        Format::F32 => f32::from_bits(packed.values[at]),
        Format::F16 => half::f16::from_bits((packed.values[at / 2] >> (16 * (at % 2))) as u16).to_f32(),
        Format::BF16 => f32::from_bits((packed.values[at / 2] >> (16 * (at % 2))) << 16),
        Format::Q8_0 => packed.scales[block] * f32::from((packed.values[at / 4] >> (8 * (at % 4))) as u8 as i8),
        Format::Q4_0 => packed.scales[block] * (((packed.values[at / 8] >> (4 * (at % 8))) & 0xf) as f32 - 8.0),
        Format::Q4_1 => packed.scales[2 * block] * nibble(packed.values[at / 8]) + packed.scales[2 * block + 1],
        Format::Q5 => {
            let (word, high) = (packed.values[block * 5 + at % 32 / 8], packed.values[block * 5 + 4]);
            let value = nibble(word) + 16.0 * ((high >> (at % 32)) & 1) as f32;
            packed.scales[2 * block] * value + packed.scales[2 * block + 1]
        }
        Format::Q6 => {
            let value = f32::from((packed.values[at / 4] >> (8 * (at % 4))) as u8 as i8);
            packed.scales[2 * block + at % 32 / 16] * value
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::tests::random_matrix;

    /// Every type's packing reads back as the file's values.
    #[test]
    fn packed_values_read_back_as_the_files_values() {
        let (rows, cols) = (3, 256);
        for kind in [
            GgmlType::F32,
            GgmlType::F16,
            GgmlType::BF16,
            GgmlType::Q8_0,
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q4_K,
            GgmlType::Q5_K,
            GgmlType::Q6_K,
        ] {
            let bytes = random_matrix(kind, rows, cols, 11);
            let m = QMatrix { kind, rows, cols, data: &bytes };
            let packed = pack(&m);
            let mut row = vec![0f32; cols];
            for r in 0..rows {
                m.dequantize_row(r, &mut row);
                for (c, &want) in row.iter().enumerate() {
                    let got = read(&packed, cols, r, c);
                    assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{kind:?} ({r}, {c}): {got} vs {want}");
                }
            }
        }
    }
}
