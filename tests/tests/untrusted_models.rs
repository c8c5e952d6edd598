//! A model file is untrusted input (issue 42, robustness classes 1, 3, 5):
//! damaged copies of a real model — a metadata count no file holds, NaN in
//! a norm weight and in a quantized block's scale, a vocabulary that
//! cannot tokenize — through `embed`, `embed -f`, `vsearch`, `query` and
//! `doctor`. Each is refused with its file and problem named, nothing in
//! the index changes, and no NaN is ever stored.

use crate::common;

use std::fs;
use std::path::Path;

use common::{Env, Output};
use qmd_core::gguf::{GgmlType, Value};
use qmd_tests::gguf::fixtures;
use qmd_tests::gguf_file::GgufParts;
use qmd_tests::models::test_model_dir;

/// Neither a panic, an abort nor a backtrace reached the user.
#[track_caller]
fn assert_no_crash(out: &Output) {
    assert!(out.code >= 0, "killed by a signal:\n{}", out.stderr);
    for noise in ["panicked", "memory allocation", "capacity overflow", "backtrace", "RUST_BACKTRACE"] {
        assert!(!out.stderr.contains(noise), "{noise:?} reached the user:\n{}", out.stderr);
    }
}

fn notes() -> Env {
    let env = Env::new();
    env.write("notes/raft.md", "# Raft\n\nA leader is elected and replicates the log to followers.\n");
    env.write("notes/tides.md", "# Tides\n\nThe moon's gravity pulls the oceans twice a day.\n");
    env.ok(&["collection", "add", &env.arg("notes"), "--name", "notes"]);
    env
}

/// The real MiniLM GGUF with `damage` applied, written over `path`.
fn damaged(path: &Path, damage: impl FnOnce(&mut GgufParts)) {
    let good = fs::read(fixtures().file("minilm-q8_0.gguf")).unwrap();
    let mut parts = GgufParts::read("minilm", &good).unwrap();
    damage(&mut parts);
    fs::write(path, parts.write()).unwrap();
}

#[test]
fn damaged_gguf_models_are_refused_and_the_index_keeps_its_vectors() {
    let env = notes();
    let model = env.path("model.gguf");
    fs::copy(fixtures().file("minilm-q8_0.gguf"), &model).unwrap();
    let model_arg = model.to_string_lossy().into_owned();
    let with_model = [("QMD_EMBED_MODEL", model_arg.as_str())];
    let run = |args: &[&str]| env.qmd_with(env.root(), args, &with_model);
    run(&["embed"]).success();
    assert_eq!(env.vectors(&with_model), "2 embedded", "the good model's vectors");

    // A count no file holds: refused before it sizes anything.
    damaged(&model, |p| p.set("bert.block_count", Value::U64(1_000_000_000)));
    for args in [&["embed", "-f"][..], &["embed"], &["vsearch", "leader"], &["query", "--no-expand", "who leads"]] {
        let out = run(args);
        assert_no_crash(&out);
        assert!(
            out.stderr.contains("model.gguf") && out.stderr.contains("1000000000 blocks"),
            "{args:?}: {}",
            out.stderr
        );
        if args[0] != "query" {
            assert_ne!(out.code, 0, "{args:?} with a damaged model:\n{}", out.stderr);
        }
    }
    assert_eq!(env.vectors(&with_model), "2 embedded", "embed -f with a damaged model changes nothing");
    let doctor = run(&["doctor"]);
    assert_no_crash(&doctor);
    assert!(doctor.stdout.contains("1000000000 blocks"), "{}", doctor.stdout);

    // NaN in a norm weight: refused at load, naming the tensor.
    damaged(&model, |p| {
        let t = p.tensor_mut("blk.0.attn_output_norm.weight").unwrap();
        t.data[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
    });
    let out = run(&["embed", "-f"]).failure();
    assert_no_crash(&out);
    assert!(out.stderr.contains("blk.0.attn_output_norm.weight") && out.stderr.contains("NaN"), "{}", out.stderr);

    // NaN in the Q8_0 block scales of the token embeddings: loading does
    // not scan a matrix; the vectors show it, and none is stored; `-f`
    // cleared nothing.
    let scaled = "token_embd.weight";
    damaged(&model, |p| {
        let t = p.tensor_mut(scaled).unwrap();
        assert_eq!(t.kind, GgmlType::Q8_0);
        for block in t.data.chunks_exact_mut(34) {
            block[0..2].copy_from_slice(&[0x00, 0x7e]); // f16 NaN
        }
    });
    let out = run(&["embed", "-f"]).failure();
    assert_no_crash(&out);
    assert!(out.stderr.contains("NaN") && out.stderr.contains("model.gguf"), "names the model: {}", out.stderr);
    assert_eq!(env.vectors(&with_model), "2 embedded", "embed -f with a failing model changes nothing");
    let doctor = run(&["doctor"]).success();
    assert!(doctor.stdout.contains("⚠ embedding model weights"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains(scaled), "{scaled}: {}", doctor.stdout);

    // The good model again: everything as before.
    fs::copy(fixtures().file("minilm-q8_0.gguf"), &model).unwrap();
    let hits = run(&["vsearch", "--json", "who leads the cluster"]).success();
    assert!(hits.stdout.contains("qmd://notes/raft.md"), "{}", hits.stdout);
    let doctor = run(&["doctor"]).success();
    assert!(doctor.stdout.contains("✓ embedding model weights"), "{}", doctor.stdout);
}

/// A vocabulary that cannot tokenize every text is found when the model
/// loads, before `embed -f` touches the index, and the error names it.
#[test]
fn a_vocabulary_without_unk_fails_before_embed_f_clears_anything() {
    let env = notes();
    let model = env.path("minilm");
    common::copy_dir(&test_model_dir(), &model);
    let model_arg = model.to_string_lossy().into_owned();
    let with_model = [("QMD_EMBED_MODEL", model_arg.as_str())];
    env.qmd_with(env.root(), &["embed"], &with_model).success();
    assert_eq!(env.vectors(&with_model), "2 embedded");

    let path = model.join("tokenizer.json");
    let mut tokenizer: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    tokenizer["model"]["vocab"].as_object_mut().unwrap().remove("[UNK]");
    fs::write(&path, serde_json::to_vec(&tokenizer).unwrap()).unwrap();
    let out = env.qmd_with(env.root(), &["embed", "-f"], &with_model).failure();
    assert_no_crash(&out);
    assert!(out.stderr.contains("UNK") && out.stderr.contains(&model_arg), "names the model: {}", out.stderr);
    assert_eq!(env.vectors(&with_model), "2 embedded", "nothing cleared");
}
