//! A code file's declarations as break points: qmd 2.x's `--chunk-strategy
//! auto` (its `ast.js`), on tree-sitter and the grammar versions qmd pins.
//!
//! Each language's query captures declaration nodes; a node's start is a
//! break point scored by what it declares (class-like 100, functions and
//! exports 90, types 80, imports 60), the best score kept per position.
//! JavaScript goes through the TypeScript grammar, as in qmd.
//!
//! Parsing is bounded: files past [`MAX_SOURCE_BYTES`] are not parsed, and
//! a parse stops after [`OPERATIONS_PER_BYTE`] parser operations a byte
//! (counted, not timed, so a file is cut the same way on every machine).
//! Either way the file keeps the markdown break points alone.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use tree_sitter::{ParseOptions, ParseState, Parser, Query, QueryCursor, StreamingIterator};

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

/// qmd's queries (`LANGUAGE_QUERIES` in its `ast.js`), capture names
/// scored by [`score`].
fn query_source(language: Language) -> &'static str {
    const TYPESCRIPT: &str = r#"
    (export_statement) @export
    (class_declaration) @class
    (function_declaration) @func
    (method_definition) @method
    (interface_declaration) @iface
    (type_alias_declaration) @type
    (enum_declaration) @enum
    (import_statement) @import
    (lexical_declaration (variable_declarator value: (arrow_function))) @func
    (lexical_declaration (variable_declarator value: (function_expression))) @func
    "#;
    match language {
        Language::TypeScript | Language::Tsx => TYPESCRIPT,
        Language::JavaScript => {
            r#"
    (export_statement) @export
    (class_declaration) @class
    (function_declaration) @func
    (method_definition) @method
    (import_statement) @import
    (lexical_declaration (variable_declarator value: (arrow_function))) @func
    (lexical_declaration (variable_declarator value: (function_expression))) @func
    "#
        }
        Language::Python => {
            r#"
    (class_definition) @class
    (function_definition) @func
    (decorated_definition) @decorated
    (import_statement) @import
    (import_from_statement) @import
    "#
        }
        Language::Go => {
            r#"
    (type_declaration) @type
    (function_declaration) @func
    (method_declaration) @method
    (import_declaration) @import
    "#
        }
        Language::Rust => {
            r#"
    (struct_item) @struct
    (impl_item) @impl
    (function_item) @func
    (trait_item) @trait
    (enum_item) @enum
    (use_declaration) @import
    (type_item) @type
    (mod_item) @mod
    "#
        }
    }
}

/// qmd's `SCORE_MAP`, on the markdown scale (a `#` heading is 100).
fn score(capture: &str) -> u32 {
    match capture {
        "class" | "iface" | "struct" | "trait" | "impl" | "mod" => 100,
        "export" | "func" | "method" | "decorated" => 90,
        "type" | "enum" => 80,
        "import" => 60,
        _ => 20,
    }
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

/// Each language's compiled query, built on first use.
fn query(language: Language) -> Result<&'static Query, String> {
    static QUERIES: [OnceLock<Result<Query, String>>; Language::ALL.len()] = [const { OnceLock::new() }; 6];
    QUERIES[language as usize]
        .get_or_init(|| Query::new(&grammar(language), query_source(language)).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| format!("its query does not compile ({e})"))
}

/// The declarations of `content` as break points, in chars, sorted by
/// position; an error says why the file could not be read as `language`.
pub fn declaration_points(content: &str, language: Language) -> Result<Vec<BreakPoint>, String> {
    if content.len() > MAX_SOURCE_BYTES {
        return Err(format!("the file is over {} MB", MAX_SOURCE_BYTES >> 20));
    }
    let query = query(language)?;
    let mut parser = Parser::new();
    parser.set_language(&grammar(language)).map_err(|e| e.to_string())?;
    let budget = (content.len() * OPERATIONS_PER_BYTE).max(MIN_OPERATIONS) / 100;
    let mut checks = 0usize;
    let mut progress = |_: &ParseState| {
        checks += 1;
        if checks > budget { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    };
    let bytes = content.as_bytes();
    let tree = parser
        .parse_with_options(
            &mut |at, _| bytes.get(at..).unwrap_or_default(),
            None,
            Some(ParseOptions::new().progress_callback(&mut progress)),
        )
        .ok_or_else(|| "the parse took too long (the file may not be in this language)".to_string())?;
    // The best score at each start byte.
    let mut starts: Vec<(usize, u32)> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut captures = cursor.captures(query, tree.root_node(), bytes);
    while let Some((found, index)) = captures.next() {
        let capture = found.captures()[*index];
        starts.push((capture.node.start_byte(), score(query.capture_names()[capture.index as usize])));
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
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().stack_size(1 << 20).spawn(move || tx.send(f()).unwrap()).unwrap();
        rx.recv_timeout(std::time::Duration::from_secs(120)).unwrap_or_else(|_| panic!("{what} did not finish"))
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
        let words = ["the", "garden", "{", "}", "(", ")", "\"", "'", "def", "fn", "class", "=>", "/*", "`", "#"];
        let prose: String = (0..60_000usize).map(|i| words[i * 7919 % words.len()]).collect::<Vec<_>>().join(" ");
        for language in Language::ALL {
            let prose = prose.clone();
            let _ = finishes("prose as code", move || declaration_points(&prose, language));
        }
    }
}
