//! The model's own description, read from the files a Hugging Face
//! repository ships: `config.json` (architecture), and for
//! sentence-transformers models `1_Pooling/config.json` (pooling),
//! `sentence_bert_config.json` (sequence length) and
//! `config_sentence_transformers.json` (query/document prompts).

use serde::Deserialize;

use crate::error::{Error, Result};

/// The BERT architecture parameters (`config.json`).
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub model_type: Option<String>,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
    /// Classification heads (cross-encoders): one label = a relevance logit.
    #[serde(default)]
    pub id2label: Option<serde_json::Map<String, serde_json::Value>>,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

impl BertConfig {
    pub fn parse(json: &[u8]) -> Result<BertConfig> {
        let config: BertConfig =
            serde_json::from_slice(json).map_err(|e| Error::invalid(format!("config.json: {e}")))?;
        if let Some(kind) = config.model_type.as_deref()
            && kind != "bert"
        {
            return Err(Error::invalid(format!("config.json: model_type '{kind}' is not a BERT encoder")));
        }
        if config.hidden_act != "gelu" {
            return Err(Error::invalid(format!(
                "config.json: hidden_act '{}' is not supported (only 'gelu')",
                config.hidden_act
            )));
        }
        if config.position_embedding_type.as_deref().is_some_and(|p| p != "absolute") {
            return Err(Error::invalid("config.json: only absolute position embeddings are supported"));
        }
        if config.num_attention_heads == 0 || !config.hidden_size.is_multiple_of(config.num_attention_heads) {
            return Err(Error::invalid("config.json: hidden_size must be a multiple of num_attention_heads"));
        }
        Ok(config)
    }

    /// Number of classifier outputs (1 for a relevance cross-encoder).
    pub fn num_labels(&self) -> usize {
        self.id2label.as_ref().map_or(1, |m| m.len().max(1))
    }
}

/// How token states become one sentence vector: the architecture's own
/// enum, which both stacks (the kernels' BERT and burn's) pool by.
pub use crate::arch::bert::Pooling;

#[derive(Deserialize)]
struct PoolingFile {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

impl Pooling {
    /// Reads `1_Pooling/config.json`; without one, sentence-transformers
    /// defaults to mean pooling.
    pub fn parse(json: Option<&[u8]>) -> Result<Pooling> {
        let Some(json) = json else { return Ok(Pooling::Mean) };
        let file: PoolingFile =
            serde_json::from_slice(json).map_err(|e| Error::invalid(format!("1_Pooling/config.json: {e}")))?;
        if file.pooling_mode_max_tokens || file.pooling_mode_mean_sqrt_len_tokens {
            return Err(Error::invalid("1_Pooling/config.json: only mean or CLS pooling is supported"));
        }
        match (file.pooling_mode_cls_token, file.pooling_mode_mean_tokens) {
            (true, false) => Ok(Pooling::Cls),
            (false, true) => Ok(Pooling::Mean),
            _ => Err(Error::invalid("1_Pooling/config.json: exactly one of CLS or mean pooling must be set")),
        }
    }
}

/// The sentence-transformers settings that change what is embedded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SentenceSettings {
    /// Tokens the model was trained on (`max_seq_length`), including the
    /// special tokens.
    pub max_seq_length: Option<usize>,
    /// Prefix for queries, from the model card's `prompts` (e.g. e5's
    /// `"query: "`); empty when the model defines none.
    pub query_prompt: String,
    /// Prefix for documents (`"document"`/`"passage"` prompt).
    pub document_prompt: String,
    /// Whether vectors are L2-normalised (a `Normalize` module in
    /// `modules.json`). qmd compares by cosine, so we normalise anyway;
    /// this only records what the model card says.
    pub normalize: bool,
}

#[derive(Deserialize)]
struct BertSettingsFile {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PromptsFile {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
}

impl SentenceSettings {
    pub fn parse(
        sentence_bert: Option<&[u8]>,
        sentence_transformers: Option<&[u8]>,
        modules: Option<&[u8]>,
    ) -> Result<SentenceSettings> {
        let mut settings = SentenceSettings::default();
        if let Some(json) = sentence_bert {
            let file: BertSettingsFile =
                serde_json::from_slice(json).map_err(|e| Error::invalid(format!("sentence_bert_config.json: {e}")))?;
            settings.max_seq_length = file.max_seq_length;
        }
        if let Some(json) = sentence_transformers {
            let file: PromptsFile = serde_json::from_slice(json)
                .map_err(|e| Error::invalid(format!("config_sentence_transformers.json: {e}")))?;
            settings.query_prompt = file.prompts.get("query").cloned().unwrap_or_default();
            settings.document_prompt =
                file.prompts.get("document").or(file.prompts.get("passage")).cloned().unwrap_or_default();
        }
        if let Some(json) = modules {
            let text = String::from_utf8_lossy(json);
            settings.normalize = text.contains("sentence_transformers.models.Normalize");
        }
        Ok(settings)
    }
}
