//! Loading Hugging Face `model.safetensors` into the burn modules.

use burn::module::Module;
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};

use crate::error::{Error, Result};

/// Loads every parameter of `module` from the checkpoint bytes. `renames`
/// are (regex, replacement) pairs applied to checkpoint keys, after the
/// BERT-wide ones. A parameter the checkpoint lacks is an error: a model
/// running on random weights must never be mistaken for a real one.
pub fn load_safetensors<M: Module>(module: &mut M, bytes: Vec<u8>, renames: &[(&str, &str)]) -> Result<()> {
    let mut store = SafetensorsStore::from_bytes(Some(bytes))
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(r"\.LayerNorm\.", ".layer_norm.")
        .with_key_remapping(r"\.attention\.self\.", ".attention.self_attention.")
        .allow_partial(true);
    for (from, to) in renames {
        store = store.with_key_remapping(*from, *to);
    }
    let result = module.load_from(&mut store).map_err(|e| Error::invalid(format!("model.safetensors: {e}")))?;
    if !result.errors.is_empty() {
        let first = result.errors.iter().map(|e| format!("{e:?}")).next().unwrap_or_default();
        return Err(Error::invalid(format!(
            "model.safetensors: {} tensors could not be loaded: {first}",
            result.errors.len()
        )));
    }
    if let Some((path, _)) = result.missing.first() {
        return Err(Error::invalid(format!(
            "model.safetensors: {} parameters are missing from the checkpoint (first: {path})",
            result.missing.len()
        )));
    }
    Ok(())
}
