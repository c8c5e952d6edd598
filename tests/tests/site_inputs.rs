//! `qmd site build` on contributed content, as CI builds a docs pull
//! request: links out of the folder, pages in other charsets, FIFOs and
//! devices, hostile `--base-url`s and filter keys. What a page of the
//! bundle may hold is read back from its files (inflated here).

#![cfg(unix)]

use crate::common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use common::*;

/// Every fragment (a page's text, title, URL and filters) of the bundle
/// under `out`, inflated and joined.
fn fragments(out: &Path) -> String {
    fn walk(dir: &Path, text: &mut String) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, text);
            } else {
                let mut inflated = String::new();
                flate2::read::GzDecoder::new(fs::File::open(&path).unwrap()).read_to_string(&mut inflated).unwrap();
                text.push_str(&inflated);
                text.push('\n');
            }
        }
    }
    let mut text = String::new();
    walk(&out.join("qmd/f"), &mut text);
    text
}

fn entry(out: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(out.join("qmd/entry.json")).unwrap()).unwrap()
}

#[test]
fn links_out_of_the_folder_are_never_published() {
    let env = Env::new();
    // Another user's files beside the site, as on a CI runner.
    env.write("secret/passwd", "root:x:0:0:SECRET-PASSWD-LINE");
    env.write("secret/notes/private.md", "# Private\n\nSECRET-FOLDER-NOTE");
    env.write("secret/page.html", "<main>SECRET-HTML-PAGE</main>");
    env.write("docs/guide.md", "# Guide\n\nThe public guide.");
    env.write("docs/sub/real.md", "# Real\n\nA real page.");
    let docs = env.path("docs");
    symlink(env.path("secret/passwd"), docs.join("passwd.md")).unwrap();
    symlink(env.path("secret/notes"), docs.join("notes")).unwrap();
    symlink("../../secret/notes/private.md", docs.join("sub/relative.md")).unwrap();
    // An outside folder holding one .html: the build is still markdown.
    symlink(env.path("secret"), docs.join("theme")).unwrap();
    // Links that stay inside are followed, as before.
    symlink("sub/real.md", docs.join("alias.md")).unwrap();
    symlink(".", docs.join("sub/self")).unwrap();

    let out = env.ok(&["site", "build", &env.arg("docs"), "--out", &env.arg("out")]);
    assert!(out.stdout.contains("Indexed 3 markdown pages"), "{}", out.stdout);
    let published = fragments(&env.path("out"));
    for secret in ["SECRET-PASSWD-LINE", "SECRET-FOLDER-NOTE", "SECRET-HTML-PAGE"] {
        assert!(!published.contains(secret), "{secret} published: {published}");
    }
    assert!(published.contains("The public guide") && published.contains("A real page"));
    for link in ["passwd.md", "notes", "sub/relative.md", "theme"] {
        let line = out.stderr.lines().find(|l| l.contains(&format!("skipped {link}:")));
        assert!(line.is_some_and(|l| l.contains("a link out of")), "a line names {link}: {}", out.stderr);
    }
    // The same folder as HTML: a page linked from outside is not read either.
    env.write("html/index.html", "<main>home</main>");
    symlink(env.path("secret/page.html"), env.path("html/leak.html")).unwrap();
    let out = env.ok(&["site", "build", &env.arg("html"), "--out", &env.arg("html-out")]);
    assert!(out.stdout.contains("Indexed 1 HTML pages"), "{}", out.stdout);
    assert!(!fragments(&env.path("html-out")).contains("SECRET-HTML-PAGE"));
    assert!(out.stderr.contains("skipped leak.html: a link out of"), "{}", out.stderr);
}

