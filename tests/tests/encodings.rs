//! Notes are read as they declare (robustness class 15): a byte-order mark
//! (UTF-8, UTF-16 either way round) is honoured, bytes that are not valid
//! are indexed as U+FFFD with a line naming the file, and a file that is
//! not text (UTF-16 without a mark, NUL bytes) is skipped with a line naming
//! it. Every other note is indexed as usual.

use crate::common;

use std::fs;

use common::Env;

fn utf16(text: &str, little_endian: bool) -> Vec<u8> {
    let mut bytes = if little_endian { vec![0xff, 0xfe] } else { vec![0xfe, 0xff] };
    for unit in text.encode_utf16() {
        bytes.extend(if little_endian { unit.to_le_bytes() } else { unit.to_be_bytes() });
    }
    bytes
}

#[test]
fn notes_are_decoded_by_their_mark_and_what_is_not_text_is_named() {
    let env = Env::new();
    env.write("notes/plain.md", "# Plain\n\nAn ordinary note about walruses.\n");
    let notes = env.path("notes");
    let write = |name: &str, bytes: &[u8]| fs::write(notes.join(name), bytes).unwrap();
    write("marked.md", "\u{feff}# Marked Café\n\nA walrus with a byte-order mark.\n".as_bytes());
    write("wide-le.md", &utf16("# Wide Naïve\n\nA little-endian walrus (日本).\n", true));
    write("wide-be.md", &utf16("# Wide Big\n\nA big-endian walrus.\n", false));
    write("latin1.md", b"# Latin\n\nA walrus at the caf\xe9.\n");
    let bare: Vec<u8> = "# Bare\n\nno mark walrus\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
    write("bare-utf16.md", &bare);
    write("binary.md", &[0u8; 256]);

    let out = env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    assert_eq!(out.indexed(), [5, 0, 0, 0], "{}\n{}", out.stdout, out.stderr);
    for skipped in ["bare-utf16.md", "binary.md"] {
        let line = format!("Skipped qmd://notes/{skipped} (NOT_TEXT: mostly NUL bytes");
        assert!(out.stderr.contains(&line), "{skipped} named:\n{}", out.stderr);
    }
    let warning = "Warning: qmd://notes/latin1.md: not UTF-8 from byte 28 of 31";
    assert!(out.stderr.contains(warning), "the lossy note is named:\n{}", out.stderr);
    assert_eq!(out.stderr.matches("Warning: qmd://").count(), 1, "only latin1.md is lossy:\n{}", out.stderr);

    // Titles and text come from the decoded note, mark and all handled.
    let listing = env.ok(&["search", "walrus", "--json", "-n", "10"]).stdout;
    let hits: serde_json::Value = serde_json::from_str(&listing).unwrap();
    let titles: Vec<&str> = hits.as_array().unwrap().iter().map(|h| h["title"].as_str().unwrap()).collect();
    for title in ["Marked Café", "Wide Naïve", "Wide Big", "Latin", "Plain"] {
        assert!(titles.contains(&title), "{title} in {titles:?}");
    }
    let wide = env.ok(&["get", "qmd://notes/wide-le.md"]).stdout;
    assert!(wide.contains("A little-endian walrus (日本)."), "{wide:?}");
    assert!(!wide.contains('\0'), "{wide:?}");
    let marked = env.ok(&["get", "qmd://notes/marked.md"]).stdout;
    assert!(marked.contains("# Marked Café") && !marked.contains('\u{feff}'), "{marked:?}");
    let latin = env.ok(&["get", "qmd://notes/latin1.md"]).stdout;
    assert!(latin.contains("caf\u{fffd}."), "{latin:?}");
    let paths: Vec<&str> = hits.as_array().unwrap().iter().map(|h| h["file"].as_str().unwrap_or_default()).collect();
    assert!(paths.iter().all(|p| !p.contains("bare-utf16") && !p.contains("binary")), "{paths:?}");
}
