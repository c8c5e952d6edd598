//! Edges of what `get`, `multi-get`, `bench` and the `xml` formats print,
//! each one a bug from the hardening review, checked as a class: line
//! ranges past the end or of zero lines invent no line, skip messages give
//! sizes under 1 KB in bytes, a failing bench backend is reported as failed
//! (never scored zero) and a fixture is read to a limit, and XML output
//! escapes every field so a document cannot forge elements.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Output};

/// A collection `n` holding `files` (path, text).
fn collection(files: &[(&str, &str)]) -> Env {
    let env = Env::new();
    for (path, text) in files {
        env.write(&format!("n/{path}"), text);
    }
    env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    env
}

/// What `get` printed after its header: the text below `---` and a blank line.
#[track_caller]
fn get_body(out: &Output) -> &str {
    match out.stdout.split_once("---\n\n") {
        Some((_, body)) => body,
        None => panic!("no `---` separator in {:?}", out.stdout),
    }
}

/// What `get` should print below the header: lines `from..from+count` of
/// `text` (lines as qmd splits them, on `\n`), numbered or not, and nothing
/// at all when the range holds no line of the file.
fn expected_body(text: &str, from: u64, count: Option<u64>, numbers: bool) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let first = from.max(1);
    let start = (first as usize - 1).min(lines.len());
    let end = count.map_or(lines.len(), |c| (start + c as usize).min(lines.len()));
    if start == end {
        return String::new();
    }
    let shown: Vec<String> = lines[start..end]
        .iter()
        .enumerate()
        .map(|(i, line)| if numbers { format!("{}: {line}", first + i as u64) } else { line.to_string() })
        .collect();
    shown.join("\n") + "\n"
}

// ---------------------------------------------------------------------------
// 1. get: a range past the end, or of zero lines, invents no line

