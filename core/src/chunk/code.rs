//! A code file's declarations as break points: qmd 2.x's `--chunk-strategy
//! auto` (its `ast.js`), on tree-sitter and the grammar versions qmd pins.
//!
//! qmd runs a tree-sitter query per language that captures declaration
//! nodes; a node's start is a break point scored by what it declares
//! (class-like 100, functions and exports 90, types 80, imports 60), the
//! best score kept per position. JavaScript goes through the TypeScript
//! grammar, as in qmd.
//!
//! The queries are one node kind a capture (and one nested pattern), so
//! here they are tables ([`declarations`]) matched in one walk of the tree:
//! tree-sitter's query cursor checks every node's later siblings for a
//! named one, which is quadratic in a node's children (200 KB of Python
//! `(` took 58–100 s), while the walk visits each node once.
//!
//! Parsing is bounded: files past [`MAX_SOURCE_BYTES`] are not parsed, and
//! a parse stops after [`OPERATIONS_PER_BYTE`] parser operations or
//! [`MEMORY_PER_BYTE`] bytes of memory a byte of source (both counted, not
//! timed, so a file is cut the same way on every machine). Either way the
//! file keeps the markdown break points alone.

use std::ops::ControlFlow;

use tree_sitter::{Node, ParseOptions, ParseState, Parser};

use super::parse_memory;
use super::{BreakPoint, Language};

/// Larger sources are chunked by the markdown rules only. Parsing costs
/// about 1.5–2.5 µs and 115 bytes of memory a byte of source (natively:
/// 5.7 s and 450 MB for a 3.9 MB minified line); hand-written files are
/// far smaller.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;

/// Parser operations allowed a byte of source (tree-sitter reports every
/// 100). Of 27,531 real files (npm, PyPI, crates.io, Go) the median took
/// 0.7, the most 5.7; error recovery on text that is not the language can
/// take far more.
const OPERATIONS_PER_BYTE: usize = 16;
/// And a floor, so a short file never runs out.
const MIN_OPERATIONS: usize = 1_000_000;

/// Bytes of parser memory allowed a byte of source: of 10,582 real files
/// (crates.io, PyPI, npm; 1 KB to 1 MB) the median peaked at 27, the 99th
/// percentile at 66, the most at 233 (a Rust table of numbers). Checked
/// at every progress report; the parse's last step, which at the end of
/// input pops an unclosed stack whole, can briefly hold as much again
/// (687 a byte at most, of 125 hostile inputs), so a parse peaks under
/// twice this.
const MEMORY_PER_BYTE: usize = 384;
/// And a floor for short files.
const MIN_MEMORY: usize = 16 << 20;

/// Scores on the markdown scale (a `#` heading is 100): qmd's `SCORE_MAP`.
const CLASS_LIKE: u32 = 100;
const FUNCTION: u32 = 90;
const TYPE: u32 = 80;
const IMPORT: u32 = 60;

/// What a language declares: node kinds with their scores, and whether a
/// `const f = () => …` / `function () …` binding counts as a function.
struct DeclarationKinds {
    kinds: &'static [(&'static str, u32)],
    function_bindings: bool,
}

