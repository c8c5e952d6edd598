//! qmd's query expansion on a GGUF chat model (qmd's default is a Qwen3
//! 1.7B fine-tune): `/no_think Expand this search query: {query}` as the
//! user's turn, sampled as qmd configures node-llama-cpp, every token
//! masked by qmd's grammar. The raw text goes to
//! qmd-core's `parse_expansion`.

use super::chat::{ChatTemplate, DEFAULT_SYSTEM_PROMPT};
use super::grammar::TokenMask;
use super::sampler::most_probable;
use super::sampler::{Sampler, Sampling};
use super::session::{Generation, Limits, Session};
use crate::arch::backend::now;
use crate::arch::{Decoder, ModelBytes};
use crate::error::{Error, Result};
use crate::gguf::{BpeTokenizer, GgufFile};
use crate::model::{KernelDevice, Loadable, ModelDevice, ModelFiles};

/// qmd's `maxTokens` for an expansion.
pub const MAX_EXPANSION_TOKENS: usize = 600;
/// qmd's expansion context (`QMD_EXPAND_CONTEXT_SIZE`'s default): the
/// prompt and the answer share it.
pub const EXPANSION_CONTEXT: usize = 2048;
/// qmd's user message asking for the expansion of `query` (also what a
/// chat-completions server is sent).
pub fn user_message(query: &str) -> String {
    format!("/no_think Expand this search query: {query}")
}

/// The sampler's seed. node-llama-cpp draws a fresh one per call; a fixed
/// seed makes an expansion (and so a query's answer) repeatable.
const SEED: u64 = 0x716d_6421;

pub struct QueryExpander {
    model: Decoder,
    /// Where the model's steps run.
    device: KernelDevice,
    tokenizer: BpeTokenizer,
    template: ChatTemplate,
    mask: TokenMask,
    end: Vec<u32>,
    /// Tokens the presence penalty leaves alone: newlines.
    unpunished: Vec<u32>,
    /// The model's trained context: no expansion context goes past it.
    trained_context: usize,
}

impl QueryExpander {
    /// From a GGUF file's bytes, run on `device` (its GPU where it has
    /// one); `name` is how errors call the file.
    pub fn load_on(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<QueryExpander> {
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
        let trained_context = model.shape.block.context;
        let device = KernelDevice::on(device);
        Ok(QueryExpander { model, device, tokenizer, template, mask, end, unpunished, trained_context })
    }

    /// The prompt's tokens for `query`: the template's special tokens as
    /// tokens, the query as text whatever it holds. A query longer than
    /// the expansion context can hold is refused before it is tokenized.
    pub fn prompt(&self, query: &str) -> Result<Vec<u32>> {
        if crate::model::window_prefix(query, EXPANSION_CONTEXT.max(self.trained_context)).1 {
            return Err(Error::invalid(format!(
                "the query is {} bytes, more than the expansion context can hold",
                query.len()
            )));
        }
        let pieces = self.template.prompt(DEFAULT_SYSTEM_PROMPT, &user_message(query));
        self.tokenizer.encode_pieces(&pieces)
    }

    /// The model's expansion of `query`: lines of `lex|vec|hyde: text`
    /// (a line cut off by the token limit stays as it is).
    pub fn expand(&self, query: &str) -> Result<String> {
        self.expand_within(query, EXPANSION_CONTEXT)
    }

    /// [`expand`](Self::expand) in a context of `context` tokens (qmd's
    /// `QMD_EXPAND_CONTEXT_SIZE`) shared by the prompt and the answer.
    pub fn expand_within(&self, query: &str, context: usize) -> Result<String> {
        let mut run = now(self.start_with(query, Sampling::QMD_EXPANSION.with_seed(SEED), context))?;
        while run.step()? {}
        Ok(run.text())
    }

    /// [`expand`](Self::expand) with other sampling (greedy, in tests).
    pub fn expand_with(&self, query: &str, sampling: Sampling) -> Result<String> {
        let mut run = now(self.start_with(query, sampling, EXPANSION_CONTEXT))?;
        while run.step()? {}
        Ok(run.text())
    }

    /// [`expand`](Self::expand) a token per [`ExpansionRun::step`]: the
    /// prompt is processed here, so this call takes the prompt's time.
    pub fn start(&self, query: &str) -> Result<ExpansionRun<'_>> {
        now(self.start_async(query))
    }

