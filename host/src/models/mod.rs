//! The models behind the component's `inference` import, run natively with
//! burn. Which models: `QMD_EMBED_MODEL` / `QMD_RERANK_MODEL` /
//! `QMD_GENERATE_MODEL` (a Hugging Face repo id or GGUF URI, or a local
//! directory or `.gguf` file), else the defaults. Repos are read from the
//! model cache that `qmd pull` fills. Models load on first use and stay
//! loaded for the process (the MCP server keeps them warm).

pub mod defaults;
mod expansion_cache;
/// Model ids on the hub: one parser, in the engine so every build and the fuzzer share it.
pub use qmd_core::model_id as hub;
pub mod pull;
pub mod slot;

use std::path::PathBuf;
use std::sync::OnceLock;

use std::sync::atomic::{AtomicBool, Ordering};

use qmd_core::TypedSearch;
use qmd_core::generate::QueryExpander;
use qmd_core::inference::{EmbedderInfo, Embedding};
use qmd_core::model::{DeviceChoice, ModelDevice, TextEmbedder, TextReranker};
use qmd_core::query::expansion::parse_expansion;

use crate::openai::client::{Endpoint, RemoteEmbedder, RemoteGenerator, RemoteReranker};
use crate::paths;
use expansion_cache::ExpansionCache;
use slot::Slot;

pub use defaults::{DEFAULT_EMBED_MODEL, DEFAULT_GENERATE_MODEL, DEFAULT_RERANK_MODEL};

/// The files `qmd pull` fetches for a model (the optional ones may be
/// missing from a repo).
pub const REQUIRED_FILES: [&str; 3] = qmd_core::model::ModelFiles::REQUIRED;
pub const OPTIONAL_FILES: [&str; 4] = qmd_core::model::ModelFiles::OPTIONAL;

/// What a model is for, and how that role is named and configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRole {
    Embed,
    Rerank,
    Generate,
}

impl ModelRole {
    /// The word in messages ("embedding model …").
    pub fn label(self) -> &'static str {
        match self {
            ModelRole::Embed => "embedding",
            ModelRole::Rerank => "rerank",
            ModelRole::Generate => "query-expansion",
        }
    }

    /// The key under `models:` in `index.yml`.
    fn config_key(self) -> &'static str {
        match self {
            ModelRole::Embed => "embed",
            ModelRole::Rerank => "rerank",
            ModelRole::Generate => "generate",
        }
    }

    fn env_var(self) -> &'static str {
        match self {
            ModelRole::Embed => "QMD_EMBED_MODEL",
            ModelRole::Rerank => "QMD_RERANK_MODEL",
            ModelRole::Generate => "QMD_GENERATE_MODEL",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            ModelRole::Embed => DEFAULT_EMBED_MODEL,
            ModelRole::Rerank => DEFAULT_RERANK_MODEL,
            ModelRole::Generate => DEFAULT_GENERATE_MODEL,
        }
    }
}

/// A model as configured: the name the user gave and where its files are.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSource {
    pub role: ModelRole,
    pub id: String,
    /// A repository's folder (safetensors models).
    pub dir: PathBuf,
    /// A Hugging Face repo or file (downloadable), not a local path.
    pub remote: bool,
    /// A GGUF model: its one file.
    pub gguf: Option<GgufFile>,
    /// A model on an OpenAI-compatible server (`openai:<model>@<URL>`), or
    /// why such a spec cannot be read.
    pub endpoint: Option<Result<Endpoint, String>>,
    /// Why the spec names no model: neither a local path nor a hub id
    /// ([`hub::HubId::parse`]). Such a source is never loaded or pulled.
    pub invalid: Option<String>,
}

/// Where a GGUF model's file is, and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufFile {
    pub path: PathBuf,
    /// `https://huggingface.co/<owner>/<repo>/resolve/main/<file>` for a
    /// qmd URI (`hf:owner/repo/file.gguf`).
    pub url: Option<String>,
}

