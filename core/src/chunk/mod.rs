//! qmd's markdown chunker: cut a document into overlapping chunks at the
//! best-scoring break point (headings, fences, rules, paragraphs, lines)
//! near each target size, never inside a code fence.
//!
//! Under `--chunk-strategy auto` a code file's declarations join the break
//! points ([`Declarations`], from tree-sitter in [`code`]).
//!
//! Positions and sizes count Unicode scalar values (qmd counts UTF-16 code
//! units; the two agree outside the astral planes, and a scalar can never be
//! split, which qmd has to guard against separately).

#[cfg(feature = "code-chunks")]
mod code;
#[cfg(feature = "code-chunks")]
mod parse_memory;
mod strategy;

#[cfg(feature = "code-chunks")]
pub use code::MAX_SOURCE_BYTES;
pub use strategy::{
    ChunkStrategy, Declarations, Language, StrategyPlan, SyntaxFallback, SyntaxFinder, install_syntax_finder,
    syntax_available,
};

/// Character sizes of the char chunker (qmd's token sizes × 4).
pub const CHUNK_SIZE_CHARS: usize = 3600;
pub const CHUNK_OVERLAP_CHARS: usize = 540;
pub const CHUNK_WINDOW_CHARS: usize = 800;

/// How steeply a break point's score decays with distance from the target.
const DECAY: f64 = 0.7;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    /// Start, in chars from the start of the document.
    pub pos: usize,
}

/// A place a chunk may end: the index of a `\n`, with its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BreakPoint {
    pos: usize,
    score: u32,
}

/// Chunk sizes in tokens for an embedding model (qmd §4.4): qmd's
/// 900/135/200 assume a 2048-token model; a chunk longer than the model's
/// window would be embedded truncated, so the size is capped at the window
/// less its two special tokens (254 for MiniLM's 256, 510 for 512-token
/// BERTs), with overlap (15%) and search window (2/9) scaled alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenChunking {
    pub size: usize,
    pub overlap: usize,
    pub window: usize,
}

/// qmd's first-pass estimate: 3 chars per token, cheap and conservative.
const CHARS_PER_TOKEN: f64 = 3.0;

/// The chars-per-token density an embedding run has measured so far.
///
/// Dense text (scientific abstracts, code) has fewer than 3 chars per
/// token, so at qmd's fixed estimate most of its chunks overflow the window
/// and are embedded twice (truncated, then re-split). The first pass
/// instead uses a low percentile of the densities the tokenizer reported
/// for recent chunks, never above qmd's 3: prose keeps qmd's chunks, dense
/// text gets chunks that fit the first time.
#[derive(Clone, Debug, Default)]
pub struct TokenDensity {
    /// Recent chars/token samples, oldest first.
    samples: std::collections::VecDeque<f64>,
}

/// Samples kept: enough for a stable percentile, recent enough to follow
/// a change of corpus between collections.
const DENSITY_SAMPLES: usize = 512;
/// Fewer samples than this say too little: keep qmd's estimate.
const DENSITY_MIN_SAMPLES: usize = 16;
/// Chunks longer than this many tokens measure density well.
const DENSITY_MIN_TOKENS: usize = 32;

impl TokenDensity {
    /// Records a chunk of `chars` chars the tokenizer counted as `tokens`.
    pub fn record(&mut self, chars: usize, tokens: usize) {
        if tokens < DENSITY_MIN_TOKENS {
            return;
        }
        if self.samples.len() == DENSITY_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(chars as f64 / tokens as f64);
    }

    /// Chars per token for the first pass: the 10th percentile of the
    /// samples (so about nine chunks in ten fit), at most qmd's 3.
    pub fn chars_per_token(&self) -> f64 {
        if self.samples.len() < DENSITY_MIN_SAMPLES {
            return CHARS_PER_TOKEN;
        }
        let mut sorted: Vec<f64> = self.samples.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 10].clamp(1.0, CHARS_PER_TOKEN)
    }
}

impl TokenChunking {
    pub fn for_window(max_tokens: usize) -> TokenChunking {
        let size = 900.min(max_tokens.saturating_sub(2)).max(8);
        TokenChunking { size, overlap: size * 15 / 100, window: size * 2 / 9 }
    }

    /// The first pass, in chars, at `chars_per_token`, cutting at the
    /// markdown break points and `declarations`.
    pub fn first_pass(&self, content: &str, chars_per_token: f64, declarations: &Declarations) -> Vec<Chunk> {
        let chars = |tokens: usize| (tokens as f64 * chars_per_token).floor() as usize;
        chunk_declared(content, declarations, chars(self.size).max(1), chars(self.overlap), chars(self.window))
    }

