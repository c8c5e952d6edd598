//! Writes GGUF files from parts, so tests and the fuzzer can make model
//! files the converter never would: metadata counts past the tensors,
//! shapes that disagree, NaN weights. [`GgufParts::read`] takes a real
//! file apart, so a damaged copy of a real model is one edit away.

use qmd_core::gguf::{GgmlType, GgufFile, Value};

const ALIGNMENT: usize = 32;

/// One tensor: name, type, ggml dims (innermost first) and its bytes.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: String,
    pub kind: GgmlType,
    pub dims: Vec<u64>,
    pub data: Vec<u8>,
}

/// A GGUF file's metadata and tensors, in file order.
#[derive(Clone, Debug, Default)]
pub struct GgufParts {
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<Tensor>,
}

/// ggml's number of a type (the inverse of `GgmlType::from_id`).
pub fn type_id(kind: GgmlType) -> u32 {
    match kind {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::Q4_0 => 2,
        GgmlType::Q4_1 => 3,
        GgmlType::Q8_0 => 8,
        GgmlType::Q4_K => 12,
        GgmlType::Q5_K => 13,
        GgmlType::Q6_K => 14,
        GgmlType::BF16 => 30,
    }
}

impl GgufParts {
    /// The parts of a readable file.
    pub fn read(name: &str, bytes: &[u8]) -> qmd_core::Result<GgufParts> {
        let file = GgufFile::parse(name, bytes)?;
        let metadata = file.metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let tensors = file
            .tensors
            .iter()
            .map(|t| Tensor {
                name: t.name.clone(),
                kind: t.kind,
                dims: t.dims.iter().map(|&d| d as u64).collect(),
                data: bytes[t.range.clone()].to_vec(),
            })
            .collect();
        Ok(GgufParts { metadata, tensors })
    }

    /// Sets (or adds) a metadata value.
    pub fn set(&mut self, key: &str, value: Value) {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.metadata.push((key.to_string(), value)),
        }
    }

    pub fn tensor_mut(&mut self, name: &str) -> Option<&mut Tensor> {
        self.tensors.iter_mut().find(|t| t.name == name)
    }

    /// The file, GGUF v3, tensors aligned to 32 bytes.
    pub fn write(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend((self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            string(&mut out, key);
            out.extend(value_type(value).to_le_bytes());
            write_value(&mut out, value);
        }
        let mut offset = 0usize;
        for t in &self.tensors {
            string(&mut out, &t.name);
            out.extend((t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(type_id(t.kind).to_le_bytes());
            out.extend((offset as u64).to_le_bytes());
            offset += t.data.len().next_multiple_of(ALIGNMENT);
        }
        for t in &self.tensors {
            out.resize(out.len().next_multiple_of(ALIGNMENT), 0);
            out.extend(&t.data);
        }
        out
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

fn value_type(value: &Value) -> u32 {
    match value {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.push(*v as u8),
        Value::U16(v) => out.extend(v.to_le_bytes()),
        Value::I16(v) => out.extend(v.to_le_bytes()),
        Value::U32(v) => out.extend(v.to_le_bytes()),
        Value::I32(v) => out.extend(v.to_le_bytes()),
        Value::F32(v) => out.extend(v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            // An empty array's items are strings, as the converter writes them.
            out.extend(items.first().map_or(8, value_type).to_le_bytes());
            out.extend((items.len() as u64).to_le_bytes());
            items.iter().for_each(|item| write_value(out, item));
        }
        Value::U64(v) => out.extend(v.to_le_bytes()),
        Value::I64(v) => out.extend(v.to_le_bytes()),
        Value::F64(v) => out.extend(v.to_le_bytes()),
    }
}

/// `values` as F32 tensor bytes.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_the_same() {
        let mut parts = GgufParts::default();
        parts.set("general.architecture", Value::String("bert".into()));
        parts.set("a.list", Value::Array(vec![Value::String("x".into()), Value::String("y".into())]));
        parts.set("a.eps", Value::F32(1e-5));
        parts.tensors.push(Tensor {
            name: "w".into(),
            kind: GgmlType::F32,
            dims: vec![4, 2],
            data: f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
        });
        let bytes = parts.write();
        let again = GgufParts::read("t", &bytes).unwrap();
        assert_eq!(again.metadata, {
            let mut sorted = parts.metadata.clone();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            sorted
        });
        assert_eq!(again.tensors[0].data, parts.tensors[0].data);
        assert_eq!(again.tensors[0].dims, [4, 2]);
    }
}