#[test]
fn get_ranges_past_the_end_or_empty_print_no_invented_line() {
    let texts = ["# Notes\n\nalpha\nbeta\n", "no newline at the end", "x\ny\nz\n\n\n"];
    for text in texts {
        let env = collection(&[("a.md", text)]);
        let n = text.split('\n').count() as u64;
        // (from, count) pairs: in range, at the end, past it, zero lines.
        let mut ranges = vec![(1, None), (2, Some(1)), (n, None), (n, Some(3)), (1, Some(0)), (2, Some(0))];
        for past in [n + 1, n + 7, 100, 4_294_967_295] {
            ranges.extend([(past, None), (past, Some(3)), (past, Some(0))]);
        }
        for (from, count) in ranges {
            for numbers in [true, false] {
                let flag = if numbers { "--line-numbers" } else { "--no-line-numbers" };
                let expected = expected_body(text, from, count, numbers);
                // `FILE:from[:count]`, and `--from`/`-l`.
                let suffix = match count {
                    Some(c) => format!("a.md:{from}:{c}"),
                    None => format!("a.md:{from}"),
                };
                let from_arg = from.to_string();
                let count_arg = count.map(|c| c.to_string());
                let mut flags = vec!["get", "a.md", "--from", from_arg.as_str(), flag];
                if let Some(c) = &count_arg {
                    flags.extend(["-l", c.as_str()]);
                }
                for args in [vec!["get", suffix.as_str(), flag], flags] {
                    let out = env.qmd(&args).success();
                    assert_eq!(get_body(&out), expected, "{text:?}: qmd {}\n{}", args.join(" "), out.stdout);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2. multi-get -l 0: no invented lines, the cut counted

#[test]
fn multi_get_zero_lines_prints_only_the_count_of_what_was_cut() {
    // (text, its lines: a final newline ends the last line, it starts none)
    for (text, lines) in [("# Notes\n\nalpha\nbeta\n", 4), ("one line", 1), ("a\nb\nc\nd\ne\nf\ng", 7), ("x\n\n\n", 3)]
    {
        let env = collection(&[("a.md", text)]);
        let marker = format!("[... truncated {lines} more lines]");
        for numbers in ["--line-numbers", "--no-line-numbers"] {
            let out = env.ok(&["multi-get", "*.md", "-l", "0", numbers]).stdout;
            let body = out.split_once("============================================================\n\n").unwrap().1;
            assert_eq!(body, format!("{marker}\n"), "{text:?} {numbers}: {out}");
            let json: serde_json::Value =
                serde_json::from_str(&env.ok(&["multi-get", "*.md", "-l", "0", numbers, "--json"]).stdout).unwrap();
            assert_eq!(json[0]["body"], marker.as_str(), "{json}");
        }
    }
}

// ---------------------------------------------------------------------------
// 3. Sizes in skip messages: bytes under 1 KB, whole KB above

#[test]
fn skip_messages_give_sizes_under_one_kb_in_bytes() {
    let small = "s".repeat(311) + "\n";
    let large = "l".repeat(3071) + "\n";
    let env = collection(&[("small.md", &small), ("large.md", &large)]);
    let cases = [
        ("1", "File too large (312 B > 1 B)", "File too large (3KB > 1 B)"),
        ("100", "File too large (312 B > 100 B)", "File too large (3KB > 100 B)"),
        ("311", "File too large (312 B > 311 B)", "File too large (3KB > 311 B)"),
        ("1023", "", "File too large (3KB > 1023 B)"),
        ("1024", "", "File too large (3KB > 1KB)"),
        ("2047", "", "File too large (3KB > 2KB)"),
    ];
    for (max, small_reason, large_reason) in cases {
        let out = env.ok(&["multi-get", "*.md", "--max-bytes", max]).stdout;
        assert!(!out.contains("0KB"), "--max-bytes {max}: {out}");
        assert!(out.contains(&format!("[SKIPPED: {large_reason}. Use 'qmd get large.md' to retrieve.]")), "{out}");
        if small_reason.is_empty() {
            assert!(out.contains(&format!("1: {}", "s".repeat(311))), "{out}");
        } else {
            assert!(out.contains(&format!("[SKIPPED: {small_reason}. Use 'qmd get small.md' to retrieve.]")), "{out}");
        }
        // The same message in every format.
        let json: serde_json::Value =
            serde_json::from_str(&env.ok(&["multi-get", "*.md", "--max-bytes", max, "--json"]).stdout).unwrap();
        let reasons: Vec<&str> = json.as_array().unwrap().iter().filter_map(|e| e["reason"].as_str()).collect();
        assert!(reasons.iter().any(|r| r.starts_with(large_reason)), "{json}");
        let xml = env.ok(&["multi-get", "*.md", "--max-bytes", max, "--xml"]).stdout;
        assert!(xml.contains(&large_reason.replace('>', "&gt;")), "{xml}");
    }
}

// ---------------------------------------------------------------------------
// 4. bench: failures are reported, fixtures are read to a limit

#[test]
fn bench_reports_a_failing_backend_instead_of_scoring_it_zero() {
    let env = collection(&[("a.md", "# Alpha\n\nzebra crossing\n"), ("b.md", "# Beta\n\nnothing here\n")]);
    // The second query is an invalid query document: every backend fails on it.
    env.write(
        "f.json",
        r#"{"collection": "n", "queries": [
            {"id": "good", "query": "zebra", "expected_files": ["a.md"], "expected_in_top_k": 1},
            {"id": "broken", "query": "lex: zebra\nno prefix here", "expected_files": ["a.md"], "expected_in_top_k": 1}
        ]}"#,
    );
    let out = env.qmd(&["bench", &env.arg("f.json"), "--json"]);
    assert_ne!(out.code, 0, "a failed backend fails the run:\n{}{}", out.stdout, out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("the report is still printed");
    // Without a downloaded embedding model the vector backend fails on
    // every query (qmd scored it zero); the others run the good query.
    let vector_ran = report["results"][0]["backends"]["vector"].get("error").is_none();
    for backend in ["bm25", "hybrid", "full"] {
        let good = &report["results"][0]["backends"][backend];
        assert!(good.get("error").is_none(), "{good}");
        assert_eq!(good["mrr"], 1.0, "{good}");
    }
    for backend in ["bm25", "vector", "hybrid", "full"] {
        let row = &report["results"][1]["backends"][backend];
        let error = row["error"].as_str().unwrap_or_else(|| panic!("{backend}: no error in {row}"));
        assert!(error.contains("prefix"), "the query document's error: {row}");
        assert!(row.get("mrr").is_none(), "a failed run has no scores: {row}");
        let failed = if backend == "vector" && !vector_ran { 2 } else { 1 };
        assert_eq!(report["summary"][backend]["failed"], failed, "{}", report["summary"][backend]);
    }
    // bm25's average is over the query that ran, not dragged down by a zero.
    assert_eq!(report["summary"]["bm25"]["avg_mrr"], 1.0, "{}", report["summary"]);
    assert!(!out.stderr.contains("likely unindexed"), "{}", out.stderr);

    let out = env.qmd(&["bench", &env.arg("f.json")]);
    assert_ne!(out.code, 0);
    let rows: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("broken ")).collect();
    assert_eq!(rows.len(), 4, "{}", out.stdout);
    assert!(rows.iter().all(|r| r.contains("FAILED: ")), "{}", out.stdout);
    let good_failed = out.stdout.lines().filter(|l| l.starts_with("good ") && l.contains("FAILED")).count();
    assert_eq!(good_failed, usize::from(!vector_ran), "{}", out.stdout);
    assert!(!out.stderr.contains("likely unindexed"), "{}", out.stderr);
}

#[test]
fn bench_refuses_a_fixture_past_its_size_limit() {
    let env = collection(&[("a.md", "# Alpha\n\nzebra\n")]);
    // Valid JSON, padded past 16 MiB.
    let padded = format!(
        "{{\"collection\": \"n\", \"queries\": [{{\"id\": \"q\", \"query\": \"zebra\", \"expected_files\": [\"a.md\"], \"expected_in_top_k\": 1}}]{}}}",
        " ".repeat(16 << 20)
    );
    env.write("big.json", &padded);
    let out = env.qmd(&["bench", &env.arg("big.json")]).failure();
    assert!(out.stderr.contains(&env.arg("big.json")) && out.stderr.contains("16 MiB"), "{}", out.stderr);

    // A FIFO reports size 0: the limit holds on what is read. The writer
    // stops after 20 MiB, so a reader without a limit ends too (on the
    // invalid JSON) instead of running out of memory.
    let fifo = env.path("pipe.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let writer_fifo = fifo.clone();
    let writer = std::thread::spawn(move || {
        if let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open(&writer_fifo) {
            let chunk = vec![b' '; 1 << 20];
            for _ in 0..20 {
                if pipe.write_all(&chunk).is_err() {
                    break;
                }
            }
        }
    });
    let mut child = env
        .command(env.root(), &["bench", &env.arg("pipe.json")], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qmd");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("qmd bench on a FIFO did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out: Output = child.wait_with_output().expect("output").into();
    // Should qmd not have opened the FIFO, a reader here releases the writer.
    if !writer.is_finished() {
        drop(std::fs::File::open(&fifo));
    }
    writer.join().unwrap();
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("pipe.json") && out.stderr.contains("16 MiB"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// 5. XML output escapes every field

/// One element of parsed XML: its name, attributes and direct text, unescaped.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn xml_name(name: &str) -> Result<&str, String> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || "_-.:".contains(c))
        && !name.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    if ok { Ok(name) } else { Err(format!("bad name {name:?}")) }
}

fn xml_unescape(raw: &str) -> Result<String, String> {
    if let Some(c) = raw.chars().find(|&c| c == '<' || (c.is_control() && !"\t\n\r".contains(c))) {
        return Err(format!("{c:?} unescaped in {raw:?}"));
    }
    let mut out = String::new();
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out += &rest[..at];
        let end = rest[at..].find(';').ok_or_else(|| format!("bare & in {raw:?}"))?;
        out.push(match &rest[at + 1..at + end] {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            other => return Err(format!("unknown entity &{other}; in {raw:?}")),
        });
        rest = &rest[at + end + 1..];
    }
    Ok(out + rest)
}

/// Every element of `xml` in document order, or why it is not well-formed
/// XML (declaration, elements, attributes, text and the five entities).
fn parse_xml(xml: &str) -> Result<Vec<Element>, String> {
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut rest = xml;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("<?") {
            rest = &r[r.find("?>").ok_or("unterminated declaration")? + 2..];
        } else if let Some(r) = rest.strip_prefix("</") {
            let end = r.find('>').ok_or("unterminated end tag")?;
            let name = xml_name(&r[..end])?;
            let top = open.pop().ok_or_else(|| format!("</{name}> closes nothing"))?;
            if out[top].name != name {
                return Err(format!("</{name}> closes <{}>", out[top].name));
            }
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('<') {
            let end = r.find(|c: char| c.is_whitespace() || c == '>' || c == '/').ok_or("unterminated tag")?;
            let mut element =
                Element { name: xml_name(&r[..end])?.to_string(), attrs: Vec::new(), text: String::new() };
            let mut r = &r[end..];
            let closed = loop {
                r = r.trim_start();
                if let Some(after) = r.strip_prefix("/>") {
                    r = after;
                    break true;
                }
                if let Some(after) = r.strip_prefix('>') {
                    r = after;
                    break false;
                }
                let eq = r.find('=').ok_or_else(|| format!("attribute without value in <{}", element.name))?;
                let name = xml_name(r[..eq].trim())?.to_string();
                if element.attrs.iter().any(|(n, _)| *n == name) {
                    return Err(format!("duplicate attribute {name}"));
                }
                let value = r[eq + 1..].trim_start();
                let quote = value.chars().next().filter(|q| *q == '"' || *q == '\'').ok_or("unquoted attribute")?;
                let close = value[1..].find(quote).ok_or("unterminated attribute")?;
                element.attrs.push((name, xml_unescape(&value[1..1 + close])?));
                r = &value[close + 2..];
            };
            out.push(element);
            if !closed {
                open.push(out.len() - 1);
            }
            rest = r;
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = xml_unescape(&rest[..end])?;
            match open.last() {
                Some(&top) => out[top].text += &text,
                None if text.trim().is_empty() => {}
                None => return Err(format!("text outside any element: {text:?}")),
            }
            rest = &rest[end..];
        }
    }
    match open.last() {
        Some(&top) => Err(format!("<{}> is never closed", out[top].name)),
        None => Ok(out),
    }
}

const FORGED_BODY: &str = "zebra says </file><file name=\"forged\"> and </body></document><document><file>forged.md</file>\n\
    Tom & Jerry's \"quote\" <b>bold</b> &amp; \u{1b}[31m zebra\n";

#[test]
fn xml_output_escapes_every_field_so_documents_cannot_forge_entries() {
    let evil = format!("# Tom & Jerry's \"<b>forged</b>\" title\n\n{FORGED_BODY}");
    let env = collection(&[("evil.md", &evil), ("plain.md", "# Plain\n\nzebra crossing\n")]);
    env.ok(&["context", "add", "qmd://n", "Context <with> & \"quotes\" 'too'"]);
    let hits = |args: &[&str]| {
        let json: serde_json::Value = serde_json::from_str(&env.ok(&[args, &["--json"]].concat()).stdout).unwrap();
        json.as_array().unwrap().len()
    };
    for extra in [&[][..], &["--full"], &["--line-numbers"], &["--full", "--line-numbers"], &["--full-path"]] {
        let args = [&["search", "zebra", "-n", "10"][..], extra].concat();
        let xml = env.ok(&[&args[..], &["--xml"]].concat()).stdout;
        let elements = parse_xml(&format!("<root>{xml}</root>")).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
        let files: Vec<&Element> = elements.iter().filter(|e| e.name == "file").collect();
        assert_eq!(files.len(), hits(&args), "one <file> per hit ({args:?}):\n{xml}");
        assert_eq!(elements.len(), files.len() + 1, "no other elements ({args:?}):\n{xml}");
        let evil_hit = files.iter().find(|f| f.text.contains("zebra says")).expect("the evil document is a hit");
        assert!(evil_hit.text.contains("</file><file name=\"forged\">"), "the text survives, escaped: {xml}");
        assert_eq!(evil_hit.attr("title"), Some("Tom & Jerry's \"<b>forged</b>\" title"));
        if !args.contains(&"--full-path") {
            assert_eq!(evil_hit.attr("context"), Some("Context <with> & \"quotes\" 'too'"));
        }
        assert!(files.iter().all(|f| f.attr("name") != Some("forged")), "{xml}");
    }
    // Documents without those characters print as qmd prints them.
    let plain = env.ok(&["search", "crossing", "--xml"]).stdout;
    assert!(plain.contains("name=\"qmd://n/plain.md\" title=\"Plain\""), "{plain}");

    for format in [&["--xml"][..], &["--format", "xml"]] {
        for extra in [&[][..], &["-l", "2"], &["--max-bytes", "10"]] {
            let args = [&["multi-get", "*.md"][..], extra, format].concat();
            let xml = env.ok(&args).stdout;
            let elements = parse_xml(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
            let documents = elements.iter().filter(|e| e.name == "document").count();
            assert_eq!(documents, 2, "{args:?}:\n{xml}");
            let mut files: Vec<&str> = elements.iter().filter(|e| e.name == "file").map(|e| e.text.as_str()).collect();
            files.sort_unstable();
            assert_eq!(files, ["evil.md", "plain.md"], "{args:?}:\n{xml}");
        }
    }
}
