//! `qmd doctor`: qmd's checks in this project's terms, one `✓`/`⚠` line
//! each, then the recommended next steps. It diagnoses and exits 0, as
//! qmd's does; a broken piece is a `⚠` line, not an error.

use std::process::ExitCode;

use anyhow::Result;
use qmd_core::display::{escape_controls, escape_controls_in_text};

use crate::session::{Session, engine_result};

/// Cosine distance a re-embedded sample may differ by (qmd's bound).
const SAMPLE_TOLERANCE: f32 = 1e-4;
/// Contents re-embedded by the sample (qmd's count).
const SAMPLE_SIZE: u32 = 3;

/// The checks' lines and the steps they recommend.
struct Report {
    steps: Vec<String>,
}

impl Report {
    fn check(&mut self, label: &str, ok: bool, details: &str) {
        // Details quote errors, paths and model ids: shown escaped.
        println!("{} {label}: {}", if ok { "✓" } else { "⚠" }, escape_controls_in_text(details));
    }

    fn step(&mut self, step: &str) {
        if !self.steps.iter().any(|s| s == step) {
            self.steps.push(step.to_string());
        }
    }
}

/// Environment variables that change what qmd does, with the consequence.
const OVERRIDES: &[(&str, &str)] = &[
    ("INDEX_PATH", "the index folder is this path instead of the cache's"),
    ("QMD_CONFIG_DIR", "index.yml and trusted.json are read from this folder"),
    ("QMD_EMBED_MODEL", "the embedding model when index.yml names none"),
    ("QMD_RERANK_MODEL", "the reranking model when index.yml names none"),
    ("QMD_GENERATE_MODEL", "the query-expansion model when index.yml names none"),
    ("QMD_EXPAND_CONTEXT_SIZE", "the query expansion's context (prompt and answer) in tokens"),
    ("QMD_FORCE_CPU", "models run on the CPU"),
    ("QMD_DEVICE", "where models run (auto, cpu, gpu)"),
    ("QMD_TRUST_LOCAL_CONFIG", "project .qmd configs are trusted without asking"),
    ("QMD_TRUST_UPDATE_HOOKS", "project .qmd configs are trusted without asking"),
    ("QMD_DOCTOR_DEVICE_PROBE", "0/off skips the device probe of qmd doctor"),
];

