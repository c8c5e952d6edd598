//! The parts of an edge build that come from the index: its files as of
//! one generation (copied under the index's write lock, so no `update`
//! removes a segment mid-copy, and described by a status read under the
//! same lock, so what the build reports and checks is what it copied), its
//! config with the collections' folders left out (an edge service never
//! reads them, and a deployed bundle should not name this machine's
//! paths), and the models its vectors and reranking need.

use std::path::Path;

use anyhow::{Context, Result, bail};
use qmd_core::collection::Config;
use qmd_core::index::Manifest;
use qmd_core::serve::deployment::{DeployedEmbedder, DeployedModel, GGUF_FILE, MODELS_MANIFEST, ModelsManifest};
use qmd_core::{Directory, RamDirectory};

use crate::cli::args::EdgeBuildArgs;
use crate::component::bindings::IndexStatus;
use crate::files::OwnedDir;
use crate::models::{ModelSource, OPTIONAL_FILES, REQUIRED_FILES};
use crate::session::{Session, engine_result};

/// What a build holds, for its summary line.
pub struct Report {
    pub documents: u32,
    pub collections: usize,
    pub vectors: u64,
    pub models: Vec<String>,
}

pub fn write(session: &Session, out: &OwnedDir, args: &EdgeBuildArgs) -> Result<Report> {
    // One generation, described and copied: no writer commits while the
    // lock is held, so the status (counts, the model that made the
    // vectors) read under it is that of the files copied under it.
    let status = {
        let _lock = crate::lock::WriteLock::acquire(&session.index_dir)?;
        // A read call takes no lock: holding the write lock across it
        // cannot deadlock.
        let status = session.read(|store, engine| engine_result(engine.call_status(store)))?;
        check(session, &status, args)?;
        copy_index(&session.index_dir, out)?;
        write_config(session, out)?;
        status
    };
    let mut manifest = ModelsManifest::default();
    if wants_vectors(&status, args) {
        let embed = &session.models.embed;
        copy_model(embed, out, "embed")?;
        // Recorded so the service never loads the model just to describe it.
        let info = crate::models::Models::new(&session.models).embedder().map_err(|e| anyhow::anyhow!(e))?;
        manifest.embed = Some(DeployedEmbedder { model: deployed(embed, "embed"), info });
    }
    if args.with_reranker {
        let rerank = &session.models.rerank;
        copy_model(rerank, out, "rerank")?;
        manifest.rerank = Some(deployed(rerank, "rerank"));
    }
    out.write(&format!("models/{MODELS_MANIFEST}"), serde_json::to_string_pretty(&manifest)?.as_bytes())?;
    let models = manifest.embed.iter().map(|e| e.model.id.clone()).chain(manifest.rerank.iter().map(|r| r.id.clone()));
    Ok(Report {
        documents: status.total_documents,
        collections: status.collections.len(),
        vectors: if wants_vectors(&status, args) { status.vectors } else { 0 },
        models: models.collect(),
    })
}

fn wants_vectors(status: &IndexStatus, args: &EdgeBuildArgs) -> bool {
    status.vectors > 0 && !args.keyword_only
}

/// What the generation about to be copied must be: documents, and
/// vectors made by the model the build ships.
fn check(session: &Session, status: &IndexStatus, args: &EdgeBuildArgs) -> Result<()> {
    if status.total_documents == 0 {
        bail!("the index has no documents: add a collection ('qmd collection add') before building a service");
    }
    let embed = &session.models.embed;
    if wants_vectors(status, args)
        && let Some(made_with) = &status.embed_model
        && *made_with != embed.id
    {
        bail!(
            "the index's vectors were made with {made_with}, but the embedding model is now {}: run 'qmd embed -f', or build with --keyword-only",
            embed.id
        );
    }
    Ok(())
}

/// The manifest and every file it names, as one generation (the caller
/// holds the index's write lock).
fn copy_index(index_dir: &Path, out: &OwnedDir) -> Result<()> {
    let manifest_path = index_dir.join("manifest.json");
    let bytes = crate::files::regular::read(&manifest_path, u64::MAX)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    // Checked as the engine checks it before anything is copied.
    let checked = RamDirectory::new();
    checked.atomic_write("manifest.json", &bytes).map_err(|e| anyhow::anyhow!(e.message))?;
    let manifest = Manifest::load(&checked)
        .map_err(|e| anyhow::anyhow!("{} ({}): run 'qmd update --rebuild'", e.message, manifest_path.display()))?;
    let files: Vec<String> = manifest.files().into_iter().map(|file| format!("index/{file}")).collect();
    out.claim(files.iter().map(String::as_str))?;
    for file in manifest.files() {
        out.copy_in(&format!("index/{file}"), &index_dir.join(&file))?;
    }
    out.write("index/manifest.json", &bytes)
}

/// Where the service's config says each collection is: a path of the
/// component's own, never this machine's.
fn service_path(collection: &str) -> String {
    format!("/.qmd/collections/{collection}")
}

fn write_config(session: &Session, out: &OwnedDir) -> Result<()> {
    let config = session.config.load()?;
    let mut service = Config::default();
    service.global_context = config.global_context.clone();
    service.collections = config
        .collections
        .iter()
        .map(|c| {
            let mut kept = c.clone();
            kept.path = service_path(&c.name);
            kept.update_command = None;
            kept
        })
        .collect();
    let yaml = service.to_yaml().map_err(|e| anyhow::anyhow!(e.message))?;
    out.write("config/index.yml", yaml.as_bytes())
}

/// The model's files into `models/<role>/`: a GGUF model's one file as
/// `model.gguf`, a repository's files by name.
fn copy_model(source: &ModelSource, out: &OwnedDir, role: &str) -> Result<()> {
    if !source.is_present() {
        bail!("{}", source.missing_message());
    }
    if source.endpoint.is_some() {
        bail!(
            "the edge bundle carries its {} model, and {} is on a server: set a local or Hugging Face model to build it",
            source.role.label(),
            source.id
        );
    }
    if let Some(gguf) = &source.gguf {
        return out.copy_in(&format!("models/{role}/{GGUF_FILE}"), &gguf.path);
    }
    for name in REQUIRED_FILES.iter().chain(OPTIONAL_FILES.iter()) {
        let from = source.dir.join(name);
        if from.is_file() {
            out.copy_in(&format!("models/{role}/{name}"), &from)?;
        }
    }
    Ok(())
}

fn deployed(source: &ModelSource, dir: &str) -> DeployedModel {
    DeployedModel { id: source.id.clone(), dir: dir.to_string() }
}
