//! What `qmd edge build` writes beside the index for the edge component:
//! `models/models.json`, naming each role's model as the index knows it
//! (vectors are tied to the embedding model's id) and the folder of its
//! files (a GGUF file as `model.gguf`, or a safetensors repository). The
//! embedder's description is recorded too, so a request that needs no
//! vectors never loads the model to learn it.

use serde::{Deserialize, Serialize};

use crate::inference::EmbedderInfo;

/// The manifest's name in the models folder.
pub const MODELS_MANIFEST: &str = "models.json";
/// A GGUF model's one file in its folder.
pub const GGUF_FILE: &str = "model.gguf";

#[derive(Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
pub struct ModelsManifest {
    pub embed: Option<DeployedEmbedder>,
    pub rerank: Option<DeployedModel>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DeployedModel {
    /// The id the `qmd` host knew the model by.
    pub id: String,
    /// Its files' folder, relative to the models folder.
    pub dir: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DeployedEmbedder {
    #[serde(flatten)]
    pub model: DeployedModel,
    pub info: EmbedderInfo,
}
