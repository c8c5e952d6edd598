//! The directory walk inside the component, end to end: an entry it cannot
//! read (a name that is not UTF-8) is skipped and named, every other entry
//! is indexed, and nothing it did not see is taken as deleted. Names are
//! made by the tests from raw bytes. (A folder that cannot be listed keeps
//! its documents: the engine's rule is tested in core, `update.rs`, since
//! these tests run as root, whom no folder mode stops.)

use crate::common;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use common::Env;

fn write_raw(dir: &Path, name: &[u8], text: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(OsStr::from_bytes(name)), text).unwrap();
}

fn total_documents(env: &Env) -> usize {
    let status = env.ok(&["status"]).stdout;
    let line = status.lines().find(|l| l.contains("files indexed")).unwrap_or_else(|| panic!("{status}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_name_that_is_not_utf8_never_empties_the_collection() {
    let env = Env::new();
    let notes = env.path("notes");
    for i in 0..20 {
        env.write(&format!("notes/n{i:02}.md"), &format!("# Note {i}\n\nwalrus {i}\n"));
        env.write(&format!("notes/sub/s{i:02}.md"), &format!("# Sub {i}\n\nwalrus sub {i}\n"));
    }
    assert_eq!(env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]).indexed(), [40, 0, 0, 0]);

    // Bad names in the root, in a subfolder, and a folder with one.
    write_raw(&notes, b"caf\xff.md", "# Bad\n\nnot indexed\n");
    write_raw(&notes.join("sub"), b"\x80\x1bx.md", "# Bad\n\nnot indexed\n");
    write_raw(&notes.join(OsStr::from_bytes(b"dir\xfe")), b"inner.md", "# Inner\n\nunder a bad folder\n");
    let out = env.ok(&["update"]);
    assert_eq!(out.indexed(), [0, 0, 40, 0], "{}\n{}", out.stdout, out.stderr);
    for shown in ["qmd://notes/caf\\xff.md", "qmd://notes/sub/\\x80\\x1bx.md", "qmd://notes/dir\\xfe"] {
        assert!(out.stderr.contains(shown), "{shown} named:\n{}", out.stderr);
    }
    assert!(out.stderr.contains("NAME_NOT_UTF8"), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b') && !out.stderr.contains('\u{fffd}'), "escaped, not raw:\n{:?}", out.stderr);
    assert_eq!(total_documents(&env), 40);

    // New files beside the bad names are found, deletions beside them too.
    env.write("notes/sub/new.md", "# New\n\nfresh walrus\n");
    fs::remove_file(notes.join("n00.md")).unwrap();
    let out = env.ok(&["update"]);
    assert_eq!(out.indexed(), [1, 0, 39, 1], "{}\n{}", out.stdout, out.stderr);
}

/// A small deterministic generator (xorshift), so a failing run repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random file or folder name: letters, spaces, controls, multi-byte
/// UTF-8, and bytes that are not UTF-8 (lone continuation bytes, `\xff`,
/// truncated sequences). Never `/` or NUL, never a leading `.`.
fn random_name(rng: &mut Rng) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"a",
        b"b",
        b"z",
        b"Q",
        b"7",
        b" ",
        b"-",
        b"_",
        b"\x01",
        b"\x1b[2K",
        b"\r",
        b"\n",
        b"\t",
        b"\x7f",
        "é".as_bytes(),
        "東".as_bytes(),
        "\u{202e}".as_bytes(),
        b"\xff",
        b"\xfe",
        b"\x80",
        b"\xc3",
        b"\xe6\x9d",
        b"\\",
        b"%",
        b"#",
        b"'",
        b"\"",
    ];
    let mut name = Vec::new();
    for _ in 0..1 + rng.below(6) {
        name.extend_from_slice(PIECES[rng.below(PIECES.len())]);
    }
    if name.starts_with(b".") {
        name.insert(0, b'x');
    }
    name
}

#[test]
fn random_names_and_bytes_index_every_readable_file_and_remove_nothing_unseen() {
    let env = Env::new();
    let notes = env.path("notes");
    env.write("notes/anchor.md", "# Anchor\n\nalways here\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    // QMD_FUZZ_SEED varies the names, as for scripts/fuzz.sh.
    let seed = std::env::var("QMD_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15u64);
    let mut rng = Rng(seed.max(1));
    let mut expected: BTreeSet<String> = BTreeSet::from(["anchor.md".to_string()]);
    for round in 0..4 {
        for _ in 0..24 {
            let mut dir = notes.clone();
            let mut rel = String::new();
            let mut readable = true;
            if rng.below(3) == 0 {
                let folder = random_name(&mut rng);
                readable &= std::str::from_utf8(&folder).is_ok();
                rel = format!("{}/", String::from_utf8_lossy(&folder));
                dir = dir.join(OsStr::from_bytes(&folder));
            }
            let mut name = random_name(&mut rng);
            name.extend_from_slice(b".md");
            readable &= std::str::from_utf8(&name).is_ok();
            write_raw(&dir, &name, &format!("# Round {round}\n\nrandom walrus\n"));
            if readable {
                expected.insert(format!("{rel}{}", String::from_utf8_lossy(&name)));
            }
        }
        let out = env.ok(&["update"]);
        let [_, _, _, removed] = out.indexed();
        assert_eq!(removed, 0, "round {round}: nothing was deleted\n{}\n{}", out.stdout, out.stderr);
        assert!(!out.stderr.contains('\x1b'), "round {round}: names escaped on stderr");
        assert_eq!(total_documents(&env), expected.len(), "round {round}:\n{}", out.stderr);
        let listed = env.ok(&["ls", "notes"]).stdout;
        for path in &expected {
            let shown = format!("qmd://notes/{}", qmd_core::display::escape_controls(path));
            assert!(listed.contains(&shown), "round {round}: {shown:?} listed\n{listed}");
        }
    }
}