pub fn run(session: &Session) -> Result<ExitCode> {
    let mut report = Report { steps: Vec::new() };
    println!("QMD Doctor\n");
    println!("Index: {}", escape_controls(&session.index_dir.to_string_lossy()));
    println!("Config: {}", escape_controls(&session.config.path().to_string_lossy()));

    // The index, every byte against its checksum.
    match session.read(|store, engine| engine_result(engine.call_verify(store))) {
        Ok(c) => report.check(
            "index",
            true,
            &format!(
                "{} documents in {} segments, {} vector rows (generation {}); every checksum verified",
                c.documents, c.segments, c.vector_rows, c.generation
            ),
        ),
        Err(e) => {
            report.check("index", false, &format!("{e:#}. Next: `qmd update --rebuild`"));
            report.step("Run `qmd update --rebuild` to rebuild the index from the collection folders.");
        }
    }

    // The config.
    let status = session.read(|store, engine| engine_result(engine.call_status(store)));
    match &status {
        Ok(s) if s.collections.is_empty() => {
            report.check("index config", false, "no collections configured. Next: `qmd collection add .`");
            report.step("Run `qmd collection add <folder>` to index a folder.");
        }
        Ok(s) => {
            let n = s.collections.len();
            report.check(
                "index config",
                true,
                &format!("{n} {} configured", if n == 1 { "collection" } else { "collections" }),
            );
        }
        Err(e) => report.check(
            "index config",
            false,
            &format!("invalid {}: {e:#}. Next: fix the YAML and rerun `qmd doctor`", session.config.path().display()),
        ),
    }

    let set: Vec<(&str, &str, String)> =
        OVERRIDES.iter().filter_map(|&(var, why)| Some((var, why, std::env::var(var).ok()?))).collect();
    if set.is_empty() {
        report.check("environment overrides", true, "none");
    } else {
        report.check("environment overrides", false, &format!("{} set", set.len()));
        for (var, why, value) in set {
            println!("  - {var}={}: {why}", escape_controls(&value));
        }
    }

    // The models: chosen, present, where they run.
    let models = &session.models;
    let defaults = models.embed.id == crate::models::DEFAULT_EMBED_MODEL
        && models.rerank.id == crate::models::DEFAULT_RERANK_MODEL;
    let chosen = format!("embedding {}, reranking {}", models.embed.id, models.rerank.id);
    report.check("model defaults", defaults, &if defaults { "using qmd-wasm defaults".to_string() } else { chosen });
    let missing: Vec<String> = [("embedding", &models.embed), ("reranking", &models.rerank)]
        .into_iter()
        .filter(|(_, m)| !m.is_present())
        .map(|(role, m)| format!("{role}: {}", m.id))
        .collect();
    if missing.is_empty() {
        report.check("model cache", true, "embedding and reranking models present");
    } else {
        report.check(
            "model cache",
            false,
            &format!("missing {}/2: {}. Next: run `qmd pull`", missing.len(), missing.join("; ")),
        );
        report.step("Run `qmd pull` to download the missing models before `qmd embed` or `qmd query`.");
    }
    let generate = &models.generate;
    if generate.is_present() {
        report.check("expansion model", true, &format!("{} present", generate.id));
    } else {
        report.check(
            "expansion model",
            false,
            &format!(
                "{} is not downloaded: plain queries expand with qmd's fallback. Next: run `qmd pull`",
                generate.id
            ),
        );
        report
            .step("Run `qmd pull` to download the query-expansion model (or set QMD_GENERATE_MODEL to a local .gguf).");
    }
    weight_checks(session, &mut report);
    report.check("device mode", true, &crate::models::device_summary());
    let probe = std::env::var("QMD_DOCTOR_DEVICE_PROBE").unwrap_or_default();
    if matches!(probe.trim().to_lowercase().as_str(), "0" | "off" | "false" | "no") {
        report.check(
            "device probe",
            false,
            "skipped by QMD_DOCTOR_DEVICE_PROBE=0. Next: unset it and rerun `qmd doctor`",
        );
    } else {
        match crate::models::device() {
            Ok(device) => report.check("device probe", true, &device.description),
            Err(e) => {
                report.check("device probe", false, &format!("{e}. Next: `qmd --no-gpu …` runs on the CPU"));
                report.step("Run with `--no-gpu` (or QMD_DEVICE=cpu) until the GPU driver works.");
            }
        }
    }

    // Vectors: fresh, from this model and pipeline, reproducible.
    if let Ok(s) = &status {
        let pending = s.needs_embedding;
        let details = if pending == 0 {
            "all active documents have vectors".to_string()
        } else {
            format!("{pending} active documents need embeddings. Next: `qmd embed`")
        };
        report.check("embedding freshness", pending == 0, &details);
        if pending > 0 {
            report.step(&format!("Run `qmd embed` to generate {pending} missing document embeddings."));
        }
    }
    if missing.iter().any(|m| m.starts_with("embedding")) {
        report.check("embedding vector sample", false, "the embedding model is not downloaded. Next: run `qmd pull`");
    } else {
        vector_checks(session, &mut report);
    }

    if !report.steps.is_empty() {
        println!("\nRecommended next step{}", if report.steps.len() == 1 { "" } else { "s" });
        for step in &report.steps {
            println!("  - {}", escape_controls_in_text(step));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every value of each present GGUF model's tensors is finite: a NaN or
/// infinite weight or block scale turns its outputs into NaN, which loading
/// (it checks the small vectors only) would not see.
fn weight_checks(session: &Session, report: &mut Report) {
    let models = &session.models;
    for source in [&models.embed, &models.rerank, &models.generate] {
        let Some(gguf) = source.gguf.as_ref().filter(|g| g.path.is_file()) else { continue };
        let label = format!("{} model weights", source.role.label());
        // Mapped as the model slot maps it (regular files only: a FIFO never blocks).
        let checked = crate::models::slot::map_file(&gguf.path).and_then(|map| {
            let name = gguf.path.display().to_string();
            let file = qmd_core::gguf::GgufFile::parse(&name, (*map).as_ref()).map_err(|e| e.message)?;
            Ok(file.non_finite_tensors())
        });
        match checked {
            Ok(bad) if bad.is_empty() => report.check(&label, true, &format!("{}: every value finite", source.id)),
            Ok(bad) => {
                let named: Vec<String> = bad.iter().take(5).map(|(t, v)| format!("{t} ({v})")).collect();
                report.check(
                    &label,
                    false,
                    &format!(
                        "{}: {} tensors hold NaN or infinite values: {}. Next: `qmd pull --refresh`",
                        source.id,
                        bad.len(),
                        named.join(", ")
                    ),
                );
                report.step("Run `qmd pull --refresh` (or replace the model file): its weights are damaged.");
            }
            Err(e) => report.check(&label, false, &format!("{}: {e}", source.id)),
        }
    }
}

fn vector_checks(session: &Session, report: &mut Report) {
    let sample = session
        .read(|store, engine| engine_result(engine.qmd_engine_vectors().call_sample_vectors(store, SAMPLE_SIZE)));
    let sample = match sample {
        Ok(sample) => sample,
        Err(e) => {
            report.check("embedding vector sample", false, &format!("{e:#}"));
            report.step("Fix the embedding model (see above), then rerun `qmd doctor`.");
            return;
        }
    };
    let current = &sample.fingerprint;
    match (&sample.stored_fingerprint, &sample.stored_model) {
        (Some(stored), Some(model)) if stored == current && *model == session.models.embed.id => {
            report.check("embedding fingerprints", true, &format!("vectors on the current fingerprint ({current})"));
        }
        (Some(stored), Some(model)) => {
            report.check(
                "embedding fingerprints",
                false,
                &format!(
                    "vectors are from {model} ({stored}); current {} ({current}). Next: `qmd embed -f`",
                    session.models.embed.id
                ),
            );
            report.step("Run `qmd embed -f` to re-embed with the current model and pipeline.");
            return;
        }
        _ => {
            report.check("embedding fingerprints", true, &format!("no vectors yet; current fingerprint {current}"));
            report.check("embedding vector sample", true, "no vectors to sample");
            return;
        }
    }
    if sample.checked.is_empty() {
        report.check("embedding vector sample", true, "no single-chunk documents to re-embed");
        return;
    }
    // NaN (a damaged model or vector) is the worst distance, not ignored.
    let worst = sample
        .checked
        .iter()
        .map(|c| c.distance)
        .fold(0f32, |m, d| if d.is_nan() || m.is_nan() { f32::NAN } else { m.max(d) });
    let within = |d: f32| d <= SAMPLE_TOLERANCE;
    let bad: Vec<&str> = sample.checked.iter().filter(|c| !within(c.distance)).map(|c| c.file.as_str()).collect();
    if bad.is_empty() {
        report.check(
            "embedding vector sample",
            true,
            &format!(
                "{} documents re-embedded, max cosine distance {worst:.1e} (≤ {SAMPLE_TOLERANCE:.0e})",
                sample.checked.len()
            ),
        );
    } else {
        report.check(
            "embedding vector sample",
            false,
            &format!(
                "{} of {} re-embedded documents differ (max cosine distance {worst:.1e}): {}. Next: `qmd embed -f`",
                bad.len(),
                sample.checked.len(),
                bad.join(", ")
            ),
        );
        report.step("Run `qmd embed -f` to rebuild vectors that no longer reproduce under the current model.");
    }
}
