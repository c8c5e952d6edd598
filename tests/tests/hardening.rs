//! What real folders and damaged files do to the CLI: each test is one of
//! the failures found by probing the released build (large files, FIFOs,
//! unreadable folders, flipped bits, missing folders, symlinked configs,
//! huge numbers, hand-edited manifests, truncated segments, control
//! characters and backslashes in names, comments in `index.yml`, a bad
//! `models:` block, driver noise). Each asserts the fixed behaviour: the
//! rest indexes, damage is reported as damage with the recovery named, and
//! `qmd update --rebuild` recovers.

use crate::common;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Env, Output, qmd_within};

/// The repro prelude: a folder `n` with `a.md`, added as `n`.
fn indexed_notes() -> Env {
    let env = Env::new();
    env.write("n/a.md", "# A\n\nhello world\n");
    env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    env
}

fn index_dir(env: &Env) -> PathBuf {
    env.cache_home().join("qmd/index.qmdx")
}

fn manifest(env: &Env) -> serde_json::Value {
    serde_json::from_slice(&fs::read(index_dir(env).join("manifest.json")).unwrap()).unwrap()
}

/// The (only) text segment file and its metadata.
fn segment(env: &Env) -> (PathBuf, serde_json::Value) {
    let meta = manifest(env)["segments"][0].clone();
    (index_dir(env).join(meta["file"].as_str().unwrap()), meta)
}

fn section(meta: &serde_json::Value, name: &str) -> (u64, u64) {
    let s = meta["sections"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap();
    (s["offset"].as_u64().unwrap(), s["len"].as_u64().unwrap())
}

/// Neither a panic nor an engine backtrace reached the user.
#[track_caller]
fn assert_no_crash(out: &Output) {
    for noise in ["panicked", "wasm backtrace", "capacity overflow", "RUST_BACKTRACE", "os error"] {
        assert!(!out.stderr.contains(noise), "{noise:?} reached the user:\n{}", out.stderr);
    }
}

/// Damage is reported as damage, naming the file's real path and the recovery.
#[track_caller]
fn assert_reports_damage(env: &Env, out: &Output) {
    assert_ne!(out.code, 0, "damage must fail the command:\n{}{}", out.stdout, out.stderr);
    assert_no_crash(out);
    assert!(out.stderr.contains("is damaged"), "{}", out.stderr);
    assert!(out.stderr.contains("Run 'qmd update --rebuild'"), "{}", out.stderr);
    assert!(out.stderr.contains(&index_dir(env).display().to_string()), "names the real path:\n{}", out.stderr);
}

/// Text of `len` bytes or more from a 5,000-word vocabulary, with `marker`
/// on its last line.
fn large_text(len: usize, marker: &str) -> String {
    let mut out = String::with_capacity(len + 64);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    while out.len() < len {
        for _ in 0..12 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out += &format!("w{} ", x % 5_000);
        }
        out.push('\n');
    }
    out + marker + "\n"
}

#[test]
fn a_40_mb_file_indexes_with_the_rest() {
    // lz4's output bound of one 40 MB block overflowed 32-bit sizes in the
    // wasm engine: the whole update failed, and every one after it.
    let env = Env::new();
    env.write("n/a.md", "# A\n\nhello world\n");
    env.write("n/big.md", &large_text(40_000_000, "needleinthebigfile"));
    let out = env.qmd(&["collection", "add", &env.arg("n"), "--name", "n"]);
    assert_no_crash(&out);
    let out = out.success();
    assert!(out.stdout.contains("Indexed: 2 new"), "{}", out.stdout);
    assert!(env.ok(&["search", "needleinthebigfile", "--files"]).stdout.contains("qmd://n/big.md"));
    assert!(env.ok(&["search", "hello", "--files"]).stdout.contains("qmd://n/a.md"));
    let tail = env.ok(&["get", "n/big.md", "--from", "1", "-l", "1"]).stdout;
    assert!(tail.contains("1: w"), "{tail}");
}

