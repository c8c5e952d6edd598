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

impl DeployedModel {
    /// [`Self::dir`] if it is one plain folder name (what `qmd edge build`
    /// writes): a path, `..` or an empty name read from a hand-edited
    /// `models.json` is refused, never joined to the models folder.
    pub fn folder(&self) -> Result<&str, String> {
        let name = self.dir.as_str();
        let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
        if plain { Ok(name) } else { Err(format!("models.json names the folder {name:?}, not a plain folder name")) }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DeployedEmbedder {
    #[serde(flatten)]
    pub model: DeployedModel,
    pub info: EmbedderInfo,
}

#[cfg(test)]
mod tests {
    use super::DeployedModel;

    #[test]
    fn a_model_folder_is_one_plain_name() {
        let model = |dir: &str| DeployedModel { id: "m".into(), dir: dir.into() };
        assert_eq!(model("embed").folder(), Ok("embed"));
        assert_eq!(model("rerank-2").folder(), Ok("rerank-2"));
        for bad in ["", ".", "..", "../etc", "/etc", "a/b", "a\\b", "a\0b"] {
            let err = model(bad).folder().unwrap_err();
            assert!(err.contains("not a plain folder name"), "{bad:?}: {err}");
        }
    }
}
