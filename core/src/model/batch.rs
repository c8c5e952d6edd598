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
pub fn rows(tensor: Tensor<2>) -> Vec<Vec<f32>> {
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
    Ok(split_rows(data, cols))
}

fn split_rows(data: TensorData, cols: usize) -> Vec<Vec<f32>> {
    let data: Vec<f32> = data.try_to_vec::<f32>().unwrap_or_default();
    data.chunks(cols.max(1)).map(<[f32]>::to_vec).collect()
}
