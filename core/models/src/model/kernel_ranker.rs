//! A reranker from a GGUF file (Qwen3-Reranker, qmd's default), scored
//! exactly as qmd 2.8.3 scores it: node-llama-cpp's ranking context
//! (`rankAll`). The file's rank template (`tokenizer.chat_template.rerank`)
//! gets the query and the document; the language model reads it; the
//! ranking head (`cls.output`: the LM head's rows for "yes" and "no")
//! turns the last token's state into two logits, and their softmax's
//! first value, P(yes), is the score.
//!
//! Tokenization follows node-llama-cpp, quirks included, because the
//! scores must be the ones qmd computes: the template's text is read with
//! special tokens parsed, the query and document without, each with its
//! `trimLeadingSpace` workaround; BOS goes in front where the vocabulary
//! adds one, and an EOS the vocabulary adds goes in front too (its
//! `unshift`).

use super::ModelDevice;
use super::kernel_device::{KernelDevice, Pass};
use super::passes::KERNEL_RANK;
use super::tokenize::window_prefix;
use crate::arch::backend::now;
use crate::arch::{Decoder, Matrix, ModelBytes};
use crate::error::{Error, Result};
use crate::gguf::{BpeTokenizer, GgufFile, Value};
use crate::kernels::matmul;
use crate::kernels::parallel;

/// The context qmd gives its ranking contexts; documents are cut to fit
/// it with room for the template (qmd: `4096 − 512 − query tokens`).
pub const RANK_CONTEXT: usize = 4096;
const TEMPLATE_ALLOWANCE: usize = 512;

pub struct KernelRanker {
    model: Decoder,
    tokenizer: BpeTokenizer,
    template: Vec<Part>,
    head: Matrix,
    device: KernelDevice,
}

/// The template cut at its placeholders.
enum Part {
    Tokens(Vec<u32>),
    Query,
    Document,
}

impl KernelRanker {
    /// Loads from the file's bytes, to run on the CPU; `name` is how
    /// errors call the file.
    pub fn load(name: &str, bytes: ModelBytes) -> Result<KernelRanker> {
        Self::load_on(name, bytes, &ModelDevice::cpu())
    }

    /// Loads to run on `device`'s GPU when it has one.
    pub fn load_on(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<KernelRanker> {
        super::heap::keep_freed_pages();
        let file = GgufFile::parse(name, (*bytes).as_ref())?;
        let model = Decoder::load(&file, bytes.clone())?;
        let tokenizer = BpeTokenizer::from_gguf(&file)?;
        let Some(head) = file.tensor("cls.output.weight") else {
            return Err(Error::invalid(format!(
                "{name}: no ranking head (cls.output.weight): this is a language model, not a reranker"
            )));
        };
        let labels = head.rows().1;
        let head = model.weights().matrix("cls.output.weight", labels, model.shape.block.width)?;
        let template = file
            .get("tokenizer.chat_template.rerank")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("{name}: no rank template (tokenizer.chat_template.rerank)")))?;
        let template = parse_template(template, &tokenizer)
            .ok_or_else(|| Error::invalid(format!("{name}: the rank template lacks {{query}} or {{document}}")))?;
        Ok(KernelRanker { model, tokenizer, template, head, device: KernelDevice::on(device) })
    }

    /// Relevance of each document to the query, in [0, 1], input order.
    pub fn score(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        now(self.score_async(query, documents))
    }

    /// [`score`](Self::score), waiting for a GPU without blocking (the
    /// browser).
    pub async fn score_async(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        let mut scores = Vec::with_capacity(documents.len());
        for pass in self.passes(query, documents)? {
            scores.extend(self.probabilities(&self.device.last_states_async(&self.model, &pass).await?));
        }
        Ok(scores)
    }

    /// The rank inputs in forward passes.
    fn passes(&self, query: &str, documents: &[&str]) -> Result<Vec<Pass>> {
        let inputs = self.inputs(query, documents)?;
        let limit = self.model.shape.block.context;
        if let Some(input) = inputs.iter().find(|input| input.len() > limit) {
            return Err(Error::invalid(format!("a rank input of {} tokens (the model holds {limit})", input.len())));
        }
        Ok(self.device.passes(inputs, KERNEL_RANK))
    }

    /// The tokens evaluated for each document: the template filled in,
    /// the document cut to qmd's budget.
    pub fn inputs(&self, query: &str, documents: &[&str]) -> Result<Vec<Vec<u32>>> {
        // Text past what the context can use is never tokenized.
        let context = RANK_CONTEXT.min(self.model.shape.block.context);
        let query_tokens = tokenize_trimmed(&self.tokenizer, window_prefix(query, context).0, false);
        let budget = context.saturating_sub(TEMPLATE_ALLOWANCE + query_tokens.len());
        parallel::map(documents, |document| {
            let mut document = tokenize_trimmed(&self.tokenizer, window_prefix(document, budget).0, false);
            document.truncate(budget);
            Ok(self.input(&query_tokens, &document))
        })
    }

    /// P(yes) for each last state of a pass.
    fn probabilities(&self, states: &[f32]) -> Vec<f32> {
        let head = self.model.weights().view(&self.head);
        let mut logits = vec![0f32; states.len() / self.model.shape.block.width * head.rows];
        matmul(states, &head, None, &mut logits);
        logits.chunks_exact(head.rows).map(first_of_softmax).collect()
    }

    /// The evaluated tokens of one (query, document) pair.
    fn input(&self, query: &[u32], document: &[u32]) -> Vec<u32> {
        let mut tokens = Vec::new();
        for part in &self.template {
            tokens.extend_from_slice(match part {
                Part::Tokens(t) => t,
                Part::Query => query,
                Part::Document => document,
            });
        }
        let t = &self.tokenizer;
        if let Some(bos) = t.bos.filter(|_| t.add_bos)
            && tokens.first() != Some(&bos)
        {
            tokens.insert(0, bos);
        }
        // node-llama-cpp asks for the BOS token where it means EOS here.
        if let Some(eos) = t.eos.filter(|_| t.add_eos && t.bos.is_some())
            && tokens.last() != Some(&eos)
        {
            tokens.insert(0, eos);
        }
        tokens
    }
}

