//! Special tokens cut out of a text before the vocabulary's own algorithm
//! sees it (llama.cpp's `tokenizer_st_partition`): longest tokens first,
//! each one's every occurrence in the text that is left. User-defined
//! tokens (`<think>`, Gemma's `<mark>`) are always cut out; control and
//! unknown tokens (`<|im_start|>`, `<bos>`) only when the caller parses
//! special tokens, as chat and rank templates do and document text never
//! does.

use super::token_type::{CONTROL, UNKNOWN, USER_DEFINED};

/// A piece of a partitioned text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fragment<'t> {
    Text(&'t str),
    Token(u32),
}

/// A piece of a prompt: the template's own special tokens, or text,
/// which is tokenized with special-token parsing off, so a query holding
/// `<|im_end|>` stays those characters and cannot close its turn (as
/// node-llama-cpp's `LlamaText` keeps its strings apart from its special
/// tokens).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptPiece {
    Special(&'static str),
    Text(String),
}

pub struct SpecialTokens {
    /// (text, id, parsed only with special tokens on), longest text first.
    tokens: Vec<(String, u32, bool)>,
}

impl SpecialTokens {
    /// The vocabulary's user-defined, control and unknown tokens.
    pub fn new(pieces: &[String], types: &[u64]) -> SpecialTokens {
        let mut tokens: Vec<(String, u32, bool)> = pieces
            .iter()
            .zip(types)
            .enumerate()
            .filter(|(_, (piece, kind))| !piece.is_empty() && matches!(**kind, CONTROL | USER_DEFINED | UNKNOWN))
            .map(|(id, (piece, kind))| (piece.clone(), id as u32, *kind != USER_DEFINED))
            .collect();
        tokens.sort_by_key(|(text, _, _)| std::cmp::Reverse(text.len()));
        SpecialTokens { tokens }
    }

    /// The text cut at every special token it holds.
    pub fn partition<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Fragment<'t>> {
        let mut fragments = if text.is_empty() { Vec::new() } else { vec![Fragment::Text(text)] };
        for (piece, id, special_only) in &self.tokens {
            if *special_only && !parse_special {
                continue;
            }
            if !fragments.iter().any(|f| matches!(f, Fragment::Text(t) if t.contains(piece.as_str()))) {
                continue;
            }
            let mut next = Vec::with_capacity(fragments.len() + 2);
            for fragment in fragments {
                let Fragment::Text(mut rest) = fragment else {
                    next.push(fragment);
                    continue;
                };
                while let Some(at) = rest.find(piece.as_str()) {
                    if at > 0 {
                        next.push(Fragment::Text(&rest[..at]));
                    }
                    next.push(Fragment::Token(*id));
                    rest = &rest[at + piece.len()..];
                }
                if !rest.is_empty() {
                    next.push(Fragment::Text(rest));
                }
            }
            fragments = next;
        }
        fragments
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::tokenizer::token_type::NORMAL;

    #[test]
    fn user_defined_always_control_only_when_parsing_special() {
        let pieces: Vec<String> = ["x", "<u>", "<|c|>", "<u><u>"].iter().map(|s| s.to_string()).collect();
        let special = SpecialTokens::new(&pieces, &[NORMAL, USER_DEFINED, CONTROL, USER_DEFINED]);
        use Fragment::*;
        assert_eq!(special.partition("a<u><u><u>b", false), [Text("a"), Token(3), Token(1), Text("b")]);
        assert_eq!(special.partition("<|c|>x", false), [Text("<|c|>x")]);
        assert_eq!(special.partition("<|c|>x<|c|>", true), [Token(2), Text("x"), Token(2)]);
        assert!(special.partition("", true).is_empty());
    }
}
