//! Choosing the next token as qmd configures node-llama-cpp for query
//! expansion (`src/llm.ts`: temperature 0.7, top-k 20, top-p 0.8, presence
//! penalty 0.5 over the last 64 generated tokens, newlines unpunished), in
//! llama.cpp's order: penalties, top-k, top-p, temperature, then a draw.
//! Draws come from a seeded generator, so a seed repeats a generation;
//! [`Sampling::GREEDY`] takes the most probable token, for tests.

/// The settings of one generation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// 0: always the most probable token.
    pub temperature: f32,
    /// Candidates kept by logit (0: all).
    pub top_k: usize,
    /// The smallest set of candidates whose probability reaches this.
    pub top_p: f32,
    /// Subtracted from the logit of a token among the last `window`
    /// generated ones (llama.cpp's `penalty_present`).
    pub presence_penalty: f32,
    pub window: usize,
    pub seed: u64,
}

impl Sampling {
    /// qmd's expansion settings (Qwen3's recommendation for non-thinking mode).
    pub const QMD_EXPANSION: Sampling =
        Sampling { temperature: 0.7, top_k: 20, top_p: 0.8, presence_penalty: 0.5, window: 64, seed: 0 };

    pub const GREEDY: Sampling =
        Sampling { temperature: 0.0, top_k: 1, top_p: 1.0, presence_penalty: 0.0, window: 0, seed: 0 };

    pub fn with_seed(self, seed: u64) -> Sampling {
        Sampling { seed, ..self }
    }
}

/// Draws tokens by [`Sampling`].
pub struct Sampler {
    settings: Sampling,
    state: u64,
}

impl Sampler {
    pub fn new(settings: Sampling) -> Sampler {
        Sampler { settings, state: settings.seed }
    }

    pub fn settings(&self) -> Sampling {
        self.settings
    }

    /// SplitMix64: a full-period 64-bit generator, enough for sampling.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next token. `logits` may hold `-inf` for tokens a grammar
    /// forbids (never chosen while another is allowed); `recent` are the
    /// generated tokens the presence penalty applies to (the caller leaves
    /// out what it does not punish, such as newlines).
    pub fn pick(&mut self, logits: &[f32], recent: &[u32]) -> u32 {
        let s = self.settings;
        let penalised = s.presence_penalty != 0.0 && s.window > 0 && !recent.is_empty();
        if (s.temperature <= 0.0 || s.top_k == 1) && !penalised {
            return most_probable(logits);
        }
        let mut scored: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(token, &logit)| (token as u32, logit))
            .collect();
        if scored.is_empty() {
            return most_probable(logits);
        }
        if penalised {
            let window = &recent[recent.len().saturating_sub(s.window)..];
            for (token, logit) in &mut scored {
                if window.contains(token) {
                    *logit -= s.presence_penalty;
                }
            }
        }
        // Highest first; equal logits by lowest id, as the greedy path.
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if s.temperature <= 0.0 || s.top_k == 1 {
            return scored.iter().min_by(|a, b| order(a, b)).expect("not empty").0;
        }
        // The top k found in linear time; only they are sorted (a Qwen
        // vocabulary has 151,669 tokens, a step keeps 20).
        if s.top_k > 0 && s.top_k < scored.len() {
            scored.select_nth_unstable_by(s.top_k - 1, order);
            scored.truncate(s.top_k);
        }
        scored.sort_by(order);
        // Top-p over the untempered distribution, as llama.cpp's chain
        // applies it before the temperature.
        let probabilities = softmax(&scored, 1.0);
        let mut mass = 0.0;
        let keep = probabilities
            .iter()
            .position(|p| {
                mass += p;
                mass >= f64::from(s.top_p)
            })
            .map_or(scored.len(), |last| last + 1);
        scored.truncate(keep.max(1));
        let probabilities = softmax(&scored, s.temperature);
        let mut draw = self.uniform();
        for (&(token, _), p) in scored.iter().zip(&probabilities) {
            if draw < *p {
                return token;
            }
            draw -= p;
        }
        scored[scored.len() - 1].0
    }
}

/// Probabilities of the candidates' logits divided by `temperature`.
fn softmax(scored: &[(u32, f32)], temperature: f32) -> Vec<f64> {
    let top = f64::from(scored[0].1);
    let weights: Vec<f64> =
        scored.iter().map(|&(_, l)| ((f64::from(l) - top) / f64::from(temperature)).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / total).collect()
}

