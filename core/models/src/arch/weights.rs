//! A GGUF file's tensors as a model uses them: looked up by name, their
//! shapes checked once at load, their bytes borrowed from the file.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gguf::quantize::append_as;
use crate::gguf::{GgmlType, GgufFile, TensorInfo, dequantize};
use crate::kernels::QMatrix;

/// The file's bytes, owned: a memory map natively, the file's contents in
/// the browser. Tensors are read in place, never copied whole.
pub type ModelBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The tensors of one file, by name.
pub struct Weights {
    name: String,
    bytes: ModelBytes,
    tensors: HashMap<String, TensorInfo>,
}

/// A weight matrix checked at load: `rows` outputs of `cols` inputs.
#[derive(Clone)]
pub struct Matrix(TensorInfo);

/// A vector tensor's values, with its name (a GPU keeps its own copy of
/// each, found by name).
pub struct Vector {
    name: String,
    values: Vec<f32>,
}

impl Vector {
    /// A vector made from values rather than read from a file (tests).
    #[cfg(all(test, feature = "gpu"))]
    pub(crate) fn new(name: &str, values: Vec<f32>) -> Vector {
        Vector { name: name.to_string(), values }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn values(&self) -> &[f32] {
        &self.values
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl Matrix {
    /// The tensor's name in the file.
    pub fn name(&self) -> &str {
        &self.0.name
    }
}

impl Weights {
    pub fn new(file: &GgufFile, bytes: ModelBytes) -> Weights {
        let tensors = file.tensors.iter().map(|t| (t.name.clone(), t.clone())).collect();
        Weights { name: file.name().to_string(), bytes, tensors }
    }

    pub fn bytes(&self) -> &[u8] {
        (*self.bytes).as_ref()
    }

    /// How errors call the weights (the file's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tensor `name` and its data, if it exists.
    pub fn tensor(&self, name: &str) -> Option<(&TensorInfo, &[u8])> {
        self.tensors.get(name).map(|t| (t, &self.bytes()[t.range.clone()]))
    }

    /// The rows of tensor `name` (its outermost dimensions), if it exists.
    pub fn rows_of(&self, name: &str) -> Option<usize> {
        self.tensors.get(name).map(|t| t.rows().1)
    }

    fn find(&self, name: &str, dims: &[usize]) -> Result<&TensorInfo> {
        let tensor =
            self.tensors.get(name).ok_or_else(|| Error::invalid(format!("{}: tensor {name} is missing", self.name)))?;
        if tensor.dims != dims {
            return Err(Error::invalid(format!(
                "{}: tensor {name} has shape {:?}, the model's metadata says {dims:?}",
                self.name, tensor.dims
            )));
        }
        Ok(tensor)
    }

    /// A `rows × cols` matrix (GGUF dims `[cols, rows]`).
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        Ok(Matrix(self.find(name, &[cols, rows])?.clone()))
    }

    /// A vector of `len` values (norm weights, biases), as floats: small,
    /// so copied out.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vector> {
        let tensor = self.find(name, &[len])?;
        let mut values = vec![0f32; len];
        dequantize(tensor.kind, &self.bytes()[tensor.range.clone()], &mut values);
        self.finite(name, values)
    }

    /// A row of `matrix` as a vector (a matrix's one row a model adds to
    /// every token, such as BERT's type-0 embedding).
    pub fn row(&self, matrix: &Matrix, row: usize) -> Result<Vector> {
        let view = self.view(matrix);
        let mut values = vec![0f32; view.cols];
        view.dequantize_row(row, &mut values);
        self.finite(&format!("{}[{row}]", matrix.name()), values)
    }

    /// `values` as the vector `name`, refused when any is NaN or infinite:
    /// a norm weight or bias that is not finite makes every output NaN.
    fn finite(&self, name: &str, values: Vec<f32>) -> Result<Vector> {
        if let Some(at) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(format!(
                "{}: tensor {name} holds {} at value {at}: the file is damaged",
                self.name, values[at]
            )));
        }
        Ok(Vector { name: name.to_string(), values })
    }

    pub fn view(&self, matrix: &Matrix) -> QMatrix<'_> {
        QMatrix::of(&matrix.0, self.bytes())
    }
}

/// Weights made in memory rather than read from a file (a repository's
/// checkpoint converted at load), laid out as a GGUF file's data.
#[derive(Default)]
pub struct WeightsBuilder {
    bytes: Vec<u8>,
    tensors: HashMap<String, TensorInfo>,
}

impl WeightsBuilder {
    /// Appends `values` as tensor `name` of type `kind` (F32 or Q8_0) and
    /// GGUF dims `dims` (`dims[0]` a row's length); `None` when `kind`
    /// cannot hold them (Q8_0 rows that are not whole blocks).
    pub fn push(&mut self, name: &str, kind: GgmlType, dims: Vec<usize>, values: &[f32]) -> Option<()> {
        debug_assert_eq!(dims.iter().product::<usize>(), values.len());
        // Aligned as GGUF aligns tensor data.
        self.bytes.resize(self.bytes.len().next_multiple_of(32), 0);
        let start = self.bytes.len();
        if append_as(kind, dims[0], values, &mut self.bytes).is_none() {
            self.bytes.truncate(start);
            return None;
        }
        let range = start..self.bytes.len();
        self.tensors.insert(name.to_string(), TensorInfo { name: name.to_string(), kind, dims, range });
        Some(())
    }

    /// The weights, called `name` in errors.
    pub fn finish(self, name: &str) -> Weights {
        Weights { name: name.to_string(), bytes: Arc::new(self.bytes), tensors: self.tensors }
    }
}
