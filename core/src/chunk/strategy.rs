//! `--chunk-strategy`: markdown break points only (`regex`, qmd's
//! default), or with a code file's declarations merged in (`auto`).

use super::BreakPoint;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkStrategy {
    #[default]
    Regex,
    Auto,
}

impl ChunkStrategy {
    /// The flag's value, with qmd's error for any other.
    pub fn parse(value: &str) -> Result<ChunkStrategy, String> {
        match value {
            "regex" => Ok(ChunkStrategy::Regex),
            "auto" => Ok(ChunkStrategy::Auto),
            other => Err(format!("--chunk-strategy must be \"auto\" or \"regex\" (got \"{other}\")")),
        }
    }

    pub fn is_regex(&self) -> bool {
        *self == ChunkStrategy::Regex
    }

    pub fn name(self) -> &'static str {
        match self {
            ChunkStrategy::Regex => "regex",
            ChunkStrategy::Auto => "auto",
        }
    }
}

/// A language qmd chunks by syntax under `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Go,
    Rust,
}

impl Language {
    pub const ALL: [Language; 6] =
        [Language::TypeScript, Language::Tsx, Language::JavaScript, Language::Python, Language::Go, Language::Rust];

    /// By extension, as qmd's `detectLanguage` (Node's `extname`,
    /// lowercased); markdown and everything else have none.
    pub fn of_path(path: &str) -> Option<Language> {
        let name = path.rsplit('/').next().unwrap_or(path);
        // `extname`: from the last dot, unless it opens the name.
        let dot = name.rfind('.').filter(|&at| at > 0)?;
        Some(match name[dot..].to_lowercase().as_str() {
            ".ts" | ".mts" | ".cts" => Language::TypeScript,
            ".tsx" | ".jsx" => Language::Tsx,
            ".js" | ".mjs" | ".cjs" => Language::JavaScript,
            ".py" => Language::Python,
            ".go" => Language::Go,
            ".rs" => Language::Rust,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::Go => "go",
            Language::Rust => "rust",
        }
    }
}

/// A code file that keeps the markdown break points only, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxFallback {
    pub language: Language,
    pub reason: String,
}

impl std::fmt::Display for SyntaxFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} chunked by the markdown rules only: {}", self.language.name(), self.reason)
    }
}

/// The break points a document's syntax adds under `strategy`: a code
/// file's declarations under `auto`, nothing otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declarations(pub(super) Vec<BreakPoint>);

impl Declarations {
    pub fn of(content: &str, path: &str, strategy: ChunkStrategy) -> Result<Declarations, SyntaxFallback> {
        let Some(language) = Language::of_path(path).filter(|_| strategy == ChunkStrategy::Auto) else {
            return Ok(Declarations::default());
        };
        find(content, language).map(Declarations).map_err(|reason| SyntaxFallback { language, reason })
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(feature = "code-chunks")]
fn find(content: &str, language: Language) -> Result<Vec<BreakPoint>, String> {
    super::code::declaration_points(content, language)
}

#[cfg(not(feature = "code-chunks"))]
fn find(_: &str, _: Language) -> Result<Vec<BreakPoint>, String> {
    Err("this build has no code grammars".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_follow_qmds_extension_map() {
        let of = |p: &str| Language::of_path(p).map(Language::name);
        assert_eq!(of("src/a.ts"), Some("typescript"));
        assert_eq!(of("a.MTS"), Some("typescript"), "lowercased");
        assert_eq!(of("a.jsx"), Some("tsx"));
        assert_eq!(of("a.cjs"), Some("javascript"));
        assert_eq!(of("qmd://code/lib/x.py"), Some("python"));
        assert_eq!(of("x.go"), Some("go"));
        assert_eq!(of("x.rs"), Some("rust"));
        assert_eq!(of("notes/a.md"), None);
        assert_eq!(of(".ts"), None, "a dot file has no extension");
        assert_eq!(of("..ts"), Some("typescript"), "as Node's extname reads it");
        assert_eq!(of("dir.rs/readme"), None);
        assert_eq!(of("a.d.ts"), Some("typescript"));
    }

    #[test]
    fn regex_and_markdown_add_nothing() {
        let code = "fn f() {}\n";
        assert!(Declarations::of(code, "a.rs", ChunkStrategy::Regex).unwrap().is_empty());
        assert!(Declarations::of(code, "a.md", ChunkStrategy::Auto).unwrap().is_empty());
    }

    #[test]
    fn strategy_values_are_qmds() {
        assert_eq!(ChunkStrategy::parse("auto"), Ok(ChunkStrategy::Auto));
        assert_eq!(ChunkStrategy::parse("regex"), Ok(ChunkStrategy::Regex));
        assert_eq!(
            ChunkStrategy::parse("ast").unwrap_err(),
            r#"--chunk-strategy must be "auto" or "regex" (got "ast")"#
        );
    }
}