/// The token of the largest logit (the lowest id among equals).
pub fn most_probable(logits: &[f32]) -> u32 {
    logits.iter().enumerate().fold((0, f32::NEG_INFINITY), |best, (i, &l)| if l > best.1 { (i, l) } else { best }).0
        as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(settings: Sampling, logits: &[f32], recent: &[u32], draws: usize) -> Vec<usize> {
        let mut sampler = Sampler::new(settings);
        let mut counts = vec![0; logits.len()];
        for _ in 0..draws {
            counts[sampler.pick(logits, recent) as usize] += 1;
        }
        counts
    }

    #[test]
    fn greedy_takes_the_largest_logit_lowest_id_first() {
        let mut sampler = Sampler::new(Sampling::GREEDY);
        assert_eq!(sampler.pick(&[0.1, 2.0, -1.0, 2.0], &[]), 1);
        assert_eq!(sampler.pick(&[f32::NEG_INFINITY, -5.0], &[]), 1);
    }

    #[test]
    fn forbidden_tokens_are_never_drawn() {
        let logits = [3.0, f32::NEG_INFINITY, 2.9, f32::NEG_INFINITY, 2.8];
        let settings = Sampling { top_k: 0, top_p: 1.0, temperature: 5.0, ..Sampling::QMD_EXPANSION };
        let counts = counts(settings.with_seed(7), &logits, &[], 5000);
        assert_eq!((counts[1], counts[3]), (0, 0));
        assert!(counts[0] > 1000 && counts[2] > 1000 && counts[4] > 1000, "{counts:?}");
    }

    #[test]
    fn draws_follow_the_tempered_distribution() {
        // p = 3/4 and 1/4 at temperature 1.
        let logits = [3f32.ln(), 0.0];
        let settings = Sampling { temperature: 1.0, top_k: 0, top_p: 1.0, presence_penalty: 0.0, window: 0, seed: 11 };
        let counts = counts(settings, &logits, &[], 20_000);
        let share = counts[0] as f64 / 20_000.0;
        assert!((share - 0.75).abs() < 0.015, "{share}");
        // Temperature 0.5 squares the odds: 9:1.
        let counts = self::counts(Sampling { temperature: 0.5, ..settings }, &logits, &[], 20_000);
        let share = counts[0] as f64 / 20_000.0;
        assert!((share - 0.9).abs() < 0.01, "{share}");
    }

    #[test]
    fn top_k_and_top_p_cut_the_tail() {
        // Probabilities 0.5, 0.3, 0.15, 0.05.
        let logits: Vec<f32> = [0.5f32, 0.3, 0.15, 0.05].iter().map(|p| p.ln()).collect();
        let base = Sampling { temperature: 1.0, top_k: 0, top_p: 1.0, presence_penalty: 0.0, window: 0, seed: 3 };
        // 0.5 + 0.3 reaches 0.75: the third is cut.
        let top_p = counts(Sampling { top_p: 0.75, ..base }, &logits, &[], 10_000);
        assert!(top_p[0] > 0 && top_p[1] > 0 && top_p[2] == 0 && top_p[3] == 0, "{top_p:?}");
        let top_k = counts(Sampling { top_k: 3, ..base }, &logits, &[], 10_000);
        assert!(top_k[2] > 0 && top_k[3] == 0, "{top_k:?}");
    }

    #[test]
    fn presence_penalty_applies_to_the_window_only() {
        let logits = [1.0, 1.3, 0.0];
        let settings = Sampling { top_k: 1, ..Sampling::QMD_EXPANSION };
        // Token 1 leads by 0.3; present in the window it trails by 0.2.
        assert_eq!(Sampler::new(settings).pick(&logits, &[1]), 0);
        // Present only before the window: no penalty.
        let long: Vec<u32> = std::iter::once(1).chain(std::iter::repeat_n(2, 64)).collect();
        assert_eq!(Sampler::new(settings).pick(&logits, &long), 1);
        assert_eq!(Sampler::new(settings).pick(&logits, &long[1..]), 1);
    }

    #[test]
    fn a_seed_repeats_a_generation() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let run = |seed| {
            let mut sampler = Sampler::new(Sampling::QMD_EXPANSION.with_seed(seed));
            (0..32).map(|_| sampler.pick(&logits, &[])).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