/// softmax(logits)[0]: P(yes) for Qwen3's (yes, no) head.
fn first_of_softmax(logits: &[f32]) -> f32 {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let sum: f32 = logits.iter().map(|v| (v - max).exp()).sum();
    (logits[0] - max).exp() / sum
}

/// The template as node-llama-cpp reads it: `{query}` and `{document}`
/// become `{{query}}` and `{{document}}`, the text between them is
/// tokenized with special tokens parsed. `None` without both placeholders.
fn parse_template(template: &str, tokenizer: &BpeTokenizer) -> Option<Vec<Part>> {
    let template = template.replace("{query}", "{{query}}").replace("{document}", "{{document}}");
    if !template.contains("{{query}}") || !template.contains("{{document}}") {
        return None;
    }
    let mut parts = Vec::new();
    let mut rest = template.as_str();
    loop {
        let next = [("{{query}}", Part::Query), ("{{document}}", Part::Document)]
            .into_iter()
            .filter_map(|(marker, part)| rest.find(marker).map(|at| (at, marker.len(), part)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, len, part)) = next else { break };
        parts.push(Part::Tokens(tokenize_trimmed(tokenizer, &rest[..at], true)));
        parts.push(part);
        rest = &rest[at + len..];
    }
    parts.push(Part::Tokens(tokenize_trimmed(tokenizer, rest, true)));
    Some(parts)
}

/// node-llama-cpp's `model.tokenize(text, special, "trimLeadingSpace")`:
/// the text tokenized after a token that absorbs a space prefix the
/// vocabulary might add, which is then taken off again, when the text's
/// leading spaces survive; else as is.
fn tokenize_trimmed(t: &BpeTokenizer, text: &str, special: bool) -> Vec<u32> {
    if text.is_empty() {
        return Vec::new();
    }
    let leading_spaces = |bytes: &[u8]| bytes.iter().take_while(|&&b| b == b' ').count();
    let spaces = leading_spaces(text.as_bytes());
    if special && let Some(marker) = t.bos.or(t.eos) {
        let mut tokens = t.encode(&format!("{}{text}", t.pieces()[marker as usize]), true);
        if let Some(at) = tokens.iter().position(|&id| id == marker).filter(|&at| at <= 1) {
            tokens.drain(..=at);
            if leading_spaces(&t.decode(&tokens, true)) == spaces {
                return tokens;
            }
        }
    }
    let newline = t.encode("\n", special);
    if text.starts_with('\n') {
        let tokens = t.encode(text, special);
        if t.decode(&tokens, special).starts_with(b"\n") {
            return tokens;
        }
    }
    let mut tokens = t.encode(&format!("\n{text}"), special);
    if !newline.is_empty() && tokens.starts_with(&newline) {
        tokens.drain(..newline.len());
        if !special || leading_spaces(&t.decode(&tokens, true)) == spaces {
            return tokens;
        }
    }
    t.encode(text, special)
}

#[cfg(test)]
mod tests {
    use super::first_of_softmax;

    #[test]
    fn the_score_is_p_yes() {
        assert!((first_of_softmax(&[2.0, 0.0]) - 1.0 / (1.0 + (-2f32).exp())).abs() < 1e-6);
        assert!((first_of_softmax(&[-50.0, 50.0])).abs() < 1e-6);
        assert_eq!(first_of_softmax(&[3.0]), 1.0);
    }
}