#[test]
fn a_file_that_is_one_giant_token_indexes_with_the_rest() {
    // One 40 MB hex run cost 3.3 GB in the term dictionary's builder and
    // panicked, so no new file was ever indexed again. A run longer than
    // any word is no term now; the words around it are.
    let env = Env::new();
    env.write("n/a.md", "# A\n\nhello world\n");
    let mut blob = String::from("# Dump\n\nzebrafirst\n");
    blob.extend(std::iter::repeat_n("0123456789abcdef", 24 << 16));
    blob.push_str("\nokapilast\n");
    env.write("n/dump.md", &blob);
    let out = env.qmd(&["collection", "add", &env.arg("n"), "--name", "n"]);
    assert_no_crash(&out);
    assert!(out.success().stdout.contains("Indexed: 2 new"));
    for (word, file) in [("zebrafirst", "dump.md"), ("okapilast", "dump.md"), ("hello", "a.md")] {
        let found = env.ok(&["search", word, "--files"]).stdout;
        assert!(found.contains(&format!("qmd://n/{file}")), "{word}: {found}");
    }
    env.write("n/later.md", "# Later\n\nindexed after the dump\n");
    assert_eq!(env.ok(&["update"]).indexed(), [1, 0, 2, 0], "later updates go on");
}

#[test]
fn a_file_over_the_size_limit_is_skipped_with_a_message() {
    let env = Env::new();
    env.write("n/a.md", "# A\n\nhello world\n");
    let huge = fs::File::create(env.path("n/huge.md")).unwrap();
    huge.set_len(65 << 20).unwrap();
    let out = env.qmd(&["collection", "add", &env.arg("n"), "--name", "n"]).success();
    assert!(out.stdout.contains("Indexed: 1 new"), "{}", out.stdout);
    assert!(
        out.stderr.contains("Skipped qmd://n/huge.md (FILE_TOO_LARGE: 65.0 MiB, the limit is 64 MiB)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_symlink_to_a_fifo_is_skipped_not_opened() {
    let env = indexed_notes();
    let made = Command::new("mkfifo").arg(env.path("n/pipe")).status().expect("mkfifo");
    assert!(made.success());
    symlink("pipe", env.path("n/x.md")).unwrap();
    // Opening a FIFO blocks until a writer comes: the update hung forever,
    // holding the index's write lock.
    let out = qmd_within(&env, &["update"], &[], Duration::from_secs(60));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("Skipped qmd://n/x.md (NOT_A_REGULAR_FILE)"), "{}", out.stderr);
}

/// A command line that runs `qmd` without the power to read what its
/// permissions deny: as root (CI), without CAP_DAC_OVERRIDE and
/// CAP_DAC_READ_SEARCH.
fn without_root_override(env: &Env, args: &[&str]) -> Output {
    let is_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut command = if is_root {
        let mut c = Command::new("setpriv");
        c.arg("--bounding-set=-dac_override,-dac_read_search");
        c.arg(common::qmd_bin());
        c
    } else {
        Command::new(common::qmd_bin())
    };
    let template = env.command(env.root(), &[], &[]);
    command.args(args).current_dir(env.root());
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command.output().expect("run qmd").into()
}

#[test]
fn an_unreadable_subfolder_is_skipped_and_its_documents_kept() {
    let env = indexed_notes();
    env.write("n/locked/b.md", "# B\n\nbehind a locked door\n");
    env.ok(&["update"]);
    env.write("n/c.md", "# C\n\nsomething new\n");
    fs::set_permissions(env.path("n/locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let out = without_root_override(&env, &["update"]);
    fs::set_permissions(env.path("n/locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.code, 0, "one unreadable folder must not fail the update:\n{}", out.stderr);
    assert!(
        out.stderr.contains("Skipped qmd://n/locked/ (EACCES; documents indexed under it are kept)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("Indexed: 1 new, 0 updated, 1 unchanged, 0 removed"), "{}", out.stdout);
    assert!(env.ok(&["search", "locked door", "--files"]).stdout.contains("qmd://n/locked/b.md"), "kept");
}

#[test]
fn a_flipped_bit_in_a_body_is_reported_and_rebuild_repairs_it() {
    let env = indexed_notes();
    let (file, meta) = segment(&env);
    let (offset, len) = section(&meta, "bodies");
    let mut bytes = fs::read(&file).unwrap();
    bytes[(offset + len / 2) as usize] ^= 0x04;
    fs::write(&file, bytes).unwrap();
    // Was: the altered text, exit 0.
    let out = env.qmd(&["get", "n/a.md"]);
    assert_reports_damage(&env, &out);
    assert!(out.stdout.is_empty(), "no altered text: {}", out.stdout);
    let out = env.ok(&["update", "--rebuild"]);
    assert!(out.stdout.contains("Indexed: 1 new"), "{}", out.stdout);
    let text = env.ok(&["get", "n/a.md"]).stdout;
    assert!(text.contains("1: # A\n2: \n3: hello world\n"), "{text}");
}

#[test]
fn a_missing_collection_folder_does_not_block_the_others() {
    let env = indexed_notes();
    env.write("m/b.md", "# B\n\nmounted elsewhere\n");
    env.ok(&["collection", "add", &env.arg("m"), "--name", "m"]);
    fs::rename(env.path("m"), env.path("m-unmounted")).unwrap();
    env.write("n/c.md", "# C\n\nsomething new\n");
    let out = env.qmd(&["update"]);
    assert_no_crash(&out);
    assert_eq!(out.code, 1, "a collection that could not be scanned fails the run:\n{}", out.stderr);
    assert!(out.stdout.contains("Indexed: 1 new, 0 updated, 1 unchanged, 0 removed"), "{}", out.stdout);
    let expected =
        format!("Error: collection 'm' was not updated: {}: not found; its 1 indexed documents are kept", env.arg("m"));
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    assert!(env.ok(&["search", "something new", "--files"]).stdout.contains("qmd://n/c.md"), "n was committed");
    assert!(env.ok(&["ls", "m"]).stdout.contains("qmd://m/b.md"), "m's documents are kept");
}

#[test]
fn a_symlinked_index_yml_is_followed_and_stays_a_link() {
    let env = Env::new();
    env.write("n/a.md", "# A\n\nhello world\n");
    let real = env.write("dotfiles/qmd/index.yml", &format!("collections:\n  n:\n    path: {}\n", env.arg("n")));
    let link = env.config_home().join("qmd/index.yml");
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(&real, &link).unwrap();
    // Was: "Operation not permitted (os error 63)" from every command.
    env.ok(&["update"]);
    assert!(env.ok(&["search", "hello", "--files"]).stdout.contains("qmd://n/a.md"));
    env.ok(&["context", "add", "/", "Dotfile-managed notes"]);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(fs::read_to_string(&real).unwrap().contains("Dotfile-managed notes"), "written through the link");
}

#[test]
fn numbers_past_32_bits_neither_panic_nor_wrap() {
    let env = indexed_notes();
    for args in [
        vec!["get", "n/a.md:4294967295:2"],
        vec!["get", "n/a.md:2:4294967295"],
        vec!["get", "n/a.md", "--from", "4294967295", "-l", "4294967295"],
    ] {
        let out = env.qmd(&args);
        assert_no_crash(&out);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    }
    assert!(env.ok(&["get", "n/a.md:2:4294967295"]).stdout.contains("2: \n3: hello world"));
    // Was: cut to 32 bits, i.e. a limit of 0 and no results.
    let out = env.ok(&["search", "hello", "-n", "4294967296", "--files"]);
    assert!(out.stdout.contains("qmd://n/a.md"), "{}", out.stdout);
}

#[test]
fn hand_edited_manifest_counts_are_reported_as_damage() {
    let env = indexed_notes();
    let path = index_dir(&env).join("manifest.json");
    let text = fs::read_to_string(&path).unwrap();
    for (from, to) in
        [("\"deleted\": 0", "\"deleted\": 5"), ("\"next_segment\": 1", "\"next_segment\": 18446744073709551615")]
    {
        assert!(text.contains(from), "{text}");
        fs::write(&path, text.replace(from, to)).unwrap();
        for args in [&["status"][..], &["search", "hello"], &["update"]] {
            assert_reports_damage(&env, &env.qmd(args));
        }
        fs::write(&path, &text).unwrap();
    }
    env.ok(&["status"]);
}

#[test]
fn a_truncated_or_missing_segment_has_one_way_out() {
    let env = indexed_notes();
    for damage in ["truncated", "deleted"] {
        let (file, _) = segment(&env);
        let whole = fs::read(&file).unwrap();
        if damage == "truncated" {
            fs::write(&file, &whole[..whole.len() / 2]).unwrap();
        } else {
            fs::remove_file(&file).unwrap();
        }
        for args in [&["status"][..], &["update"], &["collection", "remove", "n"], &["search", "hello"]] {
            let out = env.qmd(args);
            assert_reports_damage(&env, &out);
            assert!(!out.stderr.contains("/.qmd/"), "no engine-internal paths: {}", out.stderr);
        }
        let out = env.ok(&["update", "--rebuild"]);
        assert!(out.stdout.contains("Indexed: 1 new"), "{damage}: {}", out.stdout);
        assert!(env.ok(&["status"]).stdout.contains("Total:    1 files indexed"));
        assert!(env.ok(&["search", "hello", "--files"]).stdout.contains("qmd://n/a.md"));
        let (rebuilt, _) = segment(&env);
        assert_eq!(fs::read(&rebuilt).unwrap().len(), whole.len(), "{damage}: the rebuilt segment is whole");
    }
}

#[test]
fn control_characters_in_names_are_escaped() {
    let env = Env::new();
    env.write("n/e\x1b[31mvil\r.md", "# Ti\x1b]0;owned\x07tle\n\nhello world\n");
    env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    let cli = env.ok(&["search", "hello"]).stdout;
    let id = common::first_docid(&cli).expect("docid");
    let outputs = [
        env.ok(&["ls", "n"]).stdout,
        cli.clone(),
        env.ok(&["search", "hello", "--files"]).stdout,
        env.ok(&["get", &format!("#{id}")]).stdout,
    ];
    for out in &outputs {
        let header = out.lines().next().unwrap_or_default();
        assert!(!header.contains(['\x1b', '\r', '\x07']), "a raw control character was printed: {header:?}");
        assert!(header.contains("e\\x1b[31mvil\\r.md"), "{header:?}");
    }
    assert!(cli.contains("Title: Ti\\x1b]0;owned\\x07tle"), "{cli}");
}

#[test]
fn every_output_format_shows_names_titles_contexts_and_snippets_escaped() {
    let env = Env::new();
    env.write("n/a\x1b[2Kb.md", "# ev\x1b[31mil title\n\nwalrus body \x1b]0;pwn\x07 text\r\n");
    env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    env.ok(&["context", "add", "qmd://n/", "ctx \x1b[31m red\u{202e}"]);
    for format in ["", "--csv", "--md", "--xml", "--files", "--json"] {
        let args: Vec<&str> = ["search", "walrus", format].into_iter().filter(|a| !a.is_empty()).collect();
        let out = env.ok(&args).stdout;
        assert!(!out.contains(['\x1b', '\x07', '\u{202e}']), "search {format}: {out:?}");
    }
    // `get` and `multi-get` print the file's own text as it is (as `cat`
    // would); what they print around it is escaped.
    for args in [
        &["get", "n/a\x1b[2Kb.md"][..],
        &["multi-get", "n/*.md"],
        &["multi-get", "n/*.md", "--md"],
        &["multi-get", "n/*.md", "--csv"],
        &["multi-get", "n/*.md", "--files"],
    ] {
        let out = env.ok(args).stdout;
        let around: String = out.lines().filter(|l| !l.contains("walrus") && !l.contains("ev\x1b[31m")).collect();
        assert!(!around.contains(['\x1b', '\x07', '\u{202e}']), "{args:?}: {out:?}");
        assert!(out.contains("a\\x1b[2Kb.md"), "{args:?}: the name escaped: {out:?}");
    }
    let ctx = env.ok(&["multi-get", "n/*.md"]).stdout;
    assert!(ctx.contains("ctx \\x1b[31m red\\u{202e}"), "{ctx}");
}

#[test]
fn a_backslash_is_part_of_a_file_name() {
    let env = Env::new();
    env.write("n/a\\b.md", "# Back\n\nslash in the name\n");
    let out = env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    assert!(out.stdout.contains("Indexed: 1 new"), "was silently not indexed: {}{}", out.stdout, out.stderr);
    assert!(env.ok(&["get", "n/a\\b.md"]).stdout.contains("slash in the name"));
}

#[test]
fn comments_in_index_yml_survive_in_a_backup() {
    let env = indexed_notes();
    let config = env.config_home().join("qmd/index.yml");
    let commented = format!("# my notes, managed by hand\n{}", fs::read_to_string(&config).unwrap());
    fs::write(&config, &commented).unwrap();
    env.ok(&["context", "add", "/", "Personal notes"]);
    assert_eq!(fs::read_to_string(config.with_extension("yml.bak")).unwrap(), commented);
    assert!(fs::read_to_string(&config).unwrap().contains("Personal notes"));
    // A file qmd wrote itself round-trips: no backup churn.
    fs::remove_file(config.with_extension("yml.bak")).unwrap();
    env.ok(&["context", "add", "qmd://n/", "The n collection"]);
    assert!(!config.with_extension("yml.bak").exists());
}

#[test]
fn a_bad_models_block_is_an_error_not_the_defaults() {
    let env = indexed_notes();
    let config = env.config_home().join("qmd/index.yml");
    let good = fs::read_to_string(&config).unwrap();
    fs::write(&config, format!("models: all-MiniLM-L6-v2\n{good}")).unwrap();
    for args in [&["status"][..], &["pull"], &["search", "hello"]] {
        let out = env.qmd(args).failure();
        assert!(out.stderr.contains("`models` must be a mapping"), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn status_probes_no_gpu_and_drivers_stay_quiet() {
    let env = indexed_notes();
    let mut status = env.command(env.root(), &["status"], &[]);
    let out = Output::from(status.env_remove("XDG_RUNTIME_DIR").output().unwrap()).success();
    assert!(!out.stderr.contains("XDG_RUNTIME_DIR"), "driver noise: {}", out.stderr);
    assert!(out.stdout.contains("Device:    auto: embed and the MCP server on a hardware GPU"), "{}", out.stdout);
}

#[test]
fn index_files_are_created_exclusively() {
    // A leftover of a crashed update under the next segment's name is
    // replaced, never appended to or trusted.
    let env = indexed_notes();
    let next = manifest(&env)["next_segment"].as_u64().unwrap();
    let leftover = index_dir(&env).join(format!("seg-{next:06}.qseg"));
    fs::write(&leftover, b"half a segment").unwrap();
    env.write("n/b.md", "# B\n\nanother note\n");
    env.ok(&["update"]);
    assert!(env.ok(&["search", "another note", "--files"]).stdout.contains("qmd://n/b.md"));
    assert_ne!(fs::read(&leftover).unwrap_or_default(), b"half a segment");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let env = indexed_notes();
    let mut child =
        env.command(env.root(), &["status"], &[]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take()); // `qmd status | head -0`
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

/// Each section of the segment file, as the manifest places it:
/// `(name, offset, length)`.
fn segment_sections(env: &Env) -> (PathBuf, Vec<(String, usize, usize)>) {
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(index_dir(env).join("manifest.json")).unwrap()).unwrap();
    let segment = &manifest["segments"][0];
    let file = index_dir(env).join(segment["file"].as_str().unwrap());
    let sections = segment["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap() as usize;
            (s["name"].as_str().unwrap().to_string(), n("offset"), n("len"))
        })
        .collect();
    (file, sections)
}

#[test]
fn doctor_finds_a_flipped_byte_in_every_section_that_search_and_get_read() {
    let env = Env::new();
    for i in 0..6 {
        // Half the notes carry metadata, so its section has bytes to damage.
        let frontmatter = if i % 2 == 0 { format!("---\nqmd:\n  metadata:\n    n: {i}\n---\n") } else { String::new() };
        env.write(&format!("n/{i}.md"), &format!("{frontmatter}# Note {i}\n\nhello walrus number {i} in the notes\n"));
    }
    env.ok(&["collection", "add", &env.arg("n"), "--name", "n"]);
    let (file, sections) = segment_sections(&env);
    let pristine = fs::read(&file).unwrap();
    let names: Vec<&str> = sections.iter().map(|s| s.0.as_str()).collect();
    for wanted in ["postings", "positions", "doclen", "bodies", "terms", "docs", "metaoffs", "metadata"] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    assert!(env.ok(&["doctor"]).stdout.contains("every checksum verified"));
    for (name, offset, len) in sections.iter().filter(|s| s.2 > 0) {
        for at in [*offset, offset + len / 2, offset + len - 1] {
            let mut bytes = pristine.clone();
            bytes[at] ^= 0x01;
            fs::write(&file, &bytes).unwrap();
            let out = env.ok(&["doctor"]).stdout;
            assert!(
                out.contains("⚠ index: ") && out.contains("Next: `qmd update --rebuild`"),
                "byte {at} of section {name}:\n{out}"
            );
            assert!(!out.contains("every checksum verified"), "byte {at} of section {name}:\n{out}");
        }
    }
    fs::write(&file, &pristine).unwrap();
    assert!(env.ok(&["doctor"]).stdout.contains("every checksum verified"));
}
