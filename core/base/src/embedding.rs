//! What the engine and the models exchange about embeddings: the model's
//! description (dimension, window, prompts) and one embedded text.

/// The embedding model as the engine sees it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmbedderInfo {
    /// Hugging Face repo id or local path: recorded with the vectors.
    pub model: String,
    pub dimension: usize,
    /// The model's window in tokens, special tokens included.
    pub max_tokens: usize,
    /// How the model wants its inputs: a prefix (e5's `"query: "`), or a
    /// template where `{text}` stands for the text and `{title}` for the
    /// document's title (EmbeddingGemma's `title: {title} | text: {text}`,
    /// as qmd formats it). Empty: the text as is.
    pub query_prompt: String,
    pub document_prompt: String,
    /// How the weights run when not as their file stores them: `q8_0` for
    /// a safetensors repository quantized at load. Part of the vectors'
    /// fingerprint, so vectors of the two paths are never mixed. Empty:
    /// as stored (a GGUF file, a remote server).
    #[serde(default)]
    pub weights: String,
}

impl EmbedderInfo {
    /// A query as the model expects it.
    pub fn query_text(&self, text: &str) -> String {
        fill(&self.query_prompt, None, text)
    }

    /// A document chunk as the model expects it; a missing title is
    /// `none`, as in qmd.
    pub fn document_text(&self, title: Option<&str>, text: &str) -> String {
        fill(&self.document_prompt, title, text)
    }
}

/// The prompt with `{title}` and `{text}` filled in (the template's
/// `{title}`s only: a title or text holding `{text}` stays as it is), or
/// the prompt as a prefix when it has no `{text}`.
fn fill(prompt: &str, title: Option<&str>, text: &str) -> String {
    let title = title.filter(|t| !t.is_empty()).unwrap_or("none");
    match prompt.split_once("{text}") {
        Some((before, after)) => {
            format!("{}{text}{}", before.replace("{title}", title), after.replace("{title}", title))
        }
        None => format!("{prompt}{text}"),
    }
}

/// One embedded text.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// Unit-length vector.
    pub vector: Vec<f32>,
    /// Tokens of the text before truncation, special tokens excluded; more
    /// than the window means the vector saw only the start.
    pub tokens: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(query_prompt: &str, document_prompt: &str) -> EmbedderInfo {
        EmbedderInfo {
            model: "m".into(),
            dimension: 3,
            max_tokens: 8,
            query_prompt: query_prompt.into(),
            document_prompt: document_prompt.into(),
            weights: String::new(),
        }
    }

    #[test]
    fn prompts_are_prefixes_or_templates() {
        let gemma = info("task: search result | query: ", "title: {title} | text: {text}");
        assert_eq!(gemma.query_text("rotate keys"), "task: search result | query: rotate keys");
        assert_eq!(gemma.document_text(Some("Keys"), "Rotate them."), "title: Keys | text: Rotate them.");
        // qmd writes "none" for a document without a title
        assert_eq!(gemma.document_text(None, "x"), "title: none | text: x");
        assert_eq!(gemma.document_text(Some(""), "x"), "title: none | text: x");
        // placeholders inside the title or the text are left alone
        assert_eq!(gemma.document_text(Some("{text}"), "{title}"), "title: {text} | text: {title}");
        let e5 = info("query: ", "passage: ");
        assert_eq!(e5.query_text("q"), "query: q");
        assert_eq!(e5.document_text(Some("ignored"), "d"), "passage: d");
        assert_eq!(info("", "").document_text(Some("t"), "d"), "d");
    }
}
