//! Renderings of every format, checked against qmd's bytes.

use super::*;

const JOURNAL_CONTEXT: &str = "Personal knowledge base\n\nDaily journals";
const KB: &str = "Personal knowledge base";
const SRC_CONTEXT: &str = "Personal knowledge base\n\nSource code for error utilities";

/// The stdout section of a recorded upstream run.
fn recorded(name: &str) -> String {
    let path = format!("{}/../tests/fixtures/peer/out/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (_, rest) = text.split_once('\n').expect("command line");
    let end = rest.find("--- stderr ---\n").expect("stderr marker");
    rest[..end].to_string()
}

/// A file of the recorded corpus, as the engine would return its body.
fn corpus(path: &str) -> String {
    let path = format!("{}/../tests/fixtures/peer/corpus/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[allow(clippy::too_many_arguments)]
fn hit(docid: &str, coll: &str, path: &str, title: &str, ctx: &str, score: f64, line: u32, snippet: &str) -> SearchHit {
    SearchHit {
        docid: docid.into(),
        collection: coll.into(),
        path: path.into(),
        title: title.into(),
        context: Some(ctx.into()),
        score,
        line,
        line_matched: true,
        snippet: snippet.into(),
        body: None,
        source_path: format!("/corpus/{coll}/{path}"),
        metadata: None,
    }
}

fn journal_hits() -> Vec<SearchHit> {
    let one = |docid, date, title, text, score| {
        let snippet = format!("@@ -1,3 @@ (0 before, 1 after)\n# {title}\n\n{text}");
        hit(docid, "notes", &format!("journals/{date}.md"), title, JOURNAL_CONTEXT, score, 1, &snippet)
    };
    vec![
        one("68db8b", "2025-05-02", "May 2 Journal", "Continued work on the index format.", 0.6490),
        one("0caf6d", "2025-05-01", "May 1 Journal", "Today I worked on the search engine.", 0.6489),
        one("c00322", "2025-04-30", "April 30 Journal", "Planned the week and reviewed open issues.", 0.6489),
    ]
}

fn view() -> SearchView {
    SearchView::default()
}

fn plain() -> Style {
    Style { color: false }
}

fn search(hits: &[SearchHit], format: Format, view: &SearchView) -> String {
    render_search(hits, format, view, &plain())
}

#[test]
fn search_journal_every_format() {
    let hits = journal_hits();
    for (format, file) in [
        (Format::Cli, "search-journal.txt"),
        (Format::Json, "search-journal-json.txt"),
        (Format::Csv, "search-journal-csv.txt"),
        (Format::Md, "search-journal-md.txt"),
        (Format::Xml, "search-journal-xml.txt"),
        (Format::Files, "search-journal-files.txt"),
    ] {
        assert_eq!(search(&hits, format, &view()), recorded(file), "{file}");
    }
}

#[test]
fn search_empty_forms() {
    assert_eq!(search(&[], Format::Cli, &view()), recorded("search-nothingmatches.txt"));
    assert_eq!(search(&[], Format::Json, &view()), recorded("search-nothingmatches-json.txt"));
    assert_eq!(search(&[], Format::Files, &view()), recorded("search-nothingmatches-files.txt"));
    let filtered = SearchView { min_score_filtered: true, ..view() };
    assert_eq!(search(&[], Format::Cli, &filtered), recorded("search-journal-min-score-0.99.txt"));
    assert_eq!(search(&[], Format::Csv, &view()), "docid,score,file,title,context,line,snippet\n");
    assert_eq!(search(&[], Format::Xml, &view()), "<results></results>\n");
    assert_eq!(search(&[], Format::Md, &view()), "");
}

#[test]
fn search_line_numbers_start_at_hit_line() {
    let hits = [
        hit(
            "405518",
            "myproject",
            "src/errors.ts",
            "errors",
            SRC_CONTEXT,
            0.68,
            1,
            "@@ -1,3 @@ (0 before, 2 after)\nexport function handleError(err: Error) {\n  console.error(err.message);\n  throw err;",
        ),
        hit(
            "0160b9",
            "myproject",
            "docs/errors.md",
            "Error Handling Guide",
            KB,
            0.67,
            7,
            "@@ -6,4 @@ (5 before, 5 after)\n\nAll errors are passed to handleError, which logs the message and rethrows.\n\n## Best Practices",
        ),
    ];
    let numbered = SearchView { line_numbers: true, ..view() };
    assert_eq!(search(&hits, Format::Cli, &numbered), recorded("search-handleError-line-numbers.txt"));
}

#[test]
fn search_full_prints_bodies() {
    let mut guide = hit("0160b9", "myproject", "docs/errors.md", "Error Handling Guide", KB, 0.85, 1, "");
    guide.body = Some(corpus("myproject/docs/errors.md"));
    let mut code = hit("405518", "myproject", "src/errors.ts", "errors", SRC_CONTEXT, 0.83, 1, "");
    code.body = Some(corpus("myproject/src/errors.ts"));
    let full = SearchView { full: true, ..view() };
    assert_eq!(search(&[guide.clone(), code], Format::Cli, &full), recorded("search-error-handling-full.txt"));

    // JSON swaps the snippet key for the body.
    let json = search(std::slice::from_ref(&guide), Format::Json, &full);
    assert!(json.contains("\"body\": \"# Error Handling Guide\\n"), "{json}");
    assert!(!json.contains("\"snippet\""), "{json}");
}

#[test]
fn search_without_term_match_has_no_line_suffix() {
    let mut hit = journal_hits().remove(1);
    hit.score = 0.8;
    hit.line_matched = false;
    assert_eq!(search(&[hit], Format::Cli, &view()), recorded("search-phrase-may1.txt"));
}

#[test]
fn search_snippet_with_trailing_blank_lines() {
    let hits = [
        hit(
            "0caf6d",
            "notes",
            "journals/2025-05-01.md",
            "May 1 Journal",
            JOURNAL_CONTEXT,
            0.81,
            3,
            "@@ -2,3 @@ (1 before, 0 after)\n\nToday I worked on the search engine.\n",
        ),
        hit(
            "9e1671",
            "notes",
            "meeting.md",
            "Team Meeting Notes",
            KB,
            0.73,
            41,
            "@@ -40,4 @@ (39 before, 0 after)\n\n- Alice: finish the search engine review\n- Bob: update the index format doc\n",
        ),
    ];
    assert_eq!(search(&hits, Format::Cli, &view()), recorded("search-search-engine-n3.txt"));
}

#[test]
fn search_line_numbers_in_other_formats() {
    let hits = &journal_hits()[..1];
    let numbered = SearchView { line_numbers: true, ..view() };
    let json = search(hits, Format::Json, &numbered);
    assert!(
        json.contains("\"snippet\": \"1: @@ -1,3 @@ (0 before, 1 after)\\n2: # May 2 Journal\\n3: \\n4: Continued")
    );
    let csv = search(hits, Format::Csv, &numbered);
    assert!(csv.contains(",1,\"1: @@ -1,3 @@ (0 before, 1 after)\n2: # May 2 Journal\n3: \n4: Continued"));
    let md = search(hits, Format::Md, &numbered);
    assert!(md.ends_with(
        "\n\n1: @@ -1,3 @@ (0 before, 1 after)\n2: # May 2 Journal\n3: \n4: Continued work on the index format.\n\n"
    ));
}

#[test]
fn search_full_path_replaces_uri_and_docid() {
    let hits = &journal_hits()[..1];
    let full_path = SearchView { full_path: true, ..view() };
    let cli = search(hits, Format::Cli, &full_path);
    assert!(cli.starts_with("/corpus/notes/journals/2025-05-02.md:1\nTitle:"), "{cli}");
    let files = search(hits, Format::Files, &full_path);
    assert!(files.starts_with("0.65,/corpus/notes/journals/2025-05-02.md,\"Personal"), "{files}");
    let csv = search(hits, Format::Csv, &full_path);
    assert!(csv.contains("\n,0.6490,/corpus/notes/"), "{csv}");
    let json = search(hits, Format::Json, &full_path);
    assert!(!json.contains("docid"), "{json}");

    // Unresolved rows keep the qmd:// name and docid.
    let mut lost = hits[0].clone();
    lost.source_path.clear();
    let cli = search(&[lost], Format::Cli, &full_path);
    assert!(cli.starts_with("qmd://notes/journals/2025-05-02.md:1 #68db8b\n"), "{cli}");
}

#[test]
fn search_colour_wraps_path_and_score() {
    let mut hits = journal_hits();
    hits[0].score = 0.91;
    let out = render_search(&hits[..1], Format::Cli, &view(), &Style { color: true });
    assert!(out.starts_with("\x1b[36mqmd://notes/journals/2025-05-02.md\x1b[2m:1\x1b[0m \x1b[2m#68db8b\x1b[0m\n"));
    assert!(out.contains("Score: \x1b[1m\x1b[32m 91%\x1b[0m\x1b[0m\n"), "{out:?}");
}

#[test]
fn xml_escapes_every_field() {
    // qmd escaped only `"`, and only in title and context: page text could
    // forge elements. Every field goes through one escape now.
    let mut hit = journal_hits().remove(0);
    hit.title = "A \"quoted\" <title> & 'more'".into();
    hit.path = "a<b>.md".into();
    hit.snippet = "a < b & c </file><file name=\"forged\">\u{1b}[31m".into();
    let out = search(&[hit], Format::Xml, &view());
    assert!(out.contains(" name=\"qmd://notes/a&lt;b&gt;.md\""), "{out}");
    assert!(out.contains(" title=\"A &quot;quoted&quot; &lt;title&gt; &amp; &apos;more&apos;\""), "{out}");
    assert!(
        out.contains(">\na &lt; b &amp; c &lt;/file&gt;&lt;file name=&quot;forged&quot;&gt;\\x1b[31m\n</file>\n\n"),
        "{out}"
    );
    assert_eq!(out.matches("<file").count(), 1, "{out}");
    assert_eq!(escape_xml("plain text, kept\tas\nis"), "plain text, kept\tas\nis");
    assert_eq!(escape_xml("cr\r and \u{202e}"), "cr\\r and \\u{202e}", "shown as every format shows them");
    assert_eq!(escape_xml("\u{0}\u{ffff}"), "\\x00\\u{ffff}");
}

fn document(docid: &str, coll: &str, path: &str, title: &str, ctx: Option<&str>, body: &str) -> Document {
    Document {
        docid: docid.into(),
        collection: coll.into(),
        path: path.into(),
        title: title.into(),
        context: ctx.map(Into::into),
        body: body.into(),
        source_path: format!("/corpus/{coll}/{path}"),
        size: body.len() as u64,
    }
}

fn entry(doc: Document) -> MultiGetEntry {
    MultiGetEntry { doc, skipped: None }
}

fn journal_entries() -> Vec<MultiGetEntry> {
    [("0caf6d", "2025-05-01", "May 1 Journal"), ("68db8b", "2025-05-02", "May 2 Journal")]
        .map(|(docid, date, title)| {
            let path = format!("journals/{date}.md");
            let body = add_line_numbers(&corpus(&format!("notes/{path}")), 1);
            entry(document(docid, "notes", &path, title, Some(JOURNAL_CONTEXT), &body))
        })
        .into()
}

fn data_entries() -> Vec<MultiGetEntry> {
    let mut large = entry(document("db4a7e", "myproject", "data/large.json", "Large", Some(KB), ""));
    large.skipped = Some("File too large (12KB > 5KB)".into());
    let small_body = add_line_numbers(&corpus("myproject/data/small.json"), 1);
    let small = entry(document("80af32", "myproject", "data/small.json", "small", Some(KB), &small_body));
    vec![large, small]
}

#[test]
fn multi_get_glob_every_format() {
    for (entries, stem) in [(journal_entries(), "journals"), (data_entries(), "data-maxbytes")] {
        let cli = if stem == "journals" {
            "multi-get-journals-glob.txt".to_string()
        } else {
            format!("multi-get-{stem}.txt")
        };
        assert_eq!(render_multi_get(&entries, Format::Cli, false, false), recorded(&cli), "{cli}");
        for (format, name) in [
            (Format::Json, "json"),
            (Format::Csv, "csv"),
            (Format::Md, "md"),
            (Format::Xml, "xml"),
            (Format::Files, "files"),
        ] {
            let file = format!("multi-get-{stem}-format-{name}.txt");
            assert_eq!(render_multi_get(&entries, format, false, false), recorded(&file), "{file}");
        }
    }
}

#[test]
fn multi_get_list_uses_qmd_paths() {
    let api = add_line_numbers(&corpus("myproject/docs/api.md"), 1);
    let entries = [entry(document("fa00fd", "myproject", "docs/api.md", "API Reference", Some(KB), &api))];
    assert_eq!(render_multi_get(&entries, Format::Cli, true, false), recorded("multi-get-missing-and-api.txt"));
}

#[test]
fn multi_get_glob_source_context() {
    let code = |docid, path| {
        let body = add_line_numbers(&corpus(&format!("myproject/{path}")), 1);
        entry(document(docid, "myproject", path, "x", Some(SRC_CONTEXT), &body))
    };
    let entries = [code("cd9f6f", "src/utils.ts"), code("405518", "src/errors.ts")];
    assert_eq!(render_multi_get(&entries, Format::Cli, false, false), recorded("multi-get-doublestar.txt"));
}

#[test]
fn multi_get_full_path_drops_docid() {
    let entries = data_entries();
    let files = render_multi_get(&entries, Format::Files, false, true);
    assert_eq!(
        files,
        "/corpus/myproject/data/large.json,\"Personal knowledge base\",[SKIPPED]\n\
         /corpus/myproject/data/small.json,\"Personal knowledge base\"\n"
    );
    let json = render_multi_get(&entries, Format::Json, false, true);
    assert!(!json.contains("docid"), "{json}");
    // The hint still names the file the way `qmd get` accepts it.
    assert!(json.contains("Use 'qmd get data/large.json' to retrieve."), "{json}");
}

#[test]
fn multi_get_empty() {
    assert_eq!(render_multi_get(&[], Format::Json, true, false), "[]\n");
    assert_eq!(render_multi_get(&[], Format::Cli, true, false), "");
    assert_eq!(
        render_multi_get(&[], Format::Xml, true, false),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<documents>\n</documents>\n"
    );
}

#[test]
fn get_renders_header_context_and_body() {
    let errors = add_line_numbers(&corpus("myproject/docs/errors.md"), 1);
    let doc = document("0160b9", "myproject", "docs/errors.md", "Error Handling Guide", Some(KB), &errors);
    assert_eq!(render_get(&doc, Some(&doc.body), false), recorded("get-docs-errors.txt"));

    let meeting = corpus("notes/meeting.md").split('\n').take(3).collect::<Vec<_>>().join("\n");
    let doc = document("9e1671", "notes", "meeting.md", "Team Meeting Notes", Some(KB), &add_line_numbers(&meeting, 1));
    assert_eq!(render_get(&doc, Some(&doc.body), false), recorded("get-meeting-l3.txt"));

    let doc = document(
        "405518",
        "myproject",
        "src/errors.ts",
        "errors",
        Some(SRC_CONTEXT),
        &corpus("myproject/src/errors.ts"),
    );
    assert_eq!(render_get(&doc, Some(&doc.body), false), recorded("get-src-errors-no-line-numbers.txt"));
    assert!(render_get(&doc, Some(&doc.body), true).starts_with("/corpus/myproject/src/errors.ts\nFolder Context:"));
}

#[test]
fn get_with_no_line_selected_prints_nothing_after_the_rule() {
    let doc = document("9e1671", "notes", "a.md", "A", None, "");
    assert_eq!(render_get(&doc, None, false), "qmd://notes/a.md  #9e1671\n---\n\n");
}

#[test]
fn line_numbers_match_add_line_numbers() {
    assert_eq!(add_line_numbers("a\n\nb", 100), "100: a\n101: \n102: b");
    assert_eq!(add_line_numbers("", 1), "1: ");
}

#[test]
fn numbers_follow_javascript() {
    assert_eq!(to_fixed(0.125, 2), "0.13");
    assert_eq!(to_fixed(12.5, 0), "13");
    assert_eq!(to_fixed(0.649, 4), "0.6490");
    assert_eq!(to_fixed(-0.125, 2), "-0.13");
    assert_eq!(js_number(js_round(0.649 * 100.0) / 100.0), "0.65");
    assert_eq!(js_number(js_round(100.0) / 100.0), "1");
    assert_eq!(js_number(-0.0), "0");
    assert_eq!(format_score(1.0, &plain()), "100%");
    assert_eq!(format_score(0.05, &plain()), "  5%");
}

/// Metadata is a nested object in JSON output, laid out as
/// `JSON.stringify(…, null, 2)` would and safe for a terminal.
#[test]
fn search_json_nests_metadata_safely() {
    let mut with = hit("abc123", "notes", "a.md", "A", "", 0.5, 1, "text");
    with.metadata = Some(r#"{"status":"pub\u202elished","topics":["a","b"]}"#.into());
    let out = search(&[with, hit("def456", "notes", "b.md", "B", "", 0.4, 1, "text")], Format::Json, &view());
    assert!(
        out.contains("    \"metadata\": {\n      \"status\": \"pub\\u202elished\",\n      \"topics\": [\n"),
        "{out}"
    );
    assert!(!out.contains('\u{202e}'), "the override is escaped");
    let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed[0]["metadata"], serde_json::json!({"status": "pub\u{202e}lished", "topics": ["a", "b"]}));
    assert!(parsed[1].get("metadata").is_none(), "none where a document has none");
}