/// A model id as messages show it: quoted, controls escaped.
fn shown_id(spec: &str) -> String {
    format!("\"{}\"", qmd_core::display::escape_controls(spec))
}

/// `~/.cache/qmd/models`.
pub fn models_dir() -> PathBuf {
    paths::cache_dir().join("models")
}

impl ModelSource {
    /// A local directory or `.gguf` file (absolute, `./…`, `~/…`, or
    /// existing), else a model on the hub in one of [`hub::HubId`]'s forms
    /// (a repository, or qmd's URI of a GGUF file in one). An id that is
    /// neither gives a source that is never used nor downloaded: every use
    /// says why ([`Self::missing_message`]).
    pub fn resolve(role: ModelRole, spec: &str) -> ModelSource {
        let spec = spec.trim();
        if spec.starts_with("openai:") {
            let endpoint = Endpoint::parse(spec);
            let id = endpoint.as_ref().map_or_else(|_| spec.to_string(), Endpoint::id);
            return ModelSource { endpoint: Some(endpoint), ..ModelSource::unusable(role, id, None) };
        }
        let is_gguf = spec.to_lowercase().ends_with(".gguf");
        let looks_local =
            spec.starts_with('/') || spec.starts_with("./") || spec.starts_with("~/") || spec.starts_with("../");
        let on_hub = hub::is_hub_form(spec);
        let exists = std::path::Path::new(spec);
        if !on_hub && (looks_local || (!spec.contains('/') && exists.is_dir()) || (is_gguf && exists.is_file())) {
            let path = paths::absolute(spec);
            let gguf = is_gguf.then(|| GgufFile { path: path.clone(), url: None });
            return ModelSource {
                role,
                id: path.to_string_lossy().into_owned(),
                dir: path,
                remote: false,
                gguf,
                endpoint: None,
                invalid: None,
            };
        }
        match hub::HubId::parse(spec) {
            Ok(hub) => match &hub.file {
                Some(file) => ModelSource::hub_gguf(role, spec, &hub, file),
                None => ModelSource {
                    role,
                    id: hub.repo_id(),
                    dir: hub.dir(&models_dir()),
                    remote: true,
                    gguf: None,
                    endpoint: None,
                    invalid: None,
                },
            },
            Err(why) => {
                let invalid = format!(
                    "{} model {}: not a Hugging Face model id ({why}); name a repository (owner/repo), a GGUF \
                     file in one (hf:owner/repo/file.gguf), or a local path (/…, ./… or ~/…)",
                    role.label(),
                    shown_id(spec)
                );
                ModelSource::unusable(role, spec.to_string(), Some(invalid))
            }
        }
    }

    /// A source that loads nothing (a server's, or an id that is refused).
    fn unusable(role: ModelRole, id: String, invalid: Option<String>) -> ModelSource {
        ModelSource { role, id, dir: PathBuf::new(), remote: false, gguf: None, endpoint: None, invalid }
    }

    /// A GGUF file on the hub. qmd (node-llama-cpp) keeps such a file in
    /// the model cache as `hf_<owner>_<file>` or `hf_<owner>_<repo>_<file>`
    /// (`<file>` its last segment): a file qmd already downloaded is used,
    /// not fetched again; new downloads take the longer name.
    fn hub_gguf(role: ModelRole, spec: &str, hub: &hub::HubId, file: &str) -> ModelSource {
        let base = file.rsplit('/').next().unwrap_or(file);
        let (owner, repo) = (&hub.owner, &hub.repo);
        let candidates = [format!("hf_{owner}_{base}"), format!("hf_{owner}_{repo}_{base}")];
        let dir = models_dir();
        let found = candidates.iter().map(|name| dir.join(name)).find(|p| p.is_file());
        let path_on_disk = found.unwrap_or_else(|| dir.join(&candidates[1]));
        let url = Some(hub.url(&pull::endpoint(), file));
        let gguf = Some(GgufFile { path: path_on_disk, url });
        ModelSource { role, id: spec.to_string(), dir, remote: true, gguf, endpoint: None, invalid: None }
    }

