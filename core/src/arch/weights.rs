//! A GGUF file's tensors as a model uses them: looked up by name, their
//! shapes checked once at load, their bytes borrowed from the file.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gguf::{GgufFile, TensorInfo, dequantize};
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
    #[cfg(all(test, feature = "models-wgpu"))]
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
