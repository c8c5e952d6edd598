//! Byte-level helpers shared by the segment writer and reader.

/// Appends `value` as a LEB128 varint.
pub fn put_vint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a LEB128 varint at `*pos`, advancing it. `None` on truncated input.
#[inline]
pub fn get_vint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_vint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub fn get_bytes<'a>(data: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(get_vint(data, pos)?).ok()?;
    let end = pos.checked_add(len)?;
    let bytes = data.get(*pos..end)?;
    *pos = end;
    Some(bytes)
}

pub fn u32_at(data: &[u8], index: usize) -> Option<u32> {
    let start = index.checked_mul(4)?;
    let bytes = data.get(start..start.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vint_round_trip() {
        let values = [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_vint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_vint(&buf, &mut pos), Some(v));
        }
        assert_eq!(get_vint(&buf, &mut pos), None);
        assert_eq!(get_vint(&[0x80], &mut 0), None, "truncated input is detected");
    }
}
