//! qmd's expansion grammar (its GBNF, `src/llm.ts`):
//!
//! ```text
//! root    ::= line+
//! line    ::= type ": " content "\n"
//! type    ::= "lex" | "vec" | "hyde"
//! content ::= [^\n]+
//! ```
//!
//! as an automaton over bytes (a content character is any byte but
//! `\n`, so UTF-8 text and byte-fallback tokens split inside a character
//! pass), and the mask it puts on a decoding step: a token may follow
//! only if every byte of it continues a valid output, and generation may
//! end only after a whole line. The automaton has 13 states, so each
//! state's allowed tokens and the state each token leads to are computed
//! once per vocabulary, and a step costs one pass over the logits.

/// The types a line may start with.
const TYPES: [&[u8]; 3] = [b"lex", b"vec", b"hyde"];

/// Where the output stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// At the start of a line; `after_line` once a line is complete (the
    /// output may end only there).
    LineStart { after_line: bool },
    /// `matched` bytes of `TYPES[word]`.
    Type { word: u8, matched: u8 },
    /// After a whole type: `:` next.
    Colon,
    /// After `:`: a space next.
    Space,
    /// After `: `: a content byte next (content is not empty).
    ContentStart,
    /// Inside content: more content, or `\n`.
    Content,
}

impl State {
    pub const START: State = State::LineStart { after_line: false };

    /// The state after `byte`, or `None` where the grammar has no way on.
    pub fn step(self, byte: u8) -> Option<State> {
        match self {
            State::LineStart { .. } => {
                let word = TYPES.iter().position(|t| t[0] == byte)?;
                Some(State::Type { word: word as u8, matched: 1 })
            }
            State::Type { word, matched } => {
                let name = TYPES[usize::from(word)];
                (name[usize::from(matched)] == byte).then(|| {
                    let matched = matched + 1;
                    if usize::from(matched) == name.len() { State::Colon } else { State::Type { word, matched } }
                })
            }
            State::Colon => (byte == b':').then_some(State::Space),
            State::Space => (byte == b' ').then_some(State::ContentStart),
            State::ContentStart => (byte != b'\n').then_some(State::Content),
            State::Content => Some(if byte == b'\n' { State::LineStart { after_line: true } } else { State::Content }),
        }
    }

    /// The state after all of `bytes`.
    pub fn advance(self, bytes: &[u8]) -> Option<State> {
        bytes.iter().try_fold(self, |state, &b| state.step(b))
    }

    /// Whether the output may end here.
    pub fn can_end(self) -> bool {
        self == State::LineStart { after_line: true }
    }

    /// Every state, in a fixed order (its index in [`TokenMask`]'s tables).
    fn all() -> Vec<State> {
        let mut states = vec![State::LineStart { after_line: false }, State::LineStart { after_line: true }];
        for (word, name) in TYPES.iter().enumerate() {
            states.extend((1..name.len()).map(|matched| State::Type { word: word as u8, matched: matched as u8 }));
        }
        states.extend([State::Colon, State::Space, State::ContentStart, State::Content]);
        states
    }
}

/// A vocabulary's tokens under the grammar: for each state, the state each
/// token leads to (none where the token cannot follow).
pub struct TokenMask {
    states: Vec<State>,
    /// `next[state][token]`: an index into `states`, or `u8::MAX`.
    next: Vec<Vec<u8>>,
    /// Tokens that end generation (end of turn, end of text).
    end: Vec<u32>,
}

const BLOCKED: u8 = u8::MAX;

impl TokenMask {
    /// `tokens[id]` is the text a token adds, as bytes, or `None` for
    /// tokens that never appear in the output (control tokens: those in
    /// `end` are allowed where the output may end).
    pub fn new(tokens: &[Option<Vec<u8>>], end: Vec<u32>) -> TokenMask {
        let states = State::all();
        let index = |s: State| states.iter().position(|&t| t == s).expect("every state is listed") as u8;
        let next = states
            .iter()
            .map(|&state| {
                tokens
                    .iter()
                    .map(|bytes| match bytes {
                        Some(bytes) if !bytes.is_empty() => state.advance(bytes).map_or(BLOCKED, index),
                        _ => BLOCKED,
                    })
                    .collect()
            })
            .collect();
        TokenMask { states, next, end }
    }

    fn at(&self, state: State) -> usize {
        self.states.iter().position(|&s| s == state).expect("a state of the grammar")
    }

    /// Whether `token` may come next in `state`.
    pub fn allows(&self, state: State, token: u32) -> bool {
        if self.end.contains(&token) {
            return state.can_end();
        }
        self.next[self.at(state)].get(token as usize).is_some_and(|&n| n != BLOCKED)
    }

    /// Sets the logits of every token that may not come next to −∞.
    pub fn apply(&self, state: State, logits: &mut [f32]) {
        let ends: Vec<Option<f32>> = self.end.iter().map(|&t| logits.get(t as usize).copied()).collect();
        let next = &self.next[self.at(state)];
        for (logit, &n) in logits.iter_mut().zip(next) {
            if n == BLOCKED {
                *logit = f32::NEG_INFINITY;
            }
        }
        if state.can_end() {
            for (&token, logit) in self.end.iter().zip(ends) {
                if let Some(logit) = logit {
                    logits[token as usize] = logit;
                }
            }
        }
    }

