//! qmd's query expansion on a GGUF chat model (qmd's default is a Qwen3
//! 1.7B fine-tune): `/no_think Expand this search query: {query}` as the
//! user's turn, sampled as qmd configures node-llama-cpp, every token
//! masked by qmd's grammar. The raw text goes to
//! [`parse_expansion`](crate::query::expansion::parse_expansion).

use super::chat::{ChatTemplate, DEFAULT_SYSTEM_PROMPT};
use super::grammar::TokenMask;
use super::sampler::{Sampler, Sampling};
use super::session::{Limits, Session};
use crate::arch::{Decoder, ModelBytes};
use crate::error::{Error, Result};
use crate::gguf::{BpeTokenizer, GgufFile};

/// qmd's `maxTokens` for an expansion.
pub const MAX_EXPANSION_TOKENS: usize = 600;
/// qmd's expansion context (`QMD_EXPAND_CONTEXT_SIZE`'s default): the
/// prompt and the answer share it.
pub const EXPANSION_CONTEXT: usize = 2048;
/// The sampler's seed. node-llama-cpp draws a fresh one per call; a fixed
/// seed makes an expansion (and so a query's answer) repeatable.
const SEED: u64 = 0x716d_6421;

pub struct QueryExpander {
    model: Decoder,
    tokenizer: BpeTokenizer,
    template: ChatTemplate,
    mask: TokenMask,
    end: Vec<u32>,
    /// Tokens the presence penalty leaves alone: newlines.
    unpunished: Vec<u32>,
    context: usize,
}

impl QueryExpander {
    /// From a GGUF file's bytes; `name` is how errors call the file.
    pub fn load(name: &str, bytes: ModelBytes) -> Result<QueryExpander> {
        crate::model::heap::keep_freed_pages();
        let file = GgufFile::parse(name, (*bytes).as_ref())?;
        if file.tensor("cls.output.weight").is_some() {
            return Err(Error::invalid(format!(
                "{name}: this is a reranker (it has a ranking head), not a query-expansion model"
            )));
        }
        let model = Decoder::load(&file, bytes.clone())?;
        let tokenizer = BpeTokenizer::from_gguf(&file)?;
        let template = ChatTemplate::detect(&file, |t| tokenizer.id(t).is_some())?;
        let mut end: Vec<u32> = template.end_tokens().iter().filter_map(|t| tokenizer.id(t)).collect();
        end.extend(tokenizer.eos.filter(|eos| !end.contains(eos)));
        if end.is_empty() {
            return Err(Error::invalid(format!("{name}: no end-of-turn token")));
        }
        let mask = TokenMask::new(&tokenizer.token_bytes(), end.clone());
        let unpunished = tokenizer.encode("\n", false);
        let context = EXPANSION_CONTEXT.min(model.shape.block.context);
        Ok(QueryExpander { model, tokenizer, template, mask, end, unpunished, context })
    }

    /// The prompt's tokens for `query`.
    pub fn prompt(&self, query: &str) -> Vec<u32> {
        let text = self.template.prompt(DEFAULT_SYSTEM_PROMPT, &format!("/no_think Expand this search query: {query}"));
        self.tokenizer.encode_prompt(&text)
    }

    /// The model's expansion of `query`: lines of `lex|vec|hyde: text`
    /// (a line cut off by the token limit stays as it is).
    pub fn expand(&self, query: &str) -> Result<String> {
        self.expand_with(query, Sampling::QMD_EXPANSION.with_seed(SEED))
    }

    /// [`expand`](Self::expand) with other sampling (greedy, in tests).
    pub fn expand_with(&self, query: &str, sampling: Sampling) -> Result<String> {
        let prompt = self.prompt(query);
        let room = self.context.saturating_sub(prompt.len());
        if room == 0 {
            return Err(Error::invalid(format!(
                "the expansion prompt is {} tokens; the expansion context holds {}",
                prompt.len(),
                self.context
            )));
        }
        let limits = Limits {
            max_tokens: MAX_EXPANSION_TOKENS.min(room),
            end: &self.end,
            unpunished: &self.unpunished,
            grammar: Some(&self.mask),
        };
        let tokens = Session::new(&self.model).generate(&prompt, &mut Sampler::new(sampling), &limits)?;
        Ok(String::from_utf8_lossy(&self.tokenizer.decode(&tokens, false)).into_owned())
    }
}