    /// Re-splits a chunk the tokenizer measured at `tokens` (> `size`), at
    /// 95% of the density it showed, by the markdown break points alone
    /// (as qmd does); positions stay document-relative. An
    /// unsplittable chunk comes back whole (it is embedded truncated).
    pub fn resplit(&self, chunk: &Chunk, tokens: usize) -> Vec<Chunk> {
        let chars = chunk.text.chars().count();
        let per_token = chars as f64 / tokens.max(1) as f64;
        let mut max = (self.size as f64 * per_token * 0.95).floor() as usize;
        if max == 0 || max >= chars {
            max = chars / 2;
        }
        if max < 2 {
            return vec![chunk.clone()];
        }
        chunk_with(&chunk.text, max, max * 15 / 100, max * 2 / 9)
            .into_iter()
            .map(|c| Chunk { text: c.text, pos: c.pos + chunk.pos })
            .collect()
    }
}

/// Chunks `content` with qmd's default char sizes, cutting at the markdown
/// break points and `declarations` (qmd's `chunkDocumentAsync`).
pub fn chunk_document(content: &str, declarations: &Declarations) -> Vec<Chunk> {
    chunk_declared(content, declarations, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS, CHUNK_WINDOW_CHARS)
}

/// qmd's `chunkDocumentWithBreakPoints` over regex break points.
pub fn chunk_with(content: &str, max_chars: usize, overlap_chars: usize, window_chars: usize) -> Vec<Chunk> {
    chunk_declared(content, &Declarations::default(), max_chars, overlap_chars, window_chars)
}

/// qmd's `chunkDocumentWithBreakPoints` over the regex break points merged
/// with `declarations` (the best score at each position).
pub fn chunk_declared(
    content: &str,
    declarations: &Declarations,
    max_chars: usize,
    overlap_chars: usize,
    window_chars: usize,
) -> Vec<Chunk> {
    let chars: Vec<char> = content.chars().collect();
    if chars.len() <= max_chars {
        return vec![Chunk { text: content.to_string(), pos: 0 }];
    }
    let points = merge(break_points(&chars), &declarations.0);
    let fences = code_fences(&chars);
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut pos = 0usize;
    while pos < chars.len() {
        let target = (pos + max_chars).min(chars.len());
        let mut end = target;
        if end < chars.len() {
            let best = best_cutoff(&points, target, window_chars, &fences);
            if best > pos && best <= target {
                end = best;
            }
        }
        if end <= pos {
            end = (pos + max_chars).min(chars.len());
        }
        chunks.push(Chunk { text: chars[pos..end].iter().collect(), pos });
        if end >= chars.len() {
            break;
        }
        let last_start = pos;
        pos = end.saturating_sub(overlap_chars);
        if pos <= last_start {
            pos = end;
        }
    }
    chunks
}

fn best_cutoff(points: &[BreakPoint], target: usize, window: usize, fences: &[(usize, usize)]) -> usize {
    let window_start = target as f64 - window as f64;
    let (mut best_score, mut best_pos) = (-1.0f64, target);
    // Points are sorted: start at the window, not at the document's start
    // (a scan from 0 for every chunk is quadratic in the document).
    let first = points.partition_point(|bp| (bp.pos as f64) < window_start);
    for bp in &points[first..] {
        if bp.pos > target {
            break;
        }
        if in_fence(fences, bp.pos) {
            continue;
        }
        let distance = (target - bp.pos) as f64 / window as f64;
        let score = f64::from(bp.score) * (1.0 - distance * distance * DECAY);
        if score > best_score {
            best_score = score;
            best_pos = bp.pos;
        }
    }
    best_pos
}

/// Both sets of points (each sorted by position, one a position) as one,
/// the higher score where both have a position.
fn merge(regex: Vec<BreakPoint>, declared: &[BreakPoint]) -> Vec<BreakPoint> {
    if declared.is_empty() {
        return regex;
    }
    let mut merged = Vec::with_capacity(regex.len() + declared.len());
    let (mut a, mut b) = (regex.into_iter().peekable(), declared.iter().copied().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.pos == y.pos => {
                let score = x.score.max(y.score);
                let pos = x.pos;
                a.next();
                b.next();
                BreakPoint { pos, score }
            }
            (Some(x), Some(y)) if x.pos < y.pos => a.next().expect("peeked"),
            (Some(_), Some(_)) | (None, Some(_)) => b.next().expect("peeked"),
            (Some(_), None) => a.next().expect("peeked"),
            (None, None) => break,
        };
        merged.push(next);
    }
    merged
}

