//! A decoder model's running sequence: the prompt processed in one pass,
//! then one token at a time, each step's keys and values kept in the
//! blocks' caches (llama.cpp's KV cache, f16 values), so a step costs the
//! new token's products and its attention over the cache, not the whole
//! sequence again.

use super::grammar::{State, TokenMask};
use super::sampler::{Sampler, Sampling};
use crate::arch::Decoder;
use crate::arch::backend::now;
use crate::arch::kv_cache::KvCache;
use crate::error::Result;
use crate::model::KernelDevice;

/// How a generation stops, and what it may produce.
#[derive(Clone, Copy)]
pub struct Limits<'a> {
    /// Most tokens generated.
    pub max_tokens: usize,
    /// Tokens that end generation (end of turn, end of text); not returned.
    pub end: &'a [u32],
    /// Tokens the presence penalty leaves alone (newlines, as
    /// node-llama-cpp does by default).
    pub unpunished: &'a [u32],
    /// A grammar every output must follow; generation then ends only where
    /// the grammar may end.
    pub grammar: Option<&'a TokenMask>,
}

pub struct Session<'m> {
    model: &'m Decoder,
    device: &'m KernelDevice,
    caches: Caches,
    tokens: Vec<u32>,
}

/// The blocks' caches, on the session's device.
enum Caches {
    Cpu(Vec<KvCache>),
    #[cfg(feature = "gpu")]
    Gpu(Vec<crate::gpu::GpuKvCache>),
}

impl<'m> Session<'m> {
    /// A session on the CPU kernels.
    pub fn new(model: &'m Decoder) -> Session<'m> {
        Session::on(model, &KernelDevice::Cpu)
    }

    /// A session on `device` (its caches there).
    pub fn on(model: &'m Decoder, device: &'m KernelDevice) -> Session<'m> {
        let caches = match device {
            KernelDevice::Cpu => Caches::Cpu(model.new_cache()),
            #[cfg(feature = "gpu")]
            KernelDevice::Gpu(_) => Caches::Gpu(model.new_cache()),
        };
        Session { model, device, caches, tokens: Vec::new() }
    }

    /// Every token the sequence holds.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Appends `tokens` (a prompt, or the token just chosen) and returns
    /// the logits for the token after them.
    pub fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        now(self.feed_async(tokens))
    }

    /// [`feed`](Self::feed), waiting for a GPU without blocking (a
    /// browser cannot block).
    pub async fn feed_async(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let (model, cached) = (self.model, self.tokens.len());
        let logits = match (self.device, &mut self.caches) {
            (_, Caches::Cpu(cache)) => model.logits(&model.extend(cache, cached, tokens)?),
            #[cfg(feature = "gpu")]
            (KernelDevice::Gpu(gpu), Caches::Gpu(cache)) => {
                let state = model.extend_on(gpu, cache, cached, tokens)?;
                gpu.read_async(model.logits_on(gpu, &state)).await?
            }
            #[cfg(feature = "gpu")]
            (KernelDevice::Cpu, Caches::Gpu(_)) => unreachable!("a session's caches are on its device"),
        };
        self.tokens.extend_from_slice(tokens);
        Ok(logits)
    }

    /// `count` tokens after `prompt`, each the most probable (ties to the
    /// lowest id), end-of-text tokens included: what llama.cpp's greedy
    /// runs are compared with.
    pub fn greedy(self, prompt: &[u32], count: usize) -> Result<Vec<u32>> {
        let limits = Limits { max_tokens: count, end: &[], unpunished: &[], grammar: None };
        self.generate(prompt, Sampler::new(Sampling::GREEDY), limits)
    }

    /// Tokens after `prompt`, each drawn by `sampler` from what `limits`
    /// allows, until an end token, the token limit, or a grammar with no
    /// way on.
    pub fn generate(self, prompt: &[u32], sampler: Sampler, limits: Limits) -> Result<Vec<u32>> {
        now(async {
            let mut generation = Generation::start_async(self, prompt, sampler, limits).await?;
            while generation.step_async().await?.is_some() {}
            Ok(generation.into_generated())
        })
    }
}

/// A generation advanced one token per [`step`](Generation::step), so a
/// caller that must not block for the whole answer (the browser's Worker)
/// can report progress and stop between tokens.
pub struct Generation<'m, 'l> {
    session: Session<'m>,
    sampler: Sampler,
    limits: Limits<'l>,
    state: State,
    generated: Vec<u32>,
    /// The logits for the next token; `None` once generation has ended.
    next: Option<Vec<f32>>,
}

impl<'m, 'l> Generation<'m, 'l> {
    /// Processes `prompt` (in one pass, as llama.cpp does) and stands
    /// before the first generated token.
    pub fn start(session: Session<'m>, prompt: &[u32], sampler: Sampler, limits: Limits<'l>) -> Result<Self> {
        now(Self::start_async(session, prompt, sampler, limits))
    }

    /// [`start`](Self::start), waiting for a GPU without blocking.
    pub async fn start_async(
        mut session: Session<'m>,
        prompt: &[u32],
        sampler: Sampler,
        limits: Limits<'l>,
    ) -> Result<Self> {
        let logits = session.feed_async(prompt).await?;
        let next = (limits.max_tokens > 0).then_some(logits);
        Ok(Generation { session, sampler, limits, state: State::START, generated: Vec::new(), next })
    }

    /// Chooses the next token and, unless it was the last one, runs the
    /// model over it; `None` once generation has ended.
    pub fn step(&mut self) -> Result<Option<u32>> {
        now(self.step_async())
    }

    /// [`step`](Self::step), waiting for a GPU without blocking.
    pub async fn step_async(&mut self) -> Result<Option<u32>> {
        let Some(mut logits) = self.next.take() else { return Ok(None) };
        let limits = self.limits;
        if let Some(mask) = limits.grammar {
            mask.apply(self.state, &mut logits);
            if logits.iter().all(|l| *l == f32::NEG_INFINITY) {
                return Ok(None);
            }
        }
        // node-llama-cpp's window: the last tokens generated, less those it
        // does not punish.
        let window = &self.generated[self.generated.len().saturating_sub(self.sampler.settings().window)..];
        let recent: Vec<u32> = window.iter().copied().filter(|t| !limits.unpunished.contains(t)).collect();
        let next = self.sampler.pick(&logits, &recent);
        if limits.end.contains(&next) {
            return Ok(None);
        }
        if let Some(mask) = limits.grammar {
            self.state = mask.after(self.state, next).expect("the mask allowed the token");
        }
        self.generated.push(next);
        if self.generated.len() < limits.max_tokens {
            self.next = Some(self.session.feed_async(&[next]).await?);
        }
        Ok(Some(next))
    }

    /// The tokens generated so far.
    pub fn generated(&self) -> &[u32] {
        &self.generated
    }

    pub fn into_generated(self) -> Vec<u32> {
        self.generated
    }
}
