//! A GGUF matrix in the layout `shaders/matmul.wgsl` reads: the values
//! packed in aligned u32 words (a Q8_0 block's 34 bytes are not), each
//! 32-value block's scale (and Q4_1's minimum) as f32 beside them. The
//! values keep their file's bits: 8-bit and 4-bit weights stay 8 and 4
//! bits on the GPU. Types the shader has no case for (BF16, the
//! K-quants) are stored as f16.

use half::f16;

use crate::gguf::{GgmlType, dequantize, half_at};
use crate::kernels::QMatrix;

/// The shader's weight formats (`Params.format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    F32 = 0,
    F16 = 1,
    Q8_0 = 2,
    Q4_0 = 3,
    Q4_1 = 4,
}

pub struct PackedMatrix {
    pub format: Format,
    pub values: Vec<u32>,
    /// Per block of 32 values: its scale (Q8_0, Q4_0), or its scale and
    /// minimum (Q4_1); empty for float formats.
    pub scales: Vec<f32>,
}

/// 32 nibbles of a Q4 block (`qs[j]` holds value j low, j + 16 high) as
/// four words of eight values in order, value e at bits 4·(e % 8).
fn nibble_words(qs: &[u8], out: &mut Vec<u32>) {
    let nibble = |e: usize| u32::from(if e < 16 { qs[e] & 0x0f } else { qs[e - 16] >> 4 });
    for word in 0..4 {
        out.push((0..8).fold(0u32, |acc, e| acc | nibble(word * 8 + e) << (4 * e)));
    }
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
        GgmlType::BF16 | GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K => {
            let mut row = vec![0f32; m.cols];
            let mut values = Vec::with_capacity(m.rows * m.cols / 2);
            for r in 0..m.rows {
                dequantize(m.kind, m.row(r), &mut row);
                values.extend(row.chunks_exact(2).map(|pair| {
                    u32::from(f16::from_f32(pair[0]).to_bits()) | u32::from(f16::from_f32(pair[1]).to_bits()) << 16
                }));
            }
            PackedMatrix { format: Format::F16, values, scales: Vec::new() }
        }
    }
}

/// Value `(r, c)` as the shader reads it from `packed` (`cols` a row):
/// what the tests check the packing against.
#[cfg(test)]
pub fn read(packed: &PackedMatrix, cols: usize, r: usize, c: usize) -> f32 {
    let at = r * cols + c;
    let block = at / 32;
    match packed.format {
        Format::F32 => f32::from_bits(packed.values[at]),
        Format::F16 => f16::from_bits((packed.values[at / 2] >> (16 * (at % 2))) as u16).to_f32(),
        Format::Q8_0 => packed.scales[block] * f32::from((packed.values[at / 4] >> (8 * (at % 4))) as u8 as i8),
        Format::Q4_0 => packed.scales[block] * (((packed.values[at / 8] >> (4 * (at % 8))) & 0xf) as f32 - 8.0),
        Format::Q4_1 => {
            packed.scales[2 * block] * ((packed.values[at / 8] >> (4 * (at % 8))) & 0xf) as f32
                + packed.scales[2 * block + 1]
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::tests::xorshift;

    /// A `rows × cols` matrix of `kind` with pseudo-random contents: random
    /// bytes are valid blocks once their f16 scales are set to sane values.
    pub fn random_matrix(kind: GgmlType, rows: usize, cols: usize, seed: u64) -> Vec<u8> {
        let mut next = xorshift(seed);
        let mut value = move || ((next() % 2001) as f32 - 1000.0) / 1000.0;
        let count = rows * cols;
        match kind {
            GgmlType::F32 => return (0..count).flat_map(|_| value().to_le_bytes()).collect(),
            GgmlType::F16 => return (0..count).flat_map(|_| f16::from_f32(value()).to_le_bytes()).collect(),
            GgmlType::BF16 => return (0..count).flat_map(|_| half::bf16::from_f32(value()).to_le_bytes()).collect(),
            _ => {}
        }
        let mut bytes: Vec<u8> = (0..kind.bytes_for(count).unwrap()).map(|_| (value() * 127.0) as i8 as u8).collect();
        // Offsets of the f16 scales (and minimums) in each block.
        let scale_offsets: &[usize] = match kind {
            GgmlType::Q6_K => &[208],
            GgmlType::Q8_0 | GgmlType::Q4_0 => &[0],
            _ => &[0, 2],
        };
        for block in bytes.chunks_exact_mut(kind.block_bytes()) {
            for &at in scale_offsets {
                block[at..at + 2].copy_from_slice(&f16::from_f32(value() / 20.0).to_le_bytes());
            }
        }
        bytes
    }

    /// Every type's packing reads back as the file's values (f16 for the
    /// types stored as f16).
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
                    let want = if packed.format == Format::F16 { f16::from_f32(want).to_f32() } else { want };
                    let got = read(&packed, cols, r, c);
                    assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{kind:?} ({r}, {c}): {got} vs {want}");
                }
            }
        }
    }
}