#[test]
fn pages_are_read_in_the_charset_they_declare_or_skipped_with_a_reason() {
    let env = Env::new();
    let site = env.path("site");
    fs::create_dir_all(&site).unwrap();
    fs::write(
        site.join("latin1.html"),
        b"<html><head><meta charset=\"ISO-8859-1\"></head><main><p>Caf\xe9 cr\xe8me</p></main></html>",
    )
    .unwrap();
    let sjis = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"></head><main><p>\x93\xfa\x96\x7b\x8c\xea</p></main>";
    fs::write(site.join("sjis.html"), sjis).unwrap();
    let mut utf16 = vec![0xfe, 0xff];
    utf16.extend("<main><p>UTF-16 naïveté</p></main>".encode_utf16().flat_map(u16::to_be_bytes));
    fs::write(site.join("utf16.html"), utf16).unwrap();
    fs::write(site.join("undeclared.html"), b"<main><p>Caf\xe9 undeclared</p></main>").unwrap();
    fs::write(site.join("klingon.html"), b"<meta charset=\"x-klingon\"><main>tlhIngan</main>").unwrap();
    let bare: Vec<u8> = "<main><p>no mark</p></main>".encode_utf16().flat_map(u16::to_le_bytes).collect();
    fs::write(site.join("bare16.html"), bare).unwrap();
    fs::write(site.join("plain.html"), "<main><p>Ünïcode as UTF-8</p></main>").unwrap();

    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    assert!(out.stdout.contains("Indexed 4 HTML pages"), "{}\n{}", out.stdout, out.stderr);
    let text = fragments(&env.path("out"));
    for decoded in ["Café crème", "日本語", "UTF-16 naïveté", "Ünïcode as UTF-8"] {
        assert!(text.contains(decoded), "{decoded} in {text}");
    }
    assert!(!text.contains('\u{fffd}'), "nothing indexed as replacement characters: {text}");
    for (page, why) in
        [("undeclared.html", "not UTF-8"), ("klingon.html", "\"x-klingon\""), ("bare16.html", "NUL bytes")]
    {
        let line = out.stderr.lines().find(|l| l.contains(&format!("skipped {page}:")));
        assert!(line.is_some_and(|l| l.contains(why)), "{page}: {why}: {}", out.stderr);
    }
}

#[test]
fn fifos_and_devices_in_a_site_are_skipped_with_a_line_each() {
    let env = Env::new();
    env.write("site/index.html", "<main>home</main>");
    mkfifo(&env.path("site/pipe.html"));
    mkfifo(&env.path("site/docs/feed.md"));
    symlink("/dev/zero", env.path("site/zero.html")).unwrap();
    let out =
        qmd_within(&env, &["site", "build", &env.arg("site"), "--out", &env.arg("out")], &[], Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Indexed 1 HTML pages"), "{}", out.stdout);
    for (name, what) in [("pipe.html", "a FIFO"), ("docs/feed.md", "a FIFO"), ("zero.html", "a link out of")] {
        let line = out.stderr.lines().find(|l| l.contains(&format!("skipped {name}:")));
        assert!(line.is_some_and(|l| l.contains(what)), "{name}: {}", out.stderr);
    }
}

#[test]
fn base_urls_and_link_endings_a_click_could_run_are_refused() {
    let env = Env::new();
    env.write("site/a b#c.html", "<main>odd name</main>");
    for bad in ["javascript:alert(1)//", "JAVASCRIPT:alert(1)", "data:text/html,<script>x</script>", "java\nscript:x"] {
        let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--base-url", bad]).failure();
        assert!(out.stderr.contains("--base-url"), "{bad}: {}", out.stderr);
    }
    let out = env.qmd(&["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--link-ext", "\"onclick=x"]);
    assert!(out.failure().stderr.contains("--link-ext"));
    assert!(!env.path("out").exists(), "refused before anything is written");
    env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out"), "--base-url", "https://example.com/docs/"]);
    // A file's name is one path segment of its link, whatever it holds.
    assert!(fragments(&env.path("out")).contains("\"url\":\"https://example.com/docs/a%20b%23c.html\""));
}

#[test]
fn filter_keys_objects_reserve_are_left_out_and_every_kind_has_a_limit() {
    let env = Env::new();
    env.write(
        "site/a.html",
        "<main data-qmd-filter=\"__proto__:polluted, constructor:x, prototype:y, tag:Tom &amp; Jerry, a=b:c\">page</main>",
    );
    let out = env.ok(&["site", "build", &env.arg("site"), "--out", &env.arg("out")]);
    for key in ["__proto__", "constructor", "prototype"] {
        assert!(out.stderr.contains(&format!("a.html: filter key \"{key}\" left out")), "{key}: {}", out.stderr);
    }
    let text = fragments(&env.path("out"));
    assert!(!text.contains("polluted") && text.contains("Tom & Jerry") && text.contains("a=b"), "{text}");
    // The entry names each kind's largest file: the page inflates no more.
    let entry = entry(&env.path("out"));
    let limits = entry["limits"].as_object().expect("limits");
    for kind in ["engine", "filter", "meta", "t", "f"] {
        assert!(limits.get(kind).and_then(|n| n.as_u64()).is_some_and(|n| n > 0), "{kind}: {limits:?}");
    }
}