/// qmd's `\s` (JavaScript whitespace, close enough: Unicode White_Space).
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// Every break point, the best score per position, sorted by position.
/// Mirrors qmd's regexes, including where their matches cannot overlap.
fn break_points(chars: &[char]) -> Vec<BreakPoint> {
    let at = |i: usize| chars.get(i).copied();
    let mut best: Vec<u32> = vec![0; chars.len()];
    let mut put = |pos: usize, score: u32| best[pos] = best[pos].max(score);
    let mut i = 0;
    let mut blank_until = 0; // `\n\n+` consumes its whole run
    let mut hr_until = 0; // so does a rule up to its last newline
    while i < chars.len() {
        if chars[i] != '\n' {
            i += 1;
            continue;
        }
        put(i, 1);
        let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
        if (1..=6).contains(&hashes) {
            put(i, 110 - 10 * hashes as u32);
        }
        if chars[i + 1..].starts_with(&['`', '`', '`']) {
            put(i, 80);
        }
        if i >= hr_until && [['-'; 3], ['*'; 3], ['_'; 3]].iter().any(|r| chars[i + 1..].starts_with(r)) {
            let run = chars[i + 4..].iter().take_while(|&&c| is_space(c)).count();
            if let Some(last) = chars[i + 4..i + 4 + run].iter().rposition(|&c| c == '\n') {
                put(i, 60);
                hr_until = i + 4 + last + 1;
            }
        }
        if i >= blank_until && at(i + 1) == Some('\n') {
            put(i, 20);
            blank_until = i + chars[i..].iter().take_while(|&&c| c == '\n').count();
        }
        if matches!(at(i + 1), Some('-' | '*')) && at(i + 2).is_some_and(is_space) {
            put(i, 5);
        }
        let digits = chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && at(i + 1 + digits) == Some('.') && at(i + 2 + digits).is_some_and(is_space) {
            put(i, 5);
        }
        i += 1;
    }
    best.iter().enumerate().filter(|&(_, &s)| s > 0).map(|(pos, &score)| BreakPoint { pos, score }).collect()
}

/// Whether `pos` is strictly inside one of `fences` (sorted and apart, as
/// [`code_fences`] makes them): only the last one starting before `pos`
/// can hold it.
fn in_fence(fences: &[(usize, usize)], pos: usize) -> bool {
    let before = fences.partition_point(|&(start, _)| start < pos);
    before > 0 && pos < fences[before - 1].1
}

