//! `--chunk-strategy`: markdown break points only (`regex`, qmd's
//! default), or with a code file's declarations merged in (`auto`).

use std::cell::RefCell;
use std::collections::BTreeMap;

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

/// The strategy each collection's code is cut by: the run's (the flag,
/// else what the index records), unless the collection's `index.yml`
/// entry names its own (`chunk_strategy:`), which wins for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrategyPlan {
    pub default: ChunkStrategy,
    /// Collections with a strategy of their own.
    pub collections: BTreeMap<String, ChunkStrategy>,
}

impl StrategyPlan {
    /// `default` for every collection of `config` without a key of its own.
    pub fn new(default: ChunkStrategy, config: &crate::collection::Config) -> StrategyPlan {
        let collections = config.collections.iter().filter_map(|c| Some((c.name.clone(), c.chunk_strategy?))).collect();
        StrategyPlan { default, collections }
    }

    pub fn of(&self, collection: &str) -> ChunkStrategy {
        self.collections.get(collection).copied().unwrap_or(self.default)
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

    /// The language [`Language::name`] names.
    pub fn named(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|language| language.name() == name)
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
        Declarations::parse(content, language).map_err(|reason| SyntaxFallback { language, reason })
    }

    /// `language`'s declarations in `content`, or why they could not be
    /// read: from the finder installed on this thread, else the grammars
    /// compiled in.
    pub fn parse(content: &str, language: Language) -> Result<Declarations, String> {
        let installed = FINDER.with_borrow(|finder| finder.as_ref().map(|find| find(content, language)));
        match installed {
            Some(found) => found.map(|pairs| Declarations::from_pairs(pairs, content)),
            None => compiled_in(content, language).map(Declarations),
        }
    }

    /// (char position, score) of each declaration, by position: what a
    /// [`SyntaxFinder`] returns.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.0.iter().map(|point| (point.pos, point.score))
    }

    /// A finder's answer as break points: sorted, the best score at each
    /// position, none past the end of `content` (it comes from another
    /// module, so it is not trusted to be in order).
    fn from_pairs(mut pairs: Vec<(usize, u32)>, content: &str) -> Declarations {
        let end = content.chars().count();
        pairs.retain(|&(pos, _)| pos <= end);
        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        pairs.dedup_by_key(|pair| pair.0);
        Declarations(pairs.into_iter().map(|(pos, score)| BreakPoint { pos, score }).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Finds a language's declarations for a build without the grammars
/// compiled in: the browser page loads them as a module of their own, and
/// only once a code file is chunked under `auto`. (char position, score)
/// pairs, or why the file could not be read.
pub type SyntaxFinder = Box<dyn Fn(&str, Language) -> Result<Vec<(usize, u32)>, String>>;

thread_local! {
    static FINDER: RefCell<Option<SyntaxFinder>> = const { RefCell::new(None) };
}

/// Installs `finder` for this thread's chunking (the browser engine runs
/// on one thread); it takes precedence over compiled-in grammars.
pub fn install_syntax_finder(finder: Option<SyntaxFinder>) {
    FINDER.set(finder);
}

/// Whether `auto` can read code on this thread: grammars compiled in or a
/// finder installed.
pub fn syntax_available() -> bool {
    cfg!(feature = "code-chunks") || FINDER.with_borrow(Option::is_some)
}

#[cfg(feature = "code-chunks")]
fn compiled_in(content: &str, language: Language) -> Result<Vec<BreakPoint>, String> {
    super::code::declaration_points(content, language)
}

#[cfg(not(feature = "code-chunks"))]
fn compiled_in(_: &str, _: Language) -> Result<Vec<BreakPoint>, String> {
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
    fn an_installed_finder_is_used_and_its_answer_put_in_order() {
        let content = "fn a() {}\nfn b() {}\n";
        install_syntax_finder(Some(Box::new(|_, language| match language {
            // Out of order, a position twice, one past the end.
            Language::Rust => Ok(vec![(10, 90), (0, 60), (10, 100), (500, 90)]),
            _ => Err("no grammar".to_string()),
        })));
        let found = Declarations::of(content, "a.rs", ChunkStrategy::Auto).unwrap();
        assert_eq!(found.pairs().collect::<Vec<_>>(), vec![(0, 60), (10, 100)]);
        let failed = Declarations::of(content, "a.py", ChunkStrategy::Auto).unwrap_err();
        assert_eq!(failed.to_string(), "python chunked by the markdown rules only: no grammar");
        assert!(syntax_available());
        install_syntax_finder(None);
        assert_eq!(syntax_available(), cfg!(feature = "code-chunks"));
    }

    #[test]
    fn languages_are_found_by_name() {
        for language in Language::ALL {
            assert_eq!(Language::named(language.name()), Some(language));
        }
        assert_eq!(Language::named("markdown"), None);
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