    /// qmd's order: `index.yml` `models.<role>`, then `QMD_<ROLE>_MODEL`,
    /// then the default.
    fn configured(role: ModelRole, config: &qmd_core::collection::Config) -> ModelSource {
        let spec = config
            .model(role.config_key())
            .or_else(|| std::env::var(role.env_var()).ok().filter(|v| !v.trim().is_empty()));
        ModelSource::resolve(role, spec.as_deref().unwrap_or(role.default_model()))
    }

    /// Whether this is the role's default model (not one the user named).
    pub fn is_default(&self) -> bool {
        self.endpoint.is_none() && self.id == ModelSource::resolve(self.role, self.role.default_model()).id
    }

    /// Whether the model's files are all there.
    /// A model error as the user reads it: the role, the model, the problem
    /// (a damaged model's NaN output names the file it came from).
    pub fn failed(&self, error: &qmd_core::Error) -> String {
        format!("{} model {}: {}", self.role.label(), self.id, error.message)
    }

    pub fn is_present(&self) -> bool {
        if self.invalid.is_some() {
            return false;
        }
        if let Some(endpoint) = &self.endpoint {
            return endpoint.is_ok();
        }
        match &self.gguf {
            Some(gguf) => gguf.path.is_file(),
            None => REQUIRED_FILES.iter().all(|f| self.dir.join(f).is_file()),
        }
    }

    /// The user-facing reason a model cannot be used.
    pub fn missing_message(&self) -> String {
        let role = self.role.label();
        if let Some(invalid) = &self.invalid {
            return invalid.clone();
        }
        if let Some(Err(why)) = &self.endpoint {
            return format!("{role} model: {why}");
        }
        if let Some(gguf) = &self.gguf {
            return if self.remote {
                format!(
                    "{role} model {} is not downloaded (looked for {}). Run 'qmd pull', or point {} at a local .gguf file.",
                    self.id,
                    gguf.path.display(),
                    self.role.env_var()
                )
            } else {
                format!("{role} model file {} does not exist", gguf.path.display())
            };
        }
        if self.remote {
            format!(
                "{role} model {} is not downloaded (looked in {}). Run 'qmd pull', or point {} at a local model directory.",
                self.id,
                self.dir.display(),
                self.role.env_var()
            )
        } else {
            format!(
                "{role} model directory {} lacks config.json, tokenizer.json or model.safetensors",
                self.dir.display()
            )
        }
    }
}