/// Regions between pairs of `\n```` (an unclosed one runs to the end).
fn code_fences(chars: &[char]) -> Vec<(usize, usize)> {
    let mut regions = Vec::new();
    let mut open: Option<usize> = None;
    let mut i = 0;
    while i + 3 < chars.len() {
        if chars[i] == '\n' && chars[i + 1..i + 4] == ['`', '`', '`'] {
            match open.take() {
                None => open = Some(i),
                Some(start) => regions.push((start, i + 4)),
            }
            i += 4;
        } else {
            i += 1;
        }
    }
    if let Some(start) = open {
        regions.push((start, chars.len()));
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fence lookup agrees with a scan of every fence, and a document
    /// dense in fences and break points chunks in linear time: 4 MB of
    /// "\n```" was quadratic (each chunk scanned every point before it, and
    /// every fence for each point in its window).
    #[test]
    fn cut_points_are_found_in_linear_time() {
        let fences = code_fences(&"x\n```a\n```\nb\n```c".chars().collect::<Vec<_>>());
        for pos in 0..20 {
            let scanned = fences.iter().any(|&(start, end)| pos > start && pos < end);
            assert_eq!(in_fence(&fences, pos), scanned, "{pos}");
        }
        let small = "\n```\n\nword ".repeat(2_000);
        let large = "\n```\n\nword ".repeat(64_000);
        let time = |text: &str| {
            let started = std::time::Instant::now();
            let chunks = chunk_document(text, &Declarations::default());
            assert!(chunks.len() > 1);
            started.elapsed().as_secs_f64()
        };
        let (small, large) = (time(&small).max(1e-4), time(&large));
        // 32 times the input; linear is ~32x, quadratic ~1000x.
        assert!(large < small * 200.0 + 0.5, "{small:.4}s then {large:.4}s");
    }

    fn scores(text: &str) -> Vec<(usize, u32)> {
        break_points(&text.chars().collect::<Vec<_>>()).iter().map(|b| (b.pos, b.score)).collect()
    }

    #[test]
    fn break_point_scores_follow_qmd_patterns() {
        assert_eq!(scores("a\n# h"), vec![(1, 100)]);
        assert_eq!(scores("a\n### h"), vec![(1, 80)]);
        assert_eq!(scores("a\n####### h"), vec![(1, 1)], "seven hashes are no heading");
        // `\n\n+` matches once per run; later newlines of the run score 1.
        assert_eq!(scores("a\n\n\nb"), vec![(1, 20), (2, 1), (3, 1)]);
        assert_eq!(scores("a\n---\nb"), vec![(1, 60), (5, 1)]);
        assert_eq!(scores("a\n- x\n12. y"), vec![(1, 5), (5, 5)]);
        assert_eq!(scores("a\n```\nb"), vec![(1, 80), (5, 1)]);
    }

    #[test]
    fn density_starts_at_qmds_estimate_and_follows_dense_text_down() {
        let mut density = TokenDensity::default();
        assert_eq!(density.chars_per_token(), CHARS_PER_TOKEN);
        for _ in 0..15 {
            density.record(500, 250);
        }
        assert_eq!(density.chars_per_token(), CHARS_PER_TOKEN, "too few samples to trust");
        density.record(10, 5); // too short to measure: ignored
        assert_eq!(density.chars_per_token(), CHARS_PER_TOKEN);
        density.record(500, 250);
        assert_eq!(density.chars_per_token(), 2.0);
        // Prose at 4.5 chars/token never raises it above qmd's 3.
        for _ in 0..DENSITY_SAMPLES {
            density.record(900, 200);
        }
        assert_eq!(density.chars_per_token(), CHARS_PER_TOKEN);
        // The low percentile: one dense chunk in twenty does not move it,
        // one in five does.
        for i in 0..DENSITY_SAMPLES {
            density.record(if i % 5 == 0 { 400 } else { 900 }, 200);
        }
        assert_eq!(density.chars_per_token(), 2.0);
    }

    #[test]
    fn first_pass_sizes_follow_the_density() {
        let chunking = TokenChunking::for_window(256);
        let doc = "word ".repeat(1000);
        let at = |cpt: f64| chunking.first_pass(&doc, cpt, &Declarations::default())[0].text.chars().count();
        assert!(at(3.0) <= 254 * 3 && at(3.0) > 254 * 2);
        assert!(at(2.0) <= 254 * 2 && at(2.0) > 254);
    }

    #[test]
    fn short_documents_are_one_chunk() {
        assert_eq!(chunk_document("hello", &Declarations::default()), vec![Chunk { text: "hello".into(), pos: 0 }]);
    }

    #[test]
    fn cuts_prefer_headings_and_overlap() {
        let section = |h: &str| format!("# {h}\n\n{}\n", "word ".repeat(150));
        let doc: String = (0..8).map(|i| section(&format!("S{i}"))).collect();
        let chunks = chunk_with(&doc, 1000, 150, 400);
        assert!(chunks.len() > 1);
        for pair in chunks.windows(2) {
            let end = pair[0].pos + pair[0].text.chars().count();
            assert!(pair[1].pos < end, "chunks overlap");
            // The cut lands on a heading's newline.
            assert!(doc[end..].starts_with("\n# "), "cut at {end}: {:?}", &doc[end..end + 10]);
        }
        let last = chunks.last().unwrap();
        assert_eq!(last.pos + last.text.chars().count(), doc.chars().count());
    }

    #[test]
    fn never_cuts_inside_a_code_fence() {
        let code = "x = 1\n".repeat(100);
        let doc = format!("{}\n```\n{code}```\n{}", "intro ".repeat(100), "outro ".repeat(100));
        let fence = code_fences(&doc.chars().collect::<Vec<_>>());
        assert_eq!(fence.len(), 1);
        for chunk in chunk_with(&doc, 800, 100, 400) {
            let end = chunk.pos + chunk.text.chars().count();
            let (start, stop) = fence[0];
            let cut_by_break_point = end < doc.chars().count() && doc.as_bytes()[end] == b'\n';
            assert!(!(cut_by_break_point && end > start && end < stop), "cut at {end} inside fence {start}..{stop}");
        }
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let doc = "日本語のテキスト。".repeat(500);
        let chunks = chunk_with(&doc, 1000, 100, 200);
        assert!(chunks.len() > 4);
        let total: usize = doc.chars().count();
        assert_eq!(chunks.last().map(|c| c.pos + c.text.chars().count()), Some(total));
    }
}
