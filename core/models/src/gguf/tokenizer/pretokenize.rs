//! A byte-level BPE vocabulary's pre-tokenizer: the regular expressions
//! llama.cpp applies for each `tokenizer.ggml.pre` name
//! (`llm_tokenizer_bpe`), in order, each one splitting every piece the
//! previous ones made (`unicode_regex_split`). Text between matches stays
//! a piece of its own, so no byte is ever dropped.

use fancy_regex::Regex;

use crate::error::{Error, Result};

const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

pub struct PreTokenizer {
    expressions: Vec<Regex>,
}

impl PreTokenizer {
    /// The pre-tokenizer `pre` names; an error for one this project does
    /// not know (llama.cpp refuses unknown names too).
    pub fn named(pre: &str) -> Result<PreTokenizer> {
        let expressions: &[&str] = match pre {
            "qwen2" | "deepseek-r1-qwen" => &[QWEN2],
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" | "lfm2" => &[LLAMA3],
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva" => &[r"\p{N}", GPT2],
            "gpt-2" | "mpt" | "olmo" | "jais" => &[GPT2],
            "default" | "" => &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
            other => return Err(Error::invalid(format!("pre-tokenizer '{other}' is not supported"))),
        };
        let expressions = expressions
            .iter()
            .map(|e| Regex::new(e).map_err(|err| Error::invalid(format!("pre-tokenizer expression {e}: {err}"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(PreTokenizer { expressions })
    }

    /// Whether merges are skipped for a word that is a token as a whole
    /// (llama.cpp's `ignore_merges`, set for the Llama 3 family).
    pub fn ignores_merges(pre: &str) -> bool {
        matches!(pre, "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" | "lfm2")
    }

    /// The text's words, in order; together they are the whole text.
    pub fn split<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut pieces = vec![text];
        for expression in &self.expressions {
            let mut next = Vec::with_capacity(pieces.len() * 2);
            for piece in pieces {
                let mut at = 0;
                for found in expression.find_iter(piece) {
                    // The expressions have no construct that can fail at
                    // run time on text (no backreferences or deep
                    // recursion); a failure would leave the rest whole.
                    let Ok(found) = found else { break };
                    if found.start() > at {
                        next.push(&piece[at..found.start()]);
                    }
                    if found.end() > found.start() {
                        next.push(found.as_str());
                    }
                    at = found.end();
                }
                if at < piece.len() {
                    next.push(&piece[at..]);
                }
            }
            pieces = next;
        }
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen2_words() {
        let pre = PreTokenizer::named("qwen2").unwrap();
        assert_eq!(
            pre.split("Hello world, it's 2025!\n\n  x"),
            ["Hello", " world", ",", " it", "'s", " ", "2", "0", "2", "5", "!\n\n", " ", " x"]
        );
        assert_eq!(pre.split("  trailing  "), [" ", " trailing", "  "]);
        assert_eq!(pre.split("日本語のテキスト"), ["日本語のテキスト"]);
    }

    #[test]
    fn smollm_isolates_digits_before_gpt2_words() {
        let pre = PreTokenizer::named("smollm").unwrap();
        assert_eq!(pre.split("abc 123 d"), ["abc", " ", "1", "2", "3", " d"]);
    }

    #[test]
    fn every_byte_is_kept_and_unknown_names_are_refused() {
        for pre in ["qwen2", "llama-bpe", "smollm", "gpt-2", "default"] {
            let p = PreTokenizer::named(pre).unwrap();
            let text = "a\u{0}b \t\r\n 😀 x's  9999 !!";
            assert_eq!(p.split(text).concat(), text, "{pre}");
        }
        assert!(PreTokenizer::named("mystery").is_err());
    }
}