/// `QMD_KERNELS` (`portable`, `avx2`, `avx512-vnni`): caps the CPU kernels'
/// instruction set below the widest the CPU has, to check or compare the
/// paths narrower CPUs take. Applied once at start-up, before any model
/// loads; a name it does not know is an error.
pub fn apply_kernel_cap() -> Result<(), String> {
    use qmd_core::kernels::dispatch::Level;
    match std::env::var("QMD_KERNELS") {
        Ok(name) if !name.trim().is_empty() => {
            Level::parse(&name).map_err(|e| format!("QMD_KERNELS: {e}"))?.cap();
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether the user asked for the CPU: `--no-gpu`, or `QMD_FORCE_CPU` with
/// any value but qmd's off-words.
pub fn force_cpu() -> bool {
    policy().no_gpu
        || std::env::var("QMD_FORCE_CPU").is_ok_and(|v| {
            !matches!(v.trim().to_lowercase().as_str(), "" | "false" | "off" | "none" | "disable" | "disabled" | "0")
        })
}

/// Where the user wants models to run: `QMD_FORCE_CPU` (`--no-gpu`) wins,
/// else `QMD_DEVICE` (auto, cpu or gpu; auto when unset).
pub fn device_choice() -> Result<DeviceChoice, String> {
    if force_cpu() {
        return Ok(DeviceChoice::Cpu);
    }
    DeviceChoice::parse(&std::env::var("QMD_DEVICE").unwrap_or_default())
        .map_err(|e| format!("QMD_DEVICE: {}", e.message))
}

/// The device choice in words (without opening a device).
pub fn device_summary() -> String {
    match device_choice() {
        Ok(DeviceChoice::Cpu) if force_cpu() => "CPU (forced by --no-gpu / QMD_FORCE_CPU)".to_string(),
        Ok(DeviceChoice::Cpu) => "CPU (QMD_DEVICE=cpu)".to_string(),
        Ok(DeviceChoice::Gpu) => "GPU, any adapter, for every job (QMD_DEVICE=gpu)".to_string(),
        Ok(DeviceChoice::Auto) => "auto: embed and the MCP server on a hardware GPU when there is one, else \
                                   the CPU; one-off CLI queries (search, vsearch, query) on the CPU"
            .to_string(),
        Err(e) => format!("none ({e})"),
    }
}

/// What this process runs models for, which decides what `auto` means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Workload {
    /// Bulk embedding, or a server that stays warm: worth a GPU's start-up.
    #[default]
    Sustained,
    /// One CLI query (`search`, `vsearch`, `query`): a query embeds in
    /// milliseconds on the CPU, and opening a GPU in a fresh process
    /// (adapter, device, shader compilation) takes most of a second.
    OneOffQuery,
}

/// How this process runs models, declared by the command before any model
/// loads (the first declaration wins; the default is a sustained job).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunPolicy {
    pub workload: Workload,
    /// `--no-gpu`.
    pub no_gpu: bool,
}

static POLICY: OnceLock<RunPolicy> = OnceLock::new();

pub fn set_policy(policy: RunPolicy) {
    let _ = POLICY.set(policy);
}

fn policy() -> RunPolicy {
    *POLICY.get_or_init(RunPolicy::default)
}

/// The device a choice means for a workload: `auto` runs one-off queries
/// on the CPU; an explicit choice holds for every job.
pub fn effective_choice(choice: DeviceChoice, workload: Workload) -> DeviceChoice {
    match (choice, workload) {
        (DeviceChoice::Auto, Workload::OneOffQuery) => DeviceChoice::Cpu,
        (choice, _) => choice,
    }
}

/// The process's model device, chosen once (acquiring a GPU adapter takes
/// a moment, and burn's wgpu runtime is set up once per process).
pub fn device() -> Result<&'static ModelDevice, String> {
    static DEVICE: OnceLock<Result<ModelDevice, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let choice = device_choice()?;
            let effective = effective_choice(choice, policy().workload);
            let mut device = ModelDevice::select(effective).map_err(|e| e.message)?;
            if effective != choice {
                device.description.push_str(", as auto chooses for a one-off query");
            }
            Ok(device)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The models an index uses.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSources {
    pub embed: ModelSource,
    pub rerank: ModelSource,
    /// qmd's query-expansion model.
    pub generate: ModelSource,
}

impl ModelSources {
    /// From the index's config file, the environment and the defaults. A
    /// config that cannot be parsed is an error (a typo in `models:` must
    /// not quietly run the default models); a missing one names none.
    pub fn for_index(config_file: &crate::paths::ConfigFile) -> anyhow::Result<ModelSources> {
        let mut config = config_file.load()?;
        // A project's own config chooses models only once trusted (qmd:
        // the environment's or the defaults until then).
        if !crate::trust::Gate::new(config_file, &config).trusted() {
            config.clear_models();
        }
        Ok(ModelSources {
            embed: ModelSource::configured(ModelRole::Embed, &config),
            rerank: ModelSource::configured(ModelRole::Rerank, &config),
            generate: ModelSource::configured(ModelRole::Generate, &config),
        })
    }
}

/// A model loaded here, or a server's (`openai:<model>@<URL>`).
enum Backend<Local, Remote> {
    Local(Slot<Local>),
    Remote(Remote),
    /// An `openai:` spec that cannot be read: every use says why.
    Unusable(ModelSource),
}

impl<Local: qmd_core::model::Loadable, Remote> Backend<Local, Remote> {
    fn new(source: &ModelSource, remote: impl FnOnce(Endpoint) -> Remote) -> Self {
        if source.invalid.is_some() {
            return Backend::Unusable(source.clone());
        }
        match &source.endpoint {
            None => Backend::Local(Slot::new(source.clone())),
            Some(Ok(endpoint)) => Backend::Remote(remote(endpoint.clone())),
            Some(Err(_)) => Backend::Unusable(source.clone()),
        }
    }
}

/// The process's models, shared by every component instance.
pub struct Models {
    embed: Backend<TextEmbedder, RemoteEmbedder>,
    rerank: Backend<TextReranker, RemoteReranker>,
    generate: Backend<QueryExpander, RemoteGenerator>,
    /// The expansion model's id (the cache's key).
    generate_id: String,
    expansions: ExpansionCache,
    /// Whether the missing expansion model was reported (once a process).
    said_no_generator: AtomicBool,
    /// Whether a configured reranker that is missing was reported.
    said_no_reranker: AtomicBool,
}

impl Models {
    pub fn new(sources: &ModelSources) -> Models {
        Models {
            embed: Backend::new(&sources.embed, RemoteEmbedder::new),
            rerank: Backend::new(&sources.rerank, RemoteReranker::new),
            generate: Backend::new(&sources.generate, RemoteGenerator::new),
            generate_id: sources.generate.id.clone(),
            expansions: ExpansionCache::new(paths::cache_dir().join("expansions")),
            said_no_generator: AtomicBool::new(false),
            said_no_reranker: AtomicBool::new(false),
        }
    }

    pub fn embedder(&self) -> Result<EmbedderInfo, String> {
        match &self.embed {
            Backend::Local(slot) => slot.with(|encoder, source| Ok(encoder.describe(&source.id))),
            Backend::Remote(remote) => remote.describe(),
            Backend::Unusable(source) => Err(source.missing_message()),
        }
    }

    /// Unit vectors and untruncated token counts (0 from a remote server).
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>, String> {
        match &self.embed {
            Backend::Local(slot) => {
                slot.with(|encoder, source| encoder.embed_counted(texts).map_err(|e| source.failed(&e)))
            }
            Backend::Remote(remote) => remote.embed(texts),
            Backend::Unusable(source) => Err(source.missing_message()),
        }
    }

    /// The embedding model's vocabulary (id order) and each token embedded
    /// on its own (zeros for special and unused tokens): what a static
    /// model is distilled from. `progress` gets (done, total).
    pub fn embed_vocabulary(
        &self,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<String>, Vec<Vec<f32>>), String> {
        let Backend::Local(slot) = &self.embed else {
            return Err("a static model is distilled from a local embedding model, not a remote one".into());
        };
        slot.with(|encoder, _| {
            let vocab = encoder.tokenizer().vocabulary();
            let special = |t: &str| t.is_empty() || (t.starts_with('[') && t.ends_with(']'));
            let texts: Vec<(usize, &str)> = vocab
                .iter()
                .enumerate()
                .filter(|(_, t)| !special(t))
                .map(|(i, t)| (i, t.strip_prefix("##").unwrap_or(t)))
                .collect();
            let mut vectors = vec![vec![0f32; encoder.dimension()]; vocab.len()];
            for (done, batch) in texts.chunks(2048).enumerate() {
                progress(done * 2048, texts.len());
                let strs: Vec<&str> = batch.iter().map(|(_, t)| *t).collect();
                let embedded = encoder.embed(&strs).map_err(|e| e.message)?;
                for ((id, _), v) in batch.iter().zip(embedded) {
                    vectors[*id] = v;
                }
            }
            progress(texts.len(), texts.len());
            Ok((vocab.clone(), vectors))
        })
    }

    /// The embedding model's configured id (loaded or not).
    pub fn embed_id(&self) -> String {
        match &self.embed {
            Backend::Local(slot) => slot.source().id.clone(),
            Backend::Remote(remote) => remote.id(),
            Backend::Unusable(source) => source.id.clone(),
        }
    }

    /// The reranker's id, loaded (a server's is asked at the first
    /// rerank), or why there is none: what `/v1/rerank` serves.
    pub fn reranker_ready(&self) -> Result<String, String> {
        match &self.rerank {
            Backend::Local(slot) => slot.with(|_, source| Ok(source.id.clone())),
            Backend::Remote(remote) => Ok(remote.id()),
            Backend::Unusable(source) => Err(source.missing_message()),
        }
    }

    /// The reranker's id when its files are there (not loaded: a query
    /// that does not rerank never loads it; one that does and finds it
    /// damaged goes on as qmd does, "Reranker unavailable", every score
    /// 0.5, and stderr names the file and the problem). A reranker the
    /// user configured that is missing or unusable is named on stderr once;
    /// the default not downloaded is qmd's quiet fallback (scores by
    /// fusion).
    pub fn reranker(&self) -> Option<String> {
        let missing = match &self.rerank {
            Backend::Local(slot) if slot.source().is_present() => return Some(slot.source().id.clone()),
            Backend::Remote(remote) => return Some(remote.id()),
            Backend::Local(slot) if slot.source().is_default() => return None,
            Backend::Local(slot) => slot.source().missing_message(),
            Backend::Unusable(source) => source.missing_message(),
        };
        if !self.said_no_reranker.swap(true, Ordering::Relaxed) {
            let line = format!("Warning: {} — results are ranked without a reranker.", missing.trim_end_matches('.'));
            eprintln!("{}", qmd_core::display::escape_controls(&line));
        }
        None
    }

    pub fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, String> {
        match &self.rerank {
            Backend::Local(slot) => slot.with(|reranker, source| {
                let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
                reranker.score(query, &refs).map_err(|e| source.failed(&e))
            }),
            Backend::Remote(remote) => remote.score(query, documents),
            Backend::Unusable(source) => Err(source.missing_message()),
        }
    }

    /// The expansion model's id when its file is there (not loaded: a
    /// cached expansion needs no model). When it is missing, queries use
    /// qmd's fallback expansion, and stderr says so once.
    pub fn generator(&self) -> Option<String> {
        let missing = match &self.generate {
            Backend::Local(slot) if slot.source().is_present() => return Some(self.generate_id.clone()),
            Backend::Remote(_) => return Some(self.generate_id.clone()),
            Backend::Local(slot) => slot.source().missing_message(),
            Backend::Unusable(source) => source.missing_message(),
        };
        if !self.said_no_generator.swap(true, Ordering::Relaxed) {
            eprintln!(
                "Note: {missing} — plain queries expand with qmd's fallback (the query itself, and \"Information about …\")."
            );
        }
        None
    }

    /// qmd's expansion of `query`: from the cache, else generated, read by
    /// qmd's rules within a query's bounds, and cached when anything is left.
    pub fn expand(&self, query: &str) -> Result<Vec<TypedSearch>, String> {
        let model = &self.generate_id;
        if let Some(cached) = self.expansions.get(query, model) {
            return Ok(cached);
        }
        let output = match &self.generate {
            Backend::Local(slot) => {
                let context = expansion_context()?;
                slot.with(|expander, _| expander.expand_within(query, context).map_err(|e| e.message))?
            }
            Backend::Remote(remote) => remote.expand(query)?,
            Backend::Unusable(source) => return Err(source.missing_message()),
        };
        let searches = expansion_cache::bounded(parse_expansion(&output, query, true));
        if !searches.is_empty() {
            self.expansions.put(query, model, &searches);
        }
        Ok(searches)
    }

    pub fn forget_expansion(&self, query: &str) {
        self.expansions.remove(query, &self.generate_id);
    }
}

/// The expansion's context in tokens: `QMD_EXPAND_CONTEXT_SIZE`, else
/// qmd's 2,048.
fn expansion_context() -> Result<usize, String> {
    match std::env::var("QMD_EXPAND_CONTEXT_SIZE") {
        Ok(value) if !value.trim().is_empty() => parse_context_size("QMD_EXPAND_CONTEXT_SIZE", &value),
        _ => Ok(qmd_core::generate::expander::EXPANSION_CONTEXT),
    }
}

/// A context size from the environment variable `name`: a positive whole
/// number of tokens.
fn parse_context_size(name: &str, value: &str) -> Result<usize, String> {
    match value.trim().parse::<usize>() {
        Ok(tokens) if tokens > 0 => Ok(tokens),
        _ => Err(format!("{name} must be a positive number of tokens, not {value:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn model_ids_from_outside_never_become_paths_outside_the_cache() {
        let models = models_dir();
        for spec in [
            "hf:a/b/../../../../tmp/v",
            "a/b/../../../../tmp/v",
            "https://huggingface.co/a/b/../../../../tmp/v",
            "hf:a/b/../../../../tmp/v.gguf",
            "a/b/%2e%2e/%2e%2e/v.gguf",
            "hf:a\\..\\..\\v",
            "hf:/tmp/v",
            "https://evil.example/a/b",
            "a//b",
            "a/b\0",
        ] {
            for role in [ModelRole::Embed, ModelRole::Rerank, ModelRole::Generate] {
                let source = ModelSource::resolve(role, spec);
                let why = source.invalid.as_deref().unwrap_or_else(|| panic!("{spec:?} accepted: {source:?}"));
                assert!(why.contains("not a Hugging Face model id") && why.contains(role.label()), "{why}");
                assert!(!why.contains('\0'), "controls escaped: {why:?}");
                assert!(!source.remote && source.gguf.is_none() && !source.is_present(), "{source:?}");
                assert_eq!(source.missing_message(), why);
            }
        }
        let repo = ModelSource::resolve(ModelRole::Embed, "https://huggingface.co/acme/mini");
        assert_eq!((repo.id.as_str(), repo.dir.clone(), repo.remote), ("acme/mini", models.join("acme/mini"), true));
        let gguf = ModelSource::resolve(ModelRole::Generate, "hf:acme/m-GGUF/q/m.gguf").gguf.unwrap();
        assert_eq!(gguf.path, models.join("hf_acme_m-GGUF_m.gguf"));
        assert!(gguf.url.unwrap().ends_with("/acme/m-GGUF/resolve/main/q/m.gguf"));
        // The user's own paths stay paths, never hub ids.
        let local = ModelSource::resolve(ModelRole::Embed, "/opt/models/../mini");
        assert!(!local.remote && local.invalid.is_none() && local.dir == Path::new("/opt/models/../mini"));
        let file = tempfile::NamedTempFile::with_suffix(".gguf").unwrap();
        let local = ModelSource::resolve(ModelRole::Embed, &file.path().to_string_lossy());
        assert!(!local.remote && local.gguf.is_some_and(|g| g.url.is_none()));
    }

    #[test]
    fn context_sizes_are_positive_whole_numbers() {
        assert_eq!(parse_context_size("X", " 4096 "), Ok(4096));
        for bad in ["0", "-1", "2k", "1.5", ""] {
            let e = parse_context_size("QMD_EXPAND_CONTEXT_SIZE", bad).unwrap_err();
            assert!(e.starts_with("QMD_EXPAND_CONTEXT_SIZE must be a positive number of tokens"), "{e}");
        }
    }

    #[test]
    fn auto_keeps_one_off_queries_off_the_gpu_and_explicit_choices_hold() {
        assert_eq!(effective_choice(DeviceChoice::Auto, Workload::OneOffQuery), DeviceChoice::Cpu);
        assert_eq!(effective_choice(DeviceChoice::Auto, Workload::Sustained), DeviceChoice::Auto);
        for workload in [Workload::OneOffQuery, Workload::Sustained] {
            assert_eq!(effective_choice(DeviceChoice::Gpu, workload), DeviceChoice::Gpu);
            assert_eq!(effective_choice(DeviceChoice::Cpu, workload), DeviceChoice::Cpu);
        }
    }
}
