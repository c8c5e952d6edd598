//! Turning tokenizer output into padded tensors, and cutting a call's
//! texts into forward passes: texts of similar length together (short
//! texts are not padded to the longest), each pass bounded by padded
//! tokens rather than by texts, so a pass costs about the same whatever the
//! texts' lengths.

use burn::tensor::{Device, Int, Tensor, TensorData};
use tokenizers::Encoding;

use super::bert::TokenBatch;
use super::passes::{BURN, cpu_pass_tokens};
use crate::error::Result;
use crate::kernels::parallel;

/// Texts in input order, cut into forward passes for one device.
pub struct PassPlan {
    passes: Vec<Vec<usize>>,
    texts: usize,
    /// Passes run at once on the CPU's workers (else one after another).
    parallel: bool,
}

impl PassPlan {
    /// Plans passes over texts of these token lengths. On the CPU the
    /// passes are sized so every worker gets one (a pass's elementwise
    /// operations run on one core, so cores are kept busy by running
    /// passes side by side); on a GPU they are as large as allowed.
    pub fn new(lengths: &[usize], device: &Device) -> PassPlan {
        let cpu = *device == Device::flex();
        if cpu {
            super::heap::keep_freed_pages();
        }
        let workers = if cpu { parallel::workers() } else { 1 };
        let budget = if cpu { cpu_pass_tokens(lengths.iter().sum(), workers, BURN.cpu) } else { BURN.gpu };
        PassPlan { passes: passes(lengths, budget), texts: lengths.len(), parallel: workers > 1 }
    }

    /// [`new`](Self::new) over tokenizer output.
    pub fn for_encodings(encodings: &[Encoding], device: &Device) -> PassPlan {
        let lengths: Vec<usize> = encodings.iter().map(Encoding::len).collect();
        PassPlan::new(&lengths, device)
    }

    /// The passes, each a list of text indices (shortest texts first).
    pub fn passes(&self) -> &[Vec<usize>] {
        &self.passes
    }

    /// Runs `pass` on every pass (side by side on the CPU's workers) and
    /// returns one output per text, in input order.
    pub fn run<T: Send>(&self, pass: impl Fn(&[usize]) -> Result<Vec<T>> + Sync + Send) -> Result<Vec<T>> {
        let outputs = if self.parallel {
            parallel::map(&self.passes, |indices| pass(indices))?
        } else {
            self.passes.iter().map(|indices| pass(indices)).collect::<Result<Vec<_>>>()?
        };
        Ok(self.scatter(outputs))
    }

    /// Puts each pass's outputs back at their texts' positions.
    pub fn scatter<T>(&self, outputs: Vec<Vec<T>>) -> Vec<T> {
        let mut slots: Vec<Option<T>> = (0..self.texts).map(|_| None).collect();
        for (indices, rows) in self.passes.iter().zip(outputs) {
            for (&i, row) in indices.iter().zip(rows) {
                slots[i] = Some(row);
            }
        }
        slots.into_iter().map(|slot| slot.expect("every text is in one pass")).collect()
    }
}

/// Indices grouped by length, each group at most `budget` padded tokens
/// (one text alone may exceed it).
fn passes(lengths: &[usize], budget: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut passes: Vec<Vec<usize>> = Vec::new();
    for i in order {
        // Sorted ascending: this text is the longest of its pass so far.
        match passes.last_mut() {
            Some(pass) if (pass.len() + 1) * lengths[i] <= budget => pass.push(i),
            _ => passes.push(vec![i]),
        }
    }
    passes
}

pub fn token_batch(encodings: &[&Encoding], device: &Device) -> TokenBatch {
    let n = encodings.len();
    // The tokenizer pads nothing (see `tokenize.rs`): an encoding's tokens
    // are all real, and its mask and the encoder's lengths both say so.
    let lengths: Vec<usize> = encodings.iter().map(|e| e.len()).collect();
    let t = lengths.iter().copied().max().unwrap_or(0).max(1);
    let mut ids = vec![0i64; n * t];
    let mut type_ids = vec![0i64; n * t];
    let mut mask = vec![0f32; n * t];
    for (row, (encoding, &length)) in encodings.iter().zip(&lengths).enumerate() {
        for (col, (id, type_id)) in encoding.get_ids().iter().zip(encoding.get_type_ids()).enumerate() {
            ids[row * t + col] = *id as i64;
            type_ids[row * t + col] = *type_id as i64;
        }
        mask[row * t..row * t + length].fill(1.0);
    }
    TokenBatch {
        ids: Tensor::<2, Int>::from_data(TensorData::new(ids, [n, t]), device),
        type_ids: Tensor::<2, Int>::from_data(TensorData::new(type_ids, [n, t]), device),
        mask: Tensor::<2>::from_data(TensorData::new(mask, [n, t]), device),
        lengths,
    }
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
    use crate::model::passes::CPU_MIN_PASS_TOKENS;

    #[test]
    fn passes_hold_similar_lengths_within_the_token_budget() {
        let lengths = [10, 200, 12, 11, 190, 300, 9];
        let plan = passes(&lengths, 400);
        assert_eq!(plan, vec![vec![6, 0, 3, 2], vec![4, 1], vec![5]]);
        for pass in &plan {
            let longest = pass.iter().map(|&i| lengths[i]).max().unwrap();
            assert!(pass.len() == 1 || pass.len() * longest <= 400, "{pass:?}");
        }
        // A text longer than the budget still gets a pass of its own.
        assert_eq!(passes(&[500, 5], 100), vec![vec![1], vec![0]]);
        assert!(passes(&[], 100).is_empty());
    }

    #[test]
    fn a_cpu_pass_is_a_workers_share_within_its_bounds() {
        assert_eq!(cpu_pass_tokens(4_000, 2, 8_192), 2_000);
        assert_eq!(cpu_pass_tokens(40_000, 2, 4_096), 4_096, "at most the largest");
        assert_eq!(cpu_pass_tokens(300, 2, 4_096), CPU_MIN_PASS_TOKENS, "never under the smallest");
        // 8,192 over 32 cores would be 256 a pass: the smallest wins.
        assert_eq!(cpu_pass_tokens(100_000, 32, 8_192 / 32), CPU_MIN_PASS_TOKENS);
        assert_eq!(cpu_pass_tokens(0, 0, 0), CPU_MIN_PASS_TOKENS, "no tokens, no workers");
    }

    #[test]
    fn the_cpu_spreads_a_call_over_its_workers_and_outputs_keep_input_order() {
        let lengths: Vec<usize> = (0..64).map(|i| 40 + (i * 37) % 200).collect();
        let plan = PassPlan::new(&lengths, &Device::flex());
        let workers = parallel::workers();
        assert!(
            plan.passes().len() >= workers.min(lengths.len() * 40 / CPU_MIN_PASS_TOKENS),
            "{}",
            plan.passes().len()
        );
        let out = plan.run(|pass| Ok(pass.iter().map(|&i| lengths[i] * 2).collect())).unwrap();
        assert_eq!(out, lengths.iter().map(|l| l * 2).collect::<Vec<_>>());
    }

    /// Half-precision output (GPUs with `shader-f16`) used to read back
    /// as no vectors at all.
    #[test]
    fn rows_convert_half_floats() {
        let halves = TensorData::new(vec![burn::tensor::f16::from_f32(0.5), burn::tensor::f16::from_f32(-1.0)], [1, 2]);
        assert_eq!(split_rows(halves, 2).unwrap(), vec![vec![0.5, -1.0]]);
    }
}
