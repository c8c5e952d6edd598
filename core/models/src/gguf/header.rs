//! The header: magic, version, metadata and the tensor table.

use std::collections::BTreeMap;
use std::ops::Range;

use super::types::{GgmlType, Value};
use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"GGUF";
/// ggml's limit on a tensor's dimensions.
const MAX_DIMS: u32 = 4;
/// Nesting of arrays in metadata: GGUF files use one level; a file that
/// nests deeper is damaged, and a recursion bound keeps it from blowing
/// the stack.
const MAX_ARRAY_DEPTH: usize = 2;
/// Items of a metadata array reserved before they are read: the count is
/// checked against the bytes left, but a count of one-byte items would
/// still reserve 32 bytes of [`Value`] each; past this the vector grows
/// as items are actually read.
const MAX_RESERVED_ITEMS: usize = 4096;
const DEFAULT_ALIGNMENT: u64 = 32;

/// One tensor of the file: its name, type, shape and where its data is.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub kind: GgmlType,
    /// ggml's order: `dims[0]` is the innermost (a row's length).
    pub dims: Vec<usize>,
    /// Byte range of the data in the file.
    pub range: Range<usize>,
}

impl TensorInfo {
    pub fn values(&self) -> usize {
        self.dims.iter().product()
    }

    /// Length of a row (`dims[0]`) and number of rows (the rest).
    pub fn rows(&self) -> (usize, usize) {
        let row = self.dims.first().copied().unwrap_or(1);
        (row, self.values() / row.max(1))
    }
}

/// A parsed GGUF file over its bytes.
pub struct GgufFile<'a> {
    /// What errors call the file (its path or model URI).
    name: String,
    bytes: &'a [u8],
    pub version: u32,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: Vec<TensorInfo>,
}