/// qmd's queries (`LANGUAGE_QUERIES` in its `ast.js`), capture by capture:
/// `(class_declaration) @class` is `("class_declaration", CLASS_LIKE)`, and
/// `(lexical_declaration (variable_declarator value: (arrow_function)))
/// @func` (with `function_expression`) is `function_bindings`.
fn declarations(language: Language) -> DeclarationKinds {
    const JAVASCRIPT: &[(&str, u32)] = &[
        ("export_statement", FUNCTION),
        ("class_declaration", CLASS_LIKE),
        ("function_declaration", FUNCTION),
        ("method_definition", FUNCTION),
        ("import_statement", IMPORT),
    ];
    const TYPESCRIPT: &[(&str, u32)] = &[
        ("export_statement", FUNCTION),
        ("class_declaration", CLASS_LIKE),
        ("function_declaration", FUNCTION),
        ("method_definition", FUNCTION),
        ("interface_declaration", CLASS_LIKE),
        ("type_alias_declaration", TYPE),
        ("enum_declaration", TYPE),
        ("import_statement", IMPORT),
    ];
    match language {
        Language::TypeScript | Language::Tsx => DeclarationKinds { kinds: TYPESCRIPT, function_bindings: true },
        Language::JavaScript => DeclarationKinds { kinds: JAVASCRIPT, function_bindings: true },
        Language::Python => DeclarationKinds {
            kinds: &[
                ("class_definition", CLASS_LIKE),
                ("function_definition", FUNCTION),
                ("decorated_definition", FUNCTION),
                ("import_statement", IMPORT),
                ("import_from_statement", IMPORT),
            ],
            function_bindings: false,
        },
        Language::Go => DeclarationKinds {
            kinds: &[
                ("type_declaration", TYPE),
                ("function_declaration", FUNCTION),
                ("method_declaration", FUNCTION),
                ("import_declaration", IMPORT),
            ],
            function_bindings: false,
        },
        Language::Rust => DeclarationKinds {
            kinds: &[
                ("struct_item", CLASS_LIKE),
                ("impl_item", CLASS_LIKE),
                ("function_item", FUNCTION),
                ("trait_item", CLASS_LIKE),
                ("enum_item", TYPE),
                ("use_declaration", IMPORT),
                ("type_item", TYPE),
                ("mod_item", CLASS_LIKE),
            ],
            function_bindings: false,
        },
    }
}

impl DeclarationKinds {
    /// The score of what `node` declares, if it is a declaration.
    fn score(&self, node: Node<'_>) -> Option<u32> {
        if !node.is_named() {
            return None;
        }
        let kind = node.kind();
        let listed = self.kinds.iter().find(|(k, _)| *k == kind).map(|&(_, score)| score);
        listed.or_else(|| {
            (self.function_bindings && kind == "lexical_declaration" && binds_function(node)).then_some(FUNCTION)
        })
    }
}

/// `const f = () => …` or `let g = function () …`: a declarator of the
/// declaration whose value is a function (one look at each child).
fn binds_function(declaration: Node<'_>) -> bool {
    let mut cursor = declaration.walk();
    declaration.named_children(&mut cursor).any(|child| {
        child.kind() == "variable_declarator"
            && child
                .child_by_field_name("value")
                .is_some_and(|v| matches!(v.kind(), "arrow_function" | "function_expression"))
    })
}

fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        // qmd parses JavaScript with the TypeScript grammar.
        Language::TypeScript | Language::JavaScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
    }
}

/// Why a parse stopped short.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Operations,
    Memory,
}

