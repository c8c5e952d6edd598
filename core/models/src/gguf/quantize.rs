//! Weights written as llama.cpp's converter writes a Q8_0 file (gguf-py's
//! `quants.quantize`, ggml's `quantize_row_q8_0_ref`): per block of 32,
//! the scale `d = max|x| / 127` stored as f16 and the values rounded to
//! `x / d`, halves away from zero. The same bytes as the converter's, so a
//! repository quantized at load runs exactly as its converted file would.

use half::f16;

use super::GgmlType;

/// Values per Q8_0 block.
const BLOCK: usize = 32;

/// `values` appended to `out` as `kind` (F32 or Q8_0), or `None` when
/// that type cannot hold them (Q8_0 rows must be whole blocks).
pub fn append_as(kind: GgmlType, row: usize, values: &[f32], out: &mut Vec<u8>) -> Option<()> {
    match kind {
        GgmlType::F32 => out.extend(values.iter().flat_map(|v| v.to_le_bytes())),
        GgmlType::Q8_0 if row.is_multiple_of(BLOCK) && values.len().is_multiple_of(row) => quantize_q8_0(values, out),
        _ => return None,
    }
    Some(())
}

/// `values` (whole blocks) appended to `out` as Q8_0 blocks.
fn quantize_q8_0(values: &[f32], out: &mut Vec<u8>) {
    out.reserve(values.len() / BLOCK * 34);
    for block in values.chunks_exact(BLOCK) {
        let max = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = max / 127.0;
        let inverse = if d == 0.0 { 0.0 } else { 1.0 / d };
        out.extend_from_slice(&f16::from_f32(d).to_le_bytes());
        // `round` takes halves away from zero, as C's `roundf` and
        // gguf-py's `np_roundf`.
        out.extend(block.iter().map(|v| (v * inverse).round() as i8 as u8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::dequantize;

    #[test]
    fn q8_0_blocks_round_trip_within_half_a_step() {
        let values: Vec<f32> = (0..96).map(|i| ((i * 37) % 61) as f32 / 7.0 - 4.0).collect();
        let mut bytes = Vec::new();
        append_as(GgmlType::Q8_0, 32, &values, &mut bytes).unwrap();
        assert_eq!(bytes.len(), 3 * 34);
        let mut back = vec![0f32; 96];
        dequantize(GgmlType::Q8_0, &bytes, &mut back);
        for (block, (v, b)) in values.chunks(32).zip(back.chunks(32)).enumerate() {
            let step = v.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
            for (x, y) in v.iter().zip(b) {
                assert!((x - y).abs() <= step * 0.5 + 1e-3, "block {block}: {x} became {y}");
            }
        }
    }

    #[test]
    fn halves_round_away_from_zero_and_zero_blocks_stay_zero() {
        // max 127 gives d = 1: ±0.5 and ±2.5 are ties.
        let mut values = vec![0f32; 32];
        values[..5].copy_from_slice(&[127.0, 0.5, -0.5, 2.5, -2.5]);
        let mut bytes = Vec::new();
        append_as(GgmlType::Q8_0, 32, &values, &mut bytes).unwrap();
        assert_eq!(&bytes[2..7], &[127u8, 1, (-1i8) as u8, 3, (-3i8) as u8]);
        bytes.clear();
        append_as(GgmlType::Q8_0, 32, &[0.0; 32], &mut bytes).unwrap();
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn rows_that_are_not_whole_blocks_are_refused() {
        assert!(append_as(GgmlType::Q8_0, 48, &[1.0; 96], &mut Vec::new()).is_none());
        assert!(append_as(GgmlType::Q4_0, 32, &[1.0; 32], &mut Vec::new()).is_none());
        let mut bytes = Vec::new();
        append_as(GgmlType::F32, 3, &[1.0, -2.0, 0.5], &mut bytes).unwrap();
        assert_eq!(bytes.len(), 12);
    }
}