impl<'a> GgufFile<'a> {
    /// Reads the header and tensor table; `name` is how errors call the
    /// file. Tensor data is checked to lie inside `bytes`, not read.
    pub fn parse(name: &str, bytes: &'a [u8]) -> Result<GgufFile<'a>> {
        let damaged = |what: String| Error::invalid(format!("{name}: not a readable GGUF file: {what}"));
        let mut cursor = Cursor { bytes, at: 0 };
        let magic = cursor.take(4).map_err(&damaged)?;
        if magic != MAGIC {
            return Err(damaged(format!("it does not start with 'GGUF' (found {:02x?})", magic)));
        }
        let version = cursor.u32().map_err(&damaged)?;
        if !(2..=3).contains(&version) {
            return Err(damaged(format!("GGUF version {version} is not supported (2 and 3 are)")));
        }
        let tensor_count = cursor.u64().map_err(&damaged)?;
        let kv_count = cursor.u64().map_err(&damaged)?;
        let mut metadata = BTreeMap::new();
        for i in 0..kv_count {
            let key = cursor.string().map_err(|e| damaged(format!("metadata entry {i}: {e}")))?;
            let kind = cursor.u32().map_err(|e| damaged(format!("metadata {key}: {e}")))?;
            let value = cursor.value(kind, 0).map_err(|e| damaged(format!("metadata {key}: {e}")))?;
            metadata.insert(key, value);
        }
        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a.is_power_of_two() => a,
                _ => return Err(damaged(format!("general.alignment {v:?} is not a power of two"))),
            },
        };
        // Each tensor entry takes at least 8 + 4 + 4 + 8 bytes.
        if tensor_count > (cursor.remaining() / 24) as u64 {
            return Err(damaged(format!("it claims {tensor_count} tensors, more than its size can hold")));
        }
        let mut entries = Vec::with_capacity(tensor_count as usize);
        for i in 0..tensor_count {
            let name = cursor.string().map_err(|e| damaged(format!("tensor {i}: {e}")))?;
            let entry = cursor.tensor_entry().map_err(|e| damaged(format!("tensor {name}: {e}")))?;
            entries.push((name, entry));
        }
        let data_start = align(cursor.at as u64, alignment)
            .filter(|&s| s <= bytes.len() as u64)
            .ok_or_else(|| damaged("it ends before its tensor data".into()))?;
        let mut tensors = Vec::with_capacity(entries.len());
        for (tensor_name, (dims, type_id, offset)) in entries {
            let problem = |what: String| damaged(format!("tensor {tensor_name}: {what}"));
            let kind = GgmlType::from_id(type_id).ok_or_else(|| {
                Error::invalid(format!(
                    "{name}: tensor {tensor_name} has type {}, which qmd-wasm cannot run \
                     (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)",
                    GgmlType::name_of(type_id)
                ))
            })?;
            if !offset.is_multiple_of(alignment) {
                return Err(problem(format!("its offset {offset} is not aligned to {alignment}")));
            }
            let values = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
            let size = values
                .filter(|&v| v <= usize::MAX as u64)
                .ok_or_else(|| problem(format!("its shape {dims:?} is too large")))?;
            if dims.first().is_some_and(|&row| !row.is_multiple_of(kind.block_values() as u64)) {
                return Err(problem(format!("its rows of {} values are not whole {kind} blocks", dims[0])));
            }
            let length = kind.bytes_for(size as usize).ok_or_else(|| problem("partial block".into()))? as u64;
            let start = data_start.checked_add(offset);
            let end = start.and_then(|s| s.checked_add(length));
            let (Some(start), Some(end)) = (start, end) else {
                return Err(problem("its offset is out of range".into()));
            };
            if end > bytes.len() as u64 {
                return Err(problem(format!(
                    "its data (bytes {start}..{end}) is past the end of the file ({} bytes): the file is truncated",
                    bytes.len()
                )));
            }
            tensors.push(TensorInfo {
                name: tensor_name,
                kind,
                dims: dims.iter().map(|&d| d as usize).collect(),
                range: start as usize..end as usize,
            });
        }
        Ok(GgufFile { name: name.to_string(), bytes, version, metadata, tensors })
    }

    /// How errors call the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The model's architecture (`general.architecture`: "bert", "gemma3",
    /// "qwen3" …).
    pub fn architecture(&self) -> Result<&str> {
        self.metadata
            .get("general.architecture")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("{}: general.architecture is missing", self.name)))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    /// A required integer (any width), or an error naming the key.
    pub fn usize(&self, key: &str) -> Result<usize> {
        self.get(key)
            .and_then(Value::as_u64)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| self.missing(key, "an integer"))
    }

    /// A required number (float or integer), finite: an epsilon or a
    /// rope base of NaN or infinity would make every output NaN.
    pub fn f64(&self, key: &str) -> Result<f64> {
        let value = self.get(key).and_then(Value::as_f64).ok_or_else(|| self.missing(key, "a number"))?;
        // Callers keep it as f32: a finite f64 past f32's range is refused too.
        if !(value as f32).is_finite() {
            return Err(Error::invalid(format!("{}: metadata {key} is {value}, not a finite number", self.name)));
        }
        Ok(value)
    }

    /// The number of blocks (`<arch>.block_count`), checked against the
    /// tensor table before anything is sized by it: the file must hold
    /// tensors for that many blocks (`blk.0.` to `blk.{n-1}.`), and a
    /// model of no blocks is none (a decoder's last-token rows are taken
    /// in its last block).
    pub fn block_count(&self, key: &str) -> Result<usize> {
        let claimed = self.usize(key)?;
        let held = self
            .tensors
            .iter()
            .filter_map(|t| t.name.strip_prefix("blk.")?.split('.').next()?.parse::<usize>().ok())
            .max()
            .map_or(0, |last| last + 1);
        if claimed == 0 || claimed > held {
            return Err(Error::invalid(format!(
                "{}: metadata {key} says {claimed} blocks, but the file holds tensors for {held}{}",
                self.name,
                if claimed == 0 { " (a model has at least one)" } else { "" }
            )));
        }
        Ok(claimed)
    }

    pub fn str(&self, key: &str) -> Result<&str> {
        self.get(key).and_then(Value::as_str).ok_or_else(|| self.missing(key, "a string"))
    }

    /// An error naming the file and a metadata key it lacks.
    pub fn missing(&self, key: &str, what: &str) -> Error {
        Error::invalid(format!("{}: metadata {key} is missing or not {what}", self.name))
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The tensors holding a value that is NaN or infinite (a damaged
    /// weight or block scale), each with its first such value: every
    /// tensor read whole, a block run at a time (what `qmd doctor` checks;
    /// loading checks only the small vectors).
    pub fn non_finite_tensors(&self) -> Vec<(String, f32)> {
        const BLOCKS_AT_ONCE: usize = 4096;
        let mut found = Vec::new();
        let mut values = Vec::new();
        for tensor in &self.tensors {
            let (block_bytes, block_values) = (tensor.kind.block_bytes(), tensor.kind.block_values());
            let data = &self.bytes[tensor.range.clone()];
            let bad = data.chunks(block_bytes * BLOCKS_AT_ONCE).find_map(|run| {
                values.resize(run.len() / block_bytes * block_values, 0.0);
                super::dequantize(tensor.kind, run, &mut values);
                values.iter().copied().find(|v| !v.is_finite())
            });
            if let Some(value) = bad {
                found.push((tensor.name.clone(), value));
            }
        }
        found
    }
}

/// The fewest bytes a metadata value of type `kind` takes in the file, so
/// an array's count is checked against what its items need.
fn min_value_bytes(kind: u32) -> usize {
    match kind {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        // A string's length; an array's item type and count.
        8 => 8,
        9 => 12,
        _ => 8,
    }
}

fn align(at: u64, alignment: u64) -> Option<u64> {
    at.checked_add(alignment - 1).map(|v| v / alignment * alignment)
}

/// A reader over the header's bytes whose every read is bounds-checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!("it ends at byte {} inside its header (truncated)", self.bytes.len()));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("take returned N bytes"))
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A length that must fit in what is left of the file (`unit` bytes
    /// per item at least).
    fn length(&mut self, unit: usize) -> std::result::Result<usize, String> {
        let n = self.u64()?;
        if n > (self.remaining() / unit.max(1)) as u64 {
            return Err(format!("a length of {n} is more than the file holds"));
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let n = self.length(1)?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    fn value(&mut self, kind: u32, depth: usize) -> std::result::Result<Value, String> {
        Ok(match kind {
            0 => Value::U8(self.array::<1>()?[0]),
            1 => Value::I8(self.array::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array()?)),
            3 => Value::I16(i16::from_le_bytes(self.array()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.array()?)),
            6 => Value::F32(f32::from_le_bytes(self.array()?)),
            7 => match self.array::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("a boolean of value {b}")),
            },
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err("arrays nested too deep".into());
                }
                let item = self.u32()?;
                let n = self.length(min_value_bytes(item))?;
                let mut items = Vec::with_capacity(n.min(MAX_RESERVED_ITEMS));
                for _ in 0..n {
                    items.push(self.value(item, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(format!("unknown value type {other}")),
        })
    }

    /// Dimensions, type number and data offset of a tensor entry.
    fn tensor_entry(&mut self) -> std::result::Result<(Vec<u64>, u32, u64), String> {
        let n_dims = self.u32()?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(format!("{n_dims} dimensions (1 to {MAX_DIMS} are valid)"));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = self.u64()?;
            if d == 0 {
                return Err("a dimension of size 0".into());
            }
            dims.push(d);
        }
        Ok((dims, self.u32()?, self.u64()?))
    }
}