    /// The state after `token` (the end tokens leave it as it is).
    pub fn after(&self, state: State, token: u32) -> Option<State> {
        if self.end.contains(&token) {
            return state.can_end().then_some(state);
        }
        let n = *self.next[self.at(state)].get(token as usize)?;
        (n != BLOCKED).then(|| self.states[usize::from(n)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::xorshift;

    /// The grammar read plainly, not by the automaton: non-empty, every
    /// line `type: content` with content free of newlines, ending in one.
    fn valid(text: &[u8]) -> bool {
        let Some(body) = text.strip_suffix(b"\n") else { return false };
        !text.is_empty()
            && body.split(|&b| b == b'\n').all(|line| {
                TYPES.iter().any(|t| {
                    line.strip_prefix(*t).and_then(|rest| rest.strip_prefix(b": ")).is_some_and(|c| !c.is_empty())
                })
            })
    }

    #[test]
    fn the_automaton_accepts_the_grammar_and_nothing_else() {
        let cases: [(&[u8], bool); 14] = [
            (b"lex: a\n", true),
            (b"lex: rotate keys\nvec: how to rotate api keys\nhyde: Keys are rotated by ...\n", true),
            ("vec: caf\u{e9} na\u{ef}ve \u{65e5}\u{672c}\n".as_bytes(), true),
            (b"hyde: : lex: \n", true),
            (b"", false),
            (b"lex: a", false),
            (b"lex:a\n", false),
            (b"lex: \n", false),
            (b"lex:  \n", true),
            (b"Lex: a\n", false),
            (b"lexx: a\n", false),
            (b"hyd: a\n", false),
            (b"lex: a\n\n", false),
            (b"foo: a\n", false),
        ];
        for (text, want) in cases {
            let got = State::START.advance(text).is_some_and(State::can_end);
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(text));
            assert_eq!(valid(text), want, "the plain reading of {:?}", String::from_utf8_lossy(text));
        }
    }

    /// A random vocabulary over the bytes the grammar cares about, every
    /// single byte among them (so any text has a tokenization), and one
    /// end token (the last id).
    fn vocabulary(next: &mut impl FnMut() -> u64) -> Vec<Option<Vec<u8>>> {
        let alphabet = b"lexvchyd: \nab\xc3\xa9";
        let mut tokens: Vec<Option<Vec<u8>>> = alphabet.iter().map(|&b| Some(vec![b])).collect();
        for _ in 0..300 {
            let len = 2 + (next() % 6) as usize;
            tokens.push(Some((0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect()));
        }
        tokens.extend([Some(b"lex: ".to_vec()), Some(b"\nvec: ".to_vec()), Some(b"hyde:".to_vec()), None]);
        tokens
    }

    /// Sampling from random logits under the mask never leaves the
    /// grammar, and ends only on a whole line.
    #[test]
    fn masked_sampling_never_leaves_the_grammar() {
        let mut next = xorshift(29);
        let tokens = vocabulary(&mut next);
        let end = tokens.len() as u32 - 1;
        let mask = TokenMask::new(&tokens, vec![end]);
        let mut endings = 0;
        for run in 0..300 {
            let (mut state, mut text) = (State::START, Vec::new());
            let mut ended = false;
            for _ in 0..80 {
                let mut logits: Vec<f32> = (0..tokens.len()).map(|_| (next() % 1000) as f32 / 100.0).collect();
                // The end token favoured, so that many runs end (where allowed).
                logits[end as usize] += 9.0;
                mask.apply(state, &mut logits);
                let best = crate::generate::sampler::most_probable(&logits);
                assert!(logits[best as usize].is_finite(), "run {run}: some token may always follow");
                assert!(mask.allows(state, best));
                if best == end {
                    ended = true;
                    break;
                }
                text.extend(tokens[best as usize].as_ref().unwrap());
                state = mask.after(state, best).unwrap();
            }
            if ended {
                endings += 1;
                assert!(valid(&text), "run {run}: {:?}", String::from_utf8_lossy(&text));
            } else {
                // Cut off by the step limit: still a prefix of valid output.
                assert!(State::START.advance(&text).is_some(), "run {run}: {:?}", String::from_utf8_lossy(&text));
            }
        }
        assert!(endings > 150, "{endings} of 300 runs ended");
    }

    /// Every output the grammar allows can be produced: its tokens (a
    /// greedy longest-match tokenization) pass the mask one by one, and
    /// then the end token does.
    #[test]
    fn every_valid_output_passes_the_mask() {
        let mut next = xorshift(31);
        let tokens = vocabulary(&mut next);
        let end = tokens.len() as u32 - 1;
        let mask = TokenMask::new(&tokens, vec![end]);
        let contents: [&[u8]; 5] = [b"a", b"lex: ab", b"\xc3\xa9:", b"  x  ", b"hyde"];
        for case in 0..200 {
            let mut text = Vec::new();
            for _ in 0..1 + next() % 4 {
                text.extend(TYPES[(next() % 3) as usize]);
                text.extend(b": ");
                text.extend(contents[(next() % 5) as usize]);
                text.push(b'\n');
            }
            assert!(valid(&text));
            let (mut state, mut at) = (State::START, 0);
            while at < text.len() {
                let (id, len) = tokens
                    .iter()
                    .enumerate()
                    .filter_map(|(id, t)| t.as_ref().filter(|t| text[at..].starts_with(t)).map(|t| (id, t.len())))
                    .max_by_key(|&(_, len)| len)
                    .unwrap();
                assert!(mask.allows(state, id as u32), "case {case}: {:?} at {at}", String::from_utf8_lossy(&text));
                state = mask.after(state, id as u32).unwrap();
                at += len;
            }
            assert!(mask.allows(state, end), "case {case}: may end after {:?}", String::from_utf8_lossy(&text));
        }
    }
}