/// The declarations of `content` as break points, in chars, sorted by
/// position; an error says why the file could not be read as `language`.
pub fn declaration_points(content: &str, language: Language) -> Result<Vec<BreakPoint>, String> {
    if content.len() > MAX_SOURCE_BYTES {
        return Err(format!("the file is over {} MB", MAX_SOURCE_BYTES >> 20));
    }
    parse_memory::install();
    let mut parser = Parser::new();
    parser.set_language(&grammar(language)).map_err(|e| e.to_string())?;
    let operations = (content.len() * OPERATIONS_PER_BYTE).max(MIN_OPERATIONS) / 100;
    let memory = (content.len() * MEMORY_PER_BYTE).max(MIN_MEMORY);
    let held_before = parse_memory::live_bytes();
    let mut checks = 0usize;
    let mut stopped = None;
    let mut progress = |_: &ParseState| {
        checks += 1;
        stopped = if checks > operations {
            Some(Stopped::Operations)
        } else if parse_memory::live_bytes().saturating_sub(held_before) > memory {
            Some(Stopped::Memory)
        } else {
            None
        };
        if stopped.is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    };
    let bytes = content.as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    let Some(tree) = tree else {
        return Err(match stopped {
            Some(Stopped::Memory) => {
                format!("the parse needed over {} MB (the file may not be in this language)", memory >> 20)
            }
            _ => "the parse took too long (the file may not be in this language)".to_string(),
        });
    };
    let kinds = declarations(language);
    // The best score at each start byte, from one preorder walk.
    let mut starts: Vec<(usize, u32)> = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        if let Some(score) = kinds.score(node) {
            starts.push((node.start_byte(), score));
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    starts.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    starts.dedup_by_key(|s| s.0);
    Ok(chars_at(content, &starts))
}

/// Byte offsets (sorted, on char boundaries) as char positions.
fn chars_at(content: &str, starts: &[(usize, u32)]) -> Vec<BreakPoint> {
    let mut points = Vec::with_capacity(starts.len());
    let mut next = starts.iter().peekable();
    for (pos, (byte, _)) in content.char_indices().chain(std::iter::once((content.len(), ' '))).enumerate() {
        while let Some(&&(at, score)) = next.peek() {
            if at > byte {
                break;
            }
            if at == byte {
                points.push(BreakPoint { pos, score });
            }
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(content: &str, language: Language) -> Vec<(String, u32)> {
        let chars: Vec<char> = content.chars().collect();
        declaration_points(content, language)
            .unwrap()
            .iter()
            .map(|b| (chars[b.pos..].iter().take(12).collect::<String>(), b.score))
            .collect()
    }

    #[test]
    fn typescript_declarations_score_as_in_qmd() {
        let source = "import { a } from \"b\";\n\nexport class Store {\n  get(k: string) { return k; }\n}\n\ninterface Shape { x: number }\ntype Id = string;\nenum Color { Red }\nconst add = (x: number) => x + 1;\nfunction plain() {}\n";
        assert_eq!(
            points(source, Language::TypeScript),
            [
                ("import { a }", 60),
                ("export class", 90), // export and class start apart: `export` at 90
                ("class Store ", 100),
                ("get(k: strin", 90),
                ("interface Sh", 100),
                ("type Id = st", 80),
                ("enum Color {", 80),
                ("const add = ", 90),
                ("function pla", 90),
            ]
            .map(|(s, n)| (s.to_string(), n))
        );
    }

    #[test]
    fn javascript_uses_the_typescript_grammar_without_type_captures() {
        // `interface` is not JavaScript; through the TypeScript grammar it
        // parses, but the JavaScript query does not capture it.
        let source = "interface Shape { x: number }\nfunction f() {}\n";
        assert_eq!(points(source, Language::JavaScript), [("function f()".to_string(), 90)]);
        assert_eq!(points(source, Language::TypeScript)[0], ("interface Sh".to_string(), 100));
    }

    #[test]
    fn python_go_and_rust_declarations() {
        let python =
            "import os\nfrom a import b\n\n@cache\ndef f():\n    pass\n\nclass A:\n    def m(self):\n        pass\n";
        assert_eq!(
            points(python, Language::Python),
            [
                ("import os\nfr", 60),
                ("from a impor", 60),
                ("@cache\ndef f", 90),
                ("def f():\n   ", 90),
                ("class A:\n   ", 100),
                ("def m(self):", 90)
            ]
            .map(|(s, n)| (s.to_string(), n))
        );
        let go =
            "package main\n\nimport \"fmt\"\n\ntype T struct{}\n\nfunc (t T) M() {}\n\nfunc main() { fmt.Println() }\n";
        assert_eq!(
            points(go, Language::Go),
            [("import \"fmt\"", 60), ("type T struc", 80), ("func (t T) M", 90), ("func main() ", 90)]
                .map(|(s, n)| (s.to_string(), n))
        );
        let rust = "use std::fmt;\n\nmod inner {}\n\npub struct S;\n\nimpl S {\n    fn f(&self) {}\n}\n\ntrait T {}\nenum E { A }\ntype X = u8;\n";
        assert_eq!(
            points(rust, Language::Rust),
            [
                ("use std::fmt", 60),
                ("mod inner {}", 100),
                ("pub struct S", 100),
                ("impl S {\n   ", 100),
                ("fn f(&self) ", 90),
                ("trait T {}\ne", 100),
                ("enum E { A }", 80),
                ("type X = u8;", 80),
            ]
            .map(|(s, n)| (s.to_string(), n))
        );
    }

    #[test]
    fn positions_count_chars_not_bytes() {
        let source = "// héllo wörld ✓\nfn f() {}\n";
        let found = declaration_points(source, Language::Rust).unwrap();
        assert_eq!(found.len(), 1);
        let chars: Vec<char> = source.chars().collect();
        assert_eq!(chars[found[0].pos..found[0].pos + 4].iter().collect::<String>(), "fn f");
    }

    #[test]
    fn oversized_sources_are_refused_with_a_reason() {
        let big = "x".repeat(MAX_SOURCE_BYTES + 1);
        let error = declaration_points(&big, Language::JavaScript).unwrap_err();
        assert!(error.contains("over 1 MB"), "{error}");
    }

    /// Runs `f` on a thread and fails the test if it does not finish: a
    /// hang detector, not a timing.
    fn finishes<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        finishes_within(120, what, f)
    }

    fn finishes_within<T: Send + 'static>(seconds: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().stack_size(1 << 20).spawn(move || tx.send(f()).unwrap()).unwrap();
        let limit = std::time::Duration::from_secs(seconds);
        rx.recv_timeout(limit).unwrap_or_else(|_| panic!("{what} did not finish in {seconds} s"))
    }

    #[test]
    fn hostile_sources_end_in_points_or_a_reason() {
        // 10,000 nested blocks in each grammar (Python's indentation scanner
        // at 1,000 levels: 10,000 would be 50 MB), on a 1 MB stack.
        let nested = [
            (Language::JavaScript, format!("function f(){{{}x();{}}}\n", "{".repeat(10_000), "}".repeat(10_000))),
            (Language::TypeScript, format!("let x = {}1{};\n", "(".repeat(10_000), ")".repeat(10_000))),
            (Language::Rust, format!("{}{}\n", "mod a {".repeat(10_000), "}".repeat(10_000))),
            (Language::Go, format!("package main\nfunc f() {{{}{}}}\n", "{".repeat(10_000), "}".repeat(10_000))),
            (
                Language::Python,
                (0..1000).map(|i| format!("{}if x:\n", " ".repeat(i))).collect::<String>()
                    + &" ".repeat(1000)
                    + "pass\n",
            ),
        ];
        for (language, source) in nested {
            let found = finishes("a nested parse", move || declaration_points(&source, language));
            assert!(found.is_ok(), "{language:?}: {found:?}");
        }
        // Bytes that are not UTF-8, as the indexer stores them (replaced).
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        finishes("binary as Python", move || declaration_points(&text, Language::Python)).unwrap();
        // Prose under a code extension: error recovery all the way.
        for language in Language::ALL {
            let prose = prose(60_000);
            let _ = finishes("prose as code", move || declaration_points(&prose, language));
        }
    }

    /// Words, brackets and keywords of every grammar, mixed: error
    /// recovery all the way.
    fn prose(words: usize) -> String {
        let vocabulary = ["the", "garden", "{", "}", "(", ")", "\"", "'", "def", "fn", "class", "=>", "/*", "`", "#"];
        (0..words).map(|i| vocabulary[i * 7919 % vocabulary.len()]).collect::<Vec<_>>().join(" ")
    }

    /// Unclosed and repeated structure (one opener, or an opener with a
    /// word, many thousand times: nesting the parser cannot close) in
    /// every grammar: each ends in points or a reason within a bound of
    /// its size, its parser memory within [`MEMORY_PER_BYTE`] (counted)
    /// and all of it given back. (The time bound is a hang detector: a
    /// 100 KB parse and walk take under 1.5 s here; the query cursor's
    /// quadratic captures took ~30 s on Python's `(`.)
    #[test]
    fn unclosed_and_repeated_structure_is_linear_in_time_and_memory() {
        const SOURCE_BYTES: usize = 100_000;
        let units = ["(", "[", "{", "<", "a<", "f(", "${`", "x = [", "#[a(", "'", "\"\\", "/*", "<T<", "if (", "m!("];
        for language in Language::ALL {
            for unit in units {
                let source = unit.repeat(SOURCE_BYTES / unit.len());
                let (result, peak, after) = finishes_within(10, &format!("{language:?} {unit:?}"), move || {
                    parse_memory::reset_peak();
                    let before = parse_memory::live_bytes();
                    let result = declaration_points(&source, language).map(|points| points.len());
                    (result, parse_memory::reset_peak() - before, parse_memory::live_bytes() - before)
                });
                // Checked at every step; the last (closing an unclosed stack
                // at the end of input) can briefly take as much again.
                let bound = 2 * (SOURCE_BYTES * MEMORY_PER_BYTE).max(MIN_MEMORY);
                assert!(peak <= bound, "{language:?} {unit:?}: {peak} bytes at peak ({result:?})");
                assert_eq!(after, 0, "{language:?} {unit:?}: parser memory left behind");
                if let Err(reason) = &result {
                    assert!(reason.contains("took too long") || reason.contains("needed over"), "{reason}");
                }
            }
        }
        // The ambiguous generics that took ~1.3 KB a byte: stopped by memory.
        let generics = "a<".repeat(SOURCE_BYTES / 2);
        let error =
            finishes("a< as TypeScript", move || declaration_points(&generics, Language::TypeScript)).unwrap_err();
        assert!(error.contains("needed over"), "{error}");
    }

    /// The tables are qmd's queries: on every source these tests use, the
    /// walk finds what tree-sitter's query engine finds with qmd's query
    /// text (`LANGUAGE_QUERIES` in its `ast.js`, copied here as the
    /// reference).
    #[test]
    fn the_walk_finds_what_qmds_queries_capture() {
        use tree_sitter::{Query, QueryCursor, StreamingIterator};
        const TYPESCRIPT: &str = r#"
        (export_statement) @export (class_declaration) @class (function_declaration) @func
        (method_definition) @method (interface_declaration) @iface (type_alias_declaration) @type
        (enum_declaration) @enum (import_statement) @import
        (lexical_declaration (variable_declarator value: (arrow_function))) @func
        (lexical_declaration (variable_declarator value: (function_expression))) @func"#;
        let queries = |language| match language {
            Language::TypeScript | Language::Tsx => TYPESCRIPT,
            Language::JavaScript => {
                r#"(export_statement) @export (class_declaration) @class (function_declaration) @func
                (method_definition) @method (import_statement) @import
                (lexical_declaration (variable_declarator value: (arrow_function))) @func
                (lexical_declaration (variable_declarator value: (function_expression))) @func"#
            }
            Language::Python => {
                r#"(class_definition) @class (function_definition) @func (decorated_definition) @decorated
                (import_statement) @import (import_from_statement) @import"#
            }
            Language::Go => {
                r#"(type_declaration) @type (function_declaration) @func (method_declaration) @method
                (import_declaration) @import"#
            }
            Language::Rust => {
                r#"(struct_item) @struct (impl_item) @impl (function_item) @func (trait_item) @trait
                (enum_item) @enum (use_declaration) @import (type_item) @type (mod_item) @mod"#
            }
        };
        let capture_score = |name: &str| match name {
            "class" | "iface" | "struct" | "trait" | "impl" | "mod" => CLASS_LIKE,
            "export" | "func" | "method" | "decorated" => FUNCTION,
            "type" | "enum" => TYPE,
            _ => IMPORT,
        };
        let sources = [
            "import { a } from \"b\";\nexport class Store {\n  get(k: string) { return k; }\n}\ninterface Shape { x: number }\ntype Id = string;\nenum Color { Red }\nconst add = (x: number) => x + 1, n = 2;\nlet g = function () {}, h = async () => 1;\nvar v = () => 0;\nexport default function () {}\nconst o = { m() {} };\nfunction plain() {}\n",
            "import os\nfrom a import b\n\n@cache\ndef f():\n    pass\n\nclass A:\n    def m(self):\n        import sys\n",
            "package main\n\nimport \"fmt\"\n\ntype T struct{}\ntype (A int; B string)\nfunc (t T) M() {}\n\nfunc main() { fmt.Println() }\n",
            "use std::fmt;\nmod inner { fn g() {} }\npub struct S;\nimpl S {\n    fn f(&self) {}\n}\ntrait T { type A; fn h(); }\nenum E { A }\ntype X = u8;\nmacro_rules! m { () => {} }\n",
        ];
        for language in Language::ALL {
            let query = Query::new(&grammar(language), queries(language)).unwrap();
            for source in sources.iter().map(|s| s.to_string()).chain([prose(3_000)]) {
                parse_memory::install();
                let mut parser = Parser::new();
                parser.set_language(&grammar(language)).unwrap();
                let tree = parser.parse(&source, None).unwrap();
                let mut starts: Vec<(usize, u32)> = Vec::new();
                let mut cursor = QueryCursor::new();
                let mut captures = cursor.captures(&query, tree.root_node(), source.as_bytes());
                while let Some((found, index)) = captures.next() {
                    let capture = found.captures()[*index];
                    starts.push((
                        capture.node.start_byte(),
                        capture_score(query.capture_names()[capture.index as usize]),
                    ));
                }
                starts.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                starts.dedup_by_key(|s| s.0);
                let expected = chars_at(&source, &starts);
                assert_eq!(declaration_points(&source, language).unwrap(), expected, "{language:?}: {source:.60}");
            }
        }
    }
}