    /// [`start`](Self::start), waiting for a GPU without blocking.
    pub async fn start_async(&self, query: &str) -> Result<ExpansionRun<'_>> {
        self.start_with(query, Sampling::QMD_EXPANSION.with_seed(SEED), EXPANSION_CONTEXT).await
    }

    async fn start_with(&self, query: &str, sampling: Sampling, context: usize) -> Result<ExpansionRun<'_>> {
        let prompt = self.prompt(query)?;
        let context = context.min(self.trained_context);
        let room = context.saturating_sub(prompt.len());
        if room == 0 {
            return Err(Error::invalid(format!(
                "the expansion prompt is {} tokens; the expansion context holds {context} \
                 (QMD_EXPAND_CONTEXT_SIZE, at most the model's {})",
                prompt.len(),
                self.trained_context
            )));
        }
        let limits = Limits {
            max_tokens: MAX_EXPANSION_TOKENS.min(room),
            end: &self.end,
            unpunished: &self.unpunished,
            grammar: Some(&self.mask),
        };
        let session = Session::on(&self.model, &self.device);
        let generation = Generation::start_async(session, &prompt, Sampler::new(sampling), limits).await?;
        Ok(ExpansionRun { tokenizer: &self.tokenizer, generation })
    }

    /// The model run along `reference`'s tokens after `text` (special
    /// tokens parsed, no chat form added), as another runtime's greedy
    /// output: at each step, the token we would choose and how far the
    /// reference's is below it in our logits. Where the two runtimes part
    /// at a near tie, the steps after it are still compared. For checks
    /// against llama.cpp where the model runs (the browser).
    pub async fn follow(&self, text: &str, reference: &[u32]) -> Result<FollowedRun> {
        let prompt = self.tokenizer.encode_prompt(text);
        let mut session = Session::on(&self.model, &self.device);
        let mut logits = session.feed_async(&prompt).await?;
        let first_logits = logits.clone();
        let (mut chosen, mut gaps) = (Vec::with_capacity(reference.len()), Vec::with_capacity(reference.len()));
        for (step, &token) in reference.iter().enumerate() {
            let ours = most_probable(&logits);
            let theirs = logits.get(token as usize).copied().unwrap_or(f32::NEG_INFINITY);
            chosen.push(ours);
            gaps.push(logits[ours as usize] - theirs);
            if step + 1 < reference.len() {
                logits = session.feed_async(&[token]).await?;
            }
        }
        Ok(FollowedRun { prompt, first_logits, chosen, gaps })
    }
}

/// What [`QueryExpander::follow`] reports.
pub struct FollowedRun {
    pub prompt: Vec<u32>,
    /// The logits after the prompt.
    pub first_logits: Vec<f32>,
    /// Our most probable token at each step of the reference.
    pub chosen: Vec<u32>,
    /// Our top logit less the reference token's, at each step (0 where
    /// we agree).
    pub gaps: Vec<f32>,
}

/// An expansion under way, a token per [`step`](Self::step).
pub struct ExpansionRun<'e> {
    tokenizer: &'e BpeTokenizer,
    generation: Generation<'e, 'e>,
}

impl ExpansionRun<'_> {
    /// Generates one more token; false once the expansion has ended.
    pub fn step(&mut self) -> Result<bool> {
        now(self.step_async())
    }

    /// [`step`](Self::step), waiting for a GPU without blocking.
    pub async fn step_async(&mut self) -> Result<bool> {
        Ok(self.generation.step_async().await?.is_some())
    }

    /// Tokens generated so far.
    pub fn tokens(&self) -> usize {
        self.generation.generated().len()
    }

    /// The text generated so far (the whole expansion once `step` has
    /// returned false).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.tokenizer.decode(self.generation.generated(), false)).into_owned()
    }
}

/// qmd's query-expansion model: a GGUF chat model, decoded on the
/// process's device (its GPU where it has one).
impl Loadable for QueryExpander {
    fn load(_files: ModelFiles, _device: &ModelDevice) -> Result<Self> {
        Err(Error::invalid(
            "a query-expansion model is one GGUF file: hf:owner/repo/file.gguf, or the path of a .gguf file",
        ))
    }

    fn load_gguf(name: &str, bytes: ModelBytes, device: &ModelDevice) -> Result<Self> {
        QueryExpander::load_on(name, bytes, device)
    }

    fn on_kernels(&self) -> bool {
        true
    }
}
