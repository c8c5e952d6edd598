//! `qmd site build` end to end: clear errors for bad input, a rebuild that
//! replaces the entry last and removes only its own old files, and the
//! semantic tier's tokenizer against the model's own.

use crate::common;

use std::fs;
use std::path::Path;

use common::Env;
use qmd_core::site::semantic::WordPiece;
use qmd_tests::models::{model_files, test_model_dir};

fn entry(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("qmd/entry.json")).expect("entry.json")).expect("JSON")
}

fn files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> =
        walk(dir).into_iter().map(|p| p.strip_prefix(dir).unwrap().display().to_string()).collect();
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn bad_input_is_named() {
    let env = Env::new();
    let out = env.qmd(&["site", "build", &env.arg("missing"), "--out", &env.arg("out")]).failure();
    assert!(out.stderr.contains("Not a directory"), "{}", out.stderr);
    env.write("empty/notes.txt", "no pages here");
    let out = env.qmd(&["site", "build", &env.arg("empty"), "--out", &env.arg("out")]).failure();
    assert!(out.stderr.contains("No HTML (.html, .htm) or markdown (.md) pages"), "{}", out.stderr);
    assert!(!env.path("out").exists(), "a failed build leaves no output folder behind");
    env.write("site/a.html", "<main>hello</main>");
    let semantic = ["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--semantic", "--dims", "0"];
    let out = env.qmd(&semantic).failure();
    assert!(out.stderr.contains("--dims must be at least 1"), "checked before any model loads: {}", out.stderr);
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--shard-kb", "0"]).failure();
    assert!(out.stderr.contains("--shard-kb must be at least 0.1"), "{}", out.stderr);
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--model", "x"]).failure();
    assert!(out.stderr.contains("--semantic"), "--model needs --semantic: {}", out.stderr);
    env.write("site/b.html", "<html><body>\u{0}\u{fffd} <main>broken <b>markup <i>still</main> &bogus; indexes");
    // Not UTF-8 and no charset declared: skipped, named, never mojibake.
    fs::write(env.path("site/c.html"), b"<main>not utf-8: \xff\xfe caf\xe9</main>").unwrap();
    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    assert!(out.stdout.contains("Indexed 2 HTML pages"), "{}", out.stdout);
    assert!(out.stderr.contains("skipped c.html: not UTF-8"), "{}", out.stderr);
}

#[test]
fn a_rebuild_replaces_the_entry_and_removes_only_its_own_old_files() {
    let env = Env::new();
    let site = env.path("site");
    for (rel, text) in [
        ("index.html", "<main><h1 id=top>Home</h1><p>archives and folders</p></main>"),
        ("docs/install.html", "<main><h1>Install</h1><p>apt install packrat</p></main>"),
    ] {
        env.write(&format!("site/{rel}"), text);
    }
    env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("site")]);
    let first = entry(&site);
    assert_eq!(first["format"], "qmd-site/1");
    assert_eq!(first["docs"], 2);
    env.write("site/qmd/custom.css", "/* the user's */");
    let before = files(&site.join("qmd"));
    assert!(before.iter().any(|f| f.starts_with("f/")) && before.iter().any(|f| f.starts_with("t/")));

    // The bundle inside the site is not indexed as pages; a changed page
    // gives new files, and the old ones go.
    env.write("site/docs/install.html", "<main><h1>Install</h1><p>brew install packrat</p></main>");
    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("site")]);
    assert!(out.stdout.contains("Indexed 2 HTML pages"), "{}", out.stdout);
    assert!(out.stdout.contains("Removed"), "{}", out.stdout);
    let second = entry(&site);
    assert_ne!(first["meta"], second["meta"]);
    let after = files(&site.join("qmd"));
    assert!(after.contains(&"custom.css".to_string()), "a file the build did not write stays");
    assert!(!after.contains(&first["meta"].as_str().unwrap().to_string()));
    assert!(after.contains(&second["meta"].as_str().unwrap().to_string()));
    assert!(!after.iter().any(|f| f.ends_with(".partial")));
    let fragment_sets: std::collections::HashSet<&str> =
        after.iter().filter_map(|f| f.strip_prefix("f/")).filter_map(|f| f.split('/').next()).collect();
    assert_eq!(fragment_sets.len(), 1, "one build's fragments: {after:?}");
}

#[test]
fn wordpiece_matches_the_models_tokenizer() {
    let dir = test_model_dir();
    let vocab = fs::read_to_string(dir.join("vocab.txt")).expect("vocab.txt");
    let wordpiece = WordPiece::from_lines(&vocab);
    let tokenizer = qmd_core::model::TextTokenizer::parse(&model_files(&dir).tokenizer, 512).expect("tokenizer");
    for text in [
        "Extract every file of the archive into the current folder.",
        "0-dimensional biomaterials lack inductive properties (p < 0.05).",
        "Café crème brûlée: naïve façade, Ångström — “quoted” don't",
        "kubectl get pods --all-namespaces -o=wide; tar -xvzf {{archive.tar.gz}}",
        "unaffable hyperparameterization antidisestablishmentarianism 中文字",
    ] {
        let (encoding, _) = tokenizer.encode_counted(&[text]).expect("encode").pop().unwrap();
        let ids = encoding.get_ids();
        assert_eq!(wordpiece.tokenize(text), ids[1..ids.len() - 1].to_vec(), "{text}");
    }
}

#[test]
fn a_semantic_rebuild_reuses_the_models_embedded_vocabulary_and_page_vectors() {
    rebuild_reuses_the_embedded_vocabulary_and_page_vectors(&test_model_dir());
}

/// The same with a GGUF embedding model (MiniLM as Q8_0): the cache is
/// keyed on the model's one file.
#[test]
fn a_semantic_rebuild_with_a_gguf_model_reuses_its_embedded_vocabulary_and_page_vectors() {
    rebuild_reuses_the_embedded_vocabulary_and_page_vectors(&qmd_tests::gguf::fixtures().file("minilm-q8_0.gguf"));
}

fn rebuild_reuses_the_embedded_vocabulary_and_page_vectors(model: &std::path::Path) {
    let env = Env::new();
    env.write("site/a.html", "<main><h1>Install</h1>Run the installer on macOS.</main>");
    env.write("site/b.html", "<main><h1>Archive</h1>Extract the archive.</main>");
    let build = |out: &str| {
        let args = [
            "site",
            "build",
            &env.arg("site"),
            "--out",
            &env.arg(out),
            "--semantic",
            "--model",
            model.to_str().unwrap(),
        ];
        env.ok(&args)
    };
    let first = build("one");
    assert!(first.stderr.contains(" tokens embedded in "), "{}", first.stderr);
    assert!(first.stderr.contains("2/2 pages embedded in "), "{}", first.stderr);
    // Two pages give no word five pages use: none is read whole.
    assert!(first.stdout.contains(", 0 of the site's words read whole;"), "{}", first.stdout);
    let second = build("two");
    assert!(second.stderr.contains(" tokens embedded (cached)"), "{}", second.stderr);
    assert!(second.stderr.contains("2 pages' vectors from the cache"), "{}", second.stderr);
    assert!(!second.stderr.contains("pages embedded in"), "{}", second.stderr);
    // The cached table gives the very same bundle.
    assert_eq!(files(&env.path("one/qmd")), files(&env.path("two/qmd")));
    assert_eq!(entry(&env.path("one")), entry(&env.path("two")));
}
