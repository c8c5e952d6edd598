//! Command-line arguments, with qmd's names and defaults.

use clap::{Args, Parser, Subcommand};

use super::output::Format;

/// `--watch`'s quiet time before a batch, unless `--debounce-ms` says otherwise.
pub const DEFAULT_DEBOUNCE_MS: u64 = 500;

#[derive(Parser)]
#[command(name = "qmd", version, about = "On-device search for markdown notes, docs and transcripts")]
pub struct Cli {
    /// Use a named index (its own config and index files).
    #[arg(long, global = true)]
    pub index: Option<String>,
    /// Run models on the CPU (as QMD_FORCE_CPU=1).
    #[arg(long, global = true)]
    pub no_gpu: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Manage collections.
    #[command(subcommand)]
    Collection(CollectionCommand),
    /// Manage contexts (descriptions attached to paths).
    #[command(subcommand)]
    Context(ContextCommand),
    /// List collections, or the files under `collection[/prefix]`.
    Ls { target: Option<String> },
    /// Re-index every collection.
    Update {
        /// Accepted for qmd compatibility; has no effect.
        #[arg(long)]
        pull: bool,
        /// Rebuild the index from the collection folders, whatever state it
        /// is in: the recovery from a damaged index (keeps vectors that verify).
        #[arg(long)]
        rebuild: bool,
        /// Keep the index current: after the update, index each batch of
        /// file changes as it happens, until Ctrl-C or SIGTERM.
        #[arg(long)]
        watch: bool,
        /// With --watch: quiet time before a batch of changes is indexed.
        #[arg(long, default_value_t = DEFAULT_DEBOUNCE_MS, requires = "watch", value_name = "MS")]
        debounce_ms: u64,
        /// With --watch: poll every MS milliseconds (default 2000) instead of
        /// waiting for file system events (chosen by itself for network and
        /// FUSE mounts).
        #[arg(long, num_args = 0..=1, default_missing_value = "2000", requires = "watch", value_name = "MS")]
        poll: Option<u64>,
        /// With --watch: embed new content after each batch.
        #[arg(long, requires = "watch")]
        embed: bool,
    },
    /// Keyword (BM25) search.
    Search(SearchArgs),
    /// Vector search (needs `qmd embed`); min score defaults to 0.3.
    #[command(alias = "vector-search")]
    Vsearch(SearchArgs),
    /// Embed document chunks for vector search (resumable).
    Embed(EmbedArgs),
    /// Download the embedding and rerank models from Hugging Face.
    Pull(PullArgs),
    /// Hybrid search: a plain query (expanded) or a query document of
    /// `lex:`/`vec:`/`hyde:`/`intent:` lines, fused with RRF.
    #[command(alias = "deep-search")]
    Query(QueryArgs),
    /// Show one document: path, qmd:// path or #docid, optionally `:from[:count]`.
    Get(GetArgs),
    /// Show several documents: glob, comma list or docids.
    MultiGet(MultiGetArgs),
    /// Index status.
    Status,
    /// MCP server over stdio, or streamable HTTP with --http.
    Mcp(McpArgs),
    /// Serve the browser app on 127.0.0.1 (build it with scripts/build-web.sh).
    Web(WebArgs),
    /// Static-site search: build a search bundle for a folder of pages.
    #[command(subcommand)]
    Site(SiteCommand),
    /// The index as a `wasi:http` service: build a folder to deploy.
    #[command(subcommand)]
    Edge(EdgeCommand),
    /// Show or install the qmd skill for coding agents.
    #[command(subcommand)]
    Skill(SkillCommand),
    /// List and print the bundled skills (default: list).
    Skills {
        #[command(subcommand)]
        action: Option<SkillsCommand>,
        /// Print qmd's JSON (`{success, data}`).
        #[arg(long, global = true)]
        json: bool,
    },
    /// Create a project-local index here (.qmd/index.yml and its index).
    Init,
    /// Check the index, config, models, device and vectors; say what to do.
    Doctor,
    /// Score search quality on a fixture of queries with expected files
    /// (bm25, vector, hybrid, full).
    Bench {
        fixture: String,
        /// qmd's JSON report instead of the table.
        #[arg(long)]
        json: bool,
        /// The collection to search (default: the fixture's).
        #[arg(short = 'c', long = "collection")]
        collection: Option<String>,
    },
    /// Reclaim space: rewrite deleted documents and orphaned vectors away.
    Cleanup {
        /// Only report what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Approve this project's .qmd config (update hooks, paths outside the
    /// project, custom models); `list` the approvals, `revoke` this one.
    Trust {
        #[arg(value_parser = ["list", "revoke"])]
        action: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum SkillsCommand {
    /// Bundled skills and their descriptions.
    List,
    /// Print skills.
    Get {
        names: Vec<String>,
        /// Include the files beside SKILL.md.
        #[arg(long)]
        full: bool,
        /// Every skill.
        #[arg(long)]
        all: bool,
    },
    /// The skills folder, or a skill's.
    Path { name: Option<String> },
}

#[derive(Subcommand)]
pub enum SkillCommand {
    /// Print the qmd skill.
    Show,
    /// Install the qmd skill into ./.agents/skills/qmd.
    Install {
        /// Install into ~/.agents/skills/qmd.
        #[arg(long)]
        global: bool,
        /// Also create the .claude/skills/qmd symlink.
        #[arg(long)]
        yes: bool,
        /// Replace an existing install or symlink.
        #[arg(short, long)]
        force: bool,
    },
}

#[derive(Subcommand)]
pub enum SiteCommand {
    /// Index a folder of built HTML pages (or markdown) into <out>/qmd/:
    /// a bundle of static files and the <qmd-search> element.
    Build(SiteBuildArgs),
}

#[derive(Args)]
pub struct SiteBuildArgs {
    /// The site folder (built HTML) or a folder of markdown files.
    pub input: String,
    /// Where the bundle goes (as <out>/qmd/); often the site folder itself.
    #[arg(long)]
    pub out: String,
    /// Pages are HTML or markdown (default: HTML if any .html file exists).
    #[arg(long, value_enum)]
    pub format: Option<SiteFormat>,
    /// The name in each page's indexed path (default: the folder's name,
    /// as `qmd collection add` names a collection).
    #[arg(long)]
    pub name: Option<String>,
    /// Prefix of every result link, e.g. /docs or https://example.com.
    #[arg(long, default_value = "")]
    pub base_url: String,
    /// Markdown only: what replaces `.md` in links ("" for none).
    #[arg(long, default_value = ".html")]
    pub link_ext: String,
    /// Also build the semantic tier: every page embedded by the embedding
    /// model (cached per page text), and a static table for queries
    /// distilled from the model and fitted to those page vectors.
    #[arg(long)]
    pub semantic: bool,
    /// The embedding model to distil (a local directory or a Hugging Face
    /// repo id); default: the index's configured embedding model.
    #[arg(long, requires = "semantic")]
    pub model: Option<String>,
    /// Semantic tier: dimensions kept (PCA), at most the model's.
    #[arg(long, default_value_t = 256, requires = "semantic")]
    pub dims: usize,
    /// Semantic tier: clusters nearest the query it reads (besides those
    /// of its six best keyword hits).
    #[arg(long, default_value_t = 3, requires = "semantic")]
    pub probes: usize,
    /// Semantic tier: cosine below which a page is not a semantic match.
    #[arg(long, default_value_t = 0.2, requires = "semantic")]
    pub min_similarity: f32,
    /// Target size of a term shard, in KB before compression (fractions
    /// allowed; at least 0.1).
    #[arg(long, default_value_t = 3.0)]
    pub shard_kb: f64,
}

#[derive(Subcommand)]
pub enum EdgeCommand {
    /// Write the edge component, a snapshot of the index and the models its
    /// vectors need into <out>; prints the `wasmtime serve` command last.
    Build(EdgeBuildArgs),
}

#[derive(Args)]
pub struct EdgeBuildArgs {
    /// The folder to write (new, empty, or an earlier edge build).
    #[arg(long)]
    pub out: String,
    /// Leave the models out: the service answers with keyword search only.
    #[arg(long)]
    pub keyword_only: bool,
    /// Also ship the reranker. Left out by default: it is large, and an
    /// edge instance runs it on one core without a GPU (seconds per
    /// query); without it queries fuse keyword and vector results.
    #[arg(long, conflicts_with = "keyword_only")]
    pub with_reranker: bool,
    /// Pre-initialise the component (`wasmtime wizer`): one file holding
    /// the index, config and loaded models, served with no folders, every
    /// fresh instance starting warm. Needs wasmtime-cli 48.
    #[arg(long)]
    pub bundle: bool,
    /// The `wasmtime` command `--bundle` runs (default: the one on PATH).
    #[arg(long, requires = "bundle")]
    pub wasmtime: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SiteFormat {
    Html,
    Markdown,
}

#[derive(Subcommand)]
pub enum CollectionCommand {
    /// Add a directory as a collection and index it.
    Add {
        path: String,
        #[arg(long)]
        name: Option<String>,
        /// Glob mask (comma list or {a,b} for several); default **/*.md.
        #[arg(long, visible_alias = "glob")]
        mask: Option<String>,
    },
    List,
    #[command(visible_alias = "rm")]
    Remove {
        name: String,
    },
    #[command(visible_alias = "mv")]
    Rename {
        old: String,
        new: String,
    },
    #[command(visible_alias = "info")]
    Show {
        name: String,
    },
    /// Search this collection by default.
    Include {
        name: String,
    },
    /// Search this collection only when named with -c.
    Exclude {
        name: String,
    },
    /// Set the command `update` runs in the folder first (e.g. 'git pull');
    /// omit it to clear.
    #[command(name = "update-cmd", visible_alias = "set-update")]
    UpdateCmd {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

#[derive(Subcommand)]
pub enum ContextCommand {
    /// Attach a description to a path (`/` = global; one argument = current directory).
    Add {
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
    },
    List,
    #[command(visible_alias = "remove")]
    Rm {
        path: String,
    },
}

#[derive(Args)]
pub struct OutputFlags {
    /// Output format: cli, json, csv, md, xml, files.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    #[arg(long, hide = true)]
    pub json: bool,
    #[arg(long, hide = true)]
    pub csv: bool,
    #[arg(long, hide = true)]
    pub md: bool,
    #[arg(long, hide = true)]
    pub xml: bool,
    #[arg(long, hide = true)]
    pub files: bool,
    /// Show paths on disk instead of qmd:// paths.
    #[arg(long)]
    pub full_path: bool,
}

impl OutputFlags {
    /// `--format` wins; legacy flags by qmd's precedence csv > md > xml > files > json.
    /// An unknown `--format` is refused with qmd's message (not clap's).
    pub fn format(&self) -> anyhow::Result<Format> {
        if let Some(raw) = &self.format {
            return <Format as clap::ValueEnum>::from_str(raw, false)
                .map_err(|_| anyhow::anyhow!("Unknown --format value: {raw}\nValid: cli, json, csv, md, xml, files"));
        }
        Ok([
            (self.csv, Format::Csv),
            (self.md, Format::Md),
            (self.xml, Format::Xml),
            (self.files, Format::Files),
            (self.json, Format::Json),
        ]
        .into_iter()
        .find_map(|(set, f)| set.then_some(f))
        .unwrap_or(Format::Cli))
    }
}

#[derive(Args)]
pub struct SearchArgs {
    #[arg(required = true, num_args = 1.., allow_hyphen_values = false)]
    pub query: Vec<String>,
    /// Number of results (default 5; 20 for json and files).
    #[arg(short = 'n')]
    pub limit: Option<usize>,
    /// Return every match.
    #[arg(long)]
    pub all: bool,
    /// Minimum score (default 0; 0.3 for vsearch).
    #[arg(long)]
    pub min_score: Option<f64>,
    /// Whole documents instead of snippets.
    #[arg(long)]
    pub full: bool,
    /// Restrict to a collection (repeatable).
    #[arg(short = 'c', long = "collection")]
    pub collections: Vec<String>,
    /// Only documents whose frontmatter `qmd.metadata` passes this JSON
    /// filter, e.g. '{"key":"status","operator":"eq","value":"published"}'.
    #[arg(long)]
    pub filter: Option<String>,
    #[arg(long)]
    pub line_numbers: bool,
    #[command(flatten)]
    pub output: OutputFlags,
}

#[derive(Args)]
pub struct QueryArgs {
    #[command(flatten)]
    pub search: SearchArgs,
    /// Background that disambiguates the query (overrides an `intent:` line).
    #[arg(long)]
    pub intent: Option<String>,
    /// Rank by fusion only.
    #[arg(long)]
    pub no_rerank: bool,
    /// Skip the expansion model: the query alone plus qmd's fallback
    /// searches (its text as lex and vec, "Information about …" as hyde).
    #[arg(long)]
    pub no_expand: bool,
    /// Candidates considered after fusion.
    #[arg(short = 'C', long, default_value_t = 40)]
    pub candidate_limit: u32,
    /// How candidates are cut to pick the chunk the reranker reads:
    /// `regex` or `auto` (unset: as the index's vectors were chunked).
    #[arg(long)]
    pub chunk_strategy: Option<String>,
    /// Show how each result was ranked.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args)]
pub struct WebArgs {
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The built app (default: `www` beside the directory of the qmd binary).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: Option<McpAction>,
    /// Serve streamable HTTP at /mcp (plus POST /query and GET /health).
    #[arg(long)]
    pub http: bool,
    #[arg(long, default_value_t = 8181)]
    pub port: u16,
    /// Address to bind (default localhost, or $QMD_HOST).
    #[arg(long, env = "QMD_HOST", default_value = "localhost")]
    pub host: String,
    /// With --http: run in the background, recording its PID.
    #[arg(long)]
    pub daemon: bool,
    /// Keep the index current while serving (as `qmd update --watch`;
    /// reports go to stderr).
    #[arg(long)]
    pub watch: bool,
    /// With --watch: embed new content after each batch.
    #[arg(long, requires = "watch")]
    pub embed: bool,
}

#[derive(Subcommand)]
pub enum McpAction {
    /// Stop the background HTTP server.
    Stop,
}

#[derive(Args)]
pub struct GetArgs {
    pub file: String,
    /// First line to show (1-based).
    #[arg(long)]
    pub from: Option<u32>,
    /// Number of lines.
    #[arg(short = 'l')]
    pub lines: Option<u32>,
    #[arg(long)]
    pub line_numbers: bool,
    #[arg(long)]
    pub no_line_numbers: bool,
    #[arg(long)]
    pub full_path: bool,
}

#[derive(Args)]
pub struct MultiGetArgs {
    pub pattern: String,
    /// Lines per file.
    #[arg(short = 'l')]
    pub lines: Option<u32>,
    /// Skip files larger than this many bytes.
    #[arg(long, default_value_t = 65536)]
    pub max_bytes: u64,
    #[arg(long)]
    pub line_numbers: bool,
    #[arg(long)]
    pub no_line_numbers: bool,
    #[command(flatten)]
    pub output: OutputFlags,
}

#[derive(Args)]
pub struct EmbedArgs {
    /// Drop existing vectors and embed everything again.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Only this collection.
    #[arg(short = 'c', long = "collection")]
    pub collection: Option<String>,
    /// Documents per committed batch.
    #[arg(long, default_value_t = 64)]
    pub max_docs_per_batch: u32,
    /// Input megabytes per committed batch.
    #[arg(long, default_value_t = 64)]
    pub max_batch_mb: u64,
    /// Session cap in minutes (0 = no limit): stops after the batch in
    /// hand; a next run resumes.
    #[arg(long, default_value = "30", allow_hyphen_values = true)]
    pub timeout: String,
    /// `regex` (markdown break points) or `auto` (code files also cut at
    /// their declarations: TypeScript, JavaScript, Python, Go, Rust).
    /// Unset: as the index's vectors were chunked (`regex` at first).
    #[arg(long)]
    pub chunk_strategy: Option<String>,
}

#[derive(Args)]
pub struct PullArgs {
    /// Download again even when the cached files match.
    #[arg(long)]
    pub refresh: bool,
}
