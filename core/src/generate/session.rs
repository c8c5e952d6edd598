//! A decoder model's running sequence: the prompt processed in one pass,
//! then one token at a time, each step's keys and values kept in the
//! blocks' caches (llama.cpp's KV cache, f16 values), so a step costs the
//! new token's products and its attention over the cache, not the whole
//! sequence again.

use super::grammar::{State, TokenMask};
use super::sampler::{Sampler, Sampling};
use crate::arch::Decoder;
use crate::arch::block::KvCache;
use crate::error::Result;

/// How a generation stops, and what it may produce.
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
    cache: Vec<KvCache>,
    tokens: Vec<u32>,
}

impl<'m> Session<'m> {
    pub fn new(model: &'m Decoder) -> Session<'m> {
        Session { model, cache: model.new_cache(), tokens: Vec::new() }
    }

    /// Every token the sequence holds.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Appends `tokens` (a prompt, or the token just chosen) and returns
    /// the logits for the token after them.
    pub fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let state = self.model.extend(&mut self.cache, self.tokens.len(), tokens)?;
        self.tokens.extend_from_slice(tokens);
        Ok(self.model.logits(&state))
    }

    /// `count` tokens after `prompt`, each the most probable (ties to the
    /// lowest id), end-of-text tokens included: what llama.cpp's greedy
    /// runs are compared with.
    pub fn greedy(&mut self, prompt: &[u32], count: usize) -> Result<Vec<u32>> {
        let limits = Limits { max_tokens: count, end: &[], unpunished: &[], grammar: None };
        self.generate(prompt, &mut Sampler::new(Sampling::GREEDY), &limits)
    }

    /// Tokens after `prompt`, each drawn by `sampler` from what `limits`
    /// allows, until an end token, the token limit, or a grammar with no
    /// way on.
    pub fn generate(&mut self, prompt: &[u32], sampler: &mut Sampler, limits: &Limits) -> Result<Vec<u32>> {
        let mut logits = self.feed(prompt)?;
        let mut state = State::START;
        let mut out: Vec<u32> = Vec::new();
        while out.len() < limits.max_tokens {
            if let Some(mask) = limits.grammar {
                mask.apply(state, &mut logits);
                if logits.iter().all(|l| *l == f32::NEG_INFINITY) {
                    break;
                }
            }
            // node-llama-cpp's window: the last tokens generated, less those
            // it does not punish.
            let window = &out[out.len().saturating_sub(sampler.settings().window)..];
            let recent: Vec<u32> = window.iter().copied().filter(|t| !limits.unpunished.contains(t)).collect();
            let next = sampler.pick(&logits, &recent);
            if limits.end.contains(&next) {
                break;
            }
            if let Some(mask) = limits.grammar {
                state = mask.after(state, next).expect("the mask allowed the token");
            }
            out.push(next);
            if out.len() < limits.max_tokens {
                logits = self.feed(&[next])?;
            }
        }
        Ok(out)
    }
}

/// The token of the largest logit (the lowest id among equals).
pub fn most_probable(logits: &[f32]) -> u32 {
    logits.iter().enumerate().fold((0, f32::NEG_INFINITY), |best, (i, &l)| if l > best.1 { (i, l) } else { best }).0
        as u32
}
