//! Turning tokenizer output into padded tensors, in length-sorted batches
//! so short texts are not padded to the longest one.

use burn::tensor::{Device, Int, Tensor, TensorData};
use tokenizers::Encoding;

use super::bert::TokenBatch;

/// Texts per forward pass: large enough to keep matmuls efficient, small
/// enough that a batch of 256-token sequences stays in cache-sized tensors.
pub const BATCH_SIZE: usize = 32;

pub fn token_batch(encodings: &[&Encoding], device: &Device) -> TokenBatch {
    let n = encodings.len();
    let t = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
    let mut ids = vec![0i64; n * t];
    let mut type_ids = vec![0i64; n * t];
    let mut mask = vec![0f32; n * t];
    for (row, encoding) in encodings.iter().enumerate() {
        for (col, ((id, type_id), m)) in
            encoding.get_ids().iter().zip(encoding.get_type_ids()).zip(encoding.get_attention_mask()).enumerate()
        {
            ids[row * t + col] = *id as i64;
            type_ids[row * t + col] = *type_id as i64;
            mask[row * t + col] = *m as f32;
        }
    }
    TokenBatch {
        ids: Tensor::<2, Int>::from_data(TensorData::new(ids, [n, t]), device),
        type_ids: Tensor::<2, Int>::from_data(TensorData::new(type_ids, [n, t]), device),
        mask: Tensor::<2>::from_data(TensorData::new(mask, [n, t]), device),
    }
}

/// Indices of `encodings` grouped into batches of similar length.
pub fn length_sorted_batches(encodings: &[Encoding]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| encodings[i].len());
    order.chunks(BATCH_SIZE).map(<[usize]>::to_vec).collect()
}

/// Reads a `[rows, cols]` tensor back as rows.
pub fn rows(tensor: Tensor<2>) -> crate::Result<Vec<Vec<f32>>> {
    let [_, cols] = tensor.dims();
    split_rows(tensor.into_data(), cols)
}

/// [`rows`] without blocking: browsers can only map GPU buffers
/// asynchronously.
pub async fn rows_async(tensor: Tensor<2>) -> crate::Result<Vec<Vec<f32>>> {
    let [_, cols] = tensor.dims();
    let data = tensor
        .into_data_async()
        .await
        .map_err(|e| crate::Error::new(crate::ErrorKind::Internal, format!("reading model output back: {e:?}")))?;
    split_rows(data, cols)
}

/// Rows of f32, converted from the backend's float type (f16 on some
/// GPUs). What cannot be converted is an error: empty vectors would be
/// stored as if they were embeddings.
fn split_rows(data: TensorData, cols: usize) -> crate::Result<Vec<Vec<f32>>> {
    let dtype = data.dtype();
    let data: Vec<f32> = data.try_into_vec_as::<f32>().map_err(|e| {
        crate::Error::new(
            crate::ErrorKind::Internal,
            format!("model output of type {dtype:?} cannot be read as f32: {e:?}"),
        )
    })?;
    Ok(data.chunks(cols.max(1)).map(<[f32]>::to_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half-precision output (GPUs with `shader-f16`) used to read back
    /// as no vectors at all.
    #[test]
    fn rows_convert_half_floats() {
        let halves = TensorData::new(vec![burn::tensor::f16::from_f32(0.5), burn::tensor::f16::from_f32(-1.0)], [1, 2]);
        assert_eq!(split_rows(halves, 2).unwrap(), vec![vec![0.5, -1.0]]);
    }
}
