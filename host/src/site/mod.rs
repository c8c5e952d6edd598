//! `qmd site build`: a folder of built HTML pages (or markdown) → a static
//! search bundle any web server can host (see `bundle.rs` and
//! `qmd_core::site`).

mod bundle;
mod charset;
mod html;
mod links;
mod markdown;
mod page_vectors;
mod vocabulary;
mod walk;

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use qmd_core::site::semantic::{RowWidth, SemanticInput};
use qmd_core::site::{SiteBuilder, SiteOptions, SitePage};

use crate::cli::args::{SiteBuildArgs, SiteFormat};

impl SiteFormat {
    /// File name endings of the format's pages (lowercase).
    fn extensions(self) -> &'static [&'static str] {
        match self {
            SiteFormat::Html => &[".html", ".htm"],
            SiteFormat::Markdown => &[".md", ".markdown"],
        }
    }

    fn is_page(self, file: &str) -> bool {
        let lower = file.to_ascii_lowercase();
        self.extensions().iter().any(|e| lower.ends_with(e))
    }
}

/// HTML when the folder has any, else markdown when it has any.
fn detect(files: &[String]) -> Option<SiteFormat> {
    [SiteFormat::Html, SiteFormat::Markdown].into_iter().find(|format| files.iter().any(|f| format.is_page(f)))
}

/// `path` made absolute with links resolved, whether or not it exists yet
/// (its nearest existing ancestor is resolved, the rest appended).
fn resolve(path: &Path) -> Result<std::path::PathBuf> {
    let absolute = std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let mut rest = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(found) = existing.canonicalize() {
            return Ok(rest.iter().rev().fold(found, |p, part| p.join(part)));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return Ok(absolute),
        }
    }
}

/// A page's text: read only if its real path stays under the site folder
/// (`root`, canonical), decoded as it declares ([`charset`]); a note when
/// some bytes were not valid in its encoding.
fn read_page(root: &Path, rel: &str, format: SiteFormat) -> Result<(String, Option<String>)> {
    let path = root.join(rel);
    // A FIFO named like a page is refused, not read (a read would block).
    let mut bytes = Vec::new();
    crate::files::contained::open_under(root, &path)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    charset::decode(&bytes, matches!(format, SiteFormat::Html)).map_err(anyhow::Error::msg)
}

/// Filter keys a page's scripts take for an object's own machinery: the
/// widget keys no plain object by them, and the build keeps them out of
/// bundles, for readers that do.
const RESERVED_FILTER_KEYS: &[&str] = &["__proto__", "constructor", "prototype"];

/// `index` names the index whose configured embedding model the semantic
/// tier distils (`--index`), unless `--model` names one.
pub fn build(args: SiteBuildArgs, index: Option<&str>) -> Result<()> {
    let started = Instant::now();
    let input = Path::new(&args.input);
    if !(args.shard_kb >= 0.1 && args.shard_kb.is_finite()) {
        bail!("--shard-kb must be at least 0.1 (got {})", args.shard_kb);
    }
    if args.semantic && args.dims == 0 {
        bail!("--dims must be at least 1");
    }
    links::check_base_url(&args.base_url)?;
    links::check_link_ext(&args.link_ext)?;
    if !input.is_dir() {
        bail!("Not a directory: {}", args.input);
    }
    let out = Path::new(&args.out);
    // Refused before any work: `<out>/qmd` a link or a file (see `bundle`).
    crate::files::OwnedDir::check(out, Path::new("qmd"), bundle::OWNER)?;
    let input_abs = input.canonicalize().with_context(|| format!("cannot open {}", input.display()))?;
    // The bundle may live inside the site it indexes: never index it.
    let bundle_dir = resolve(out)?.join("qmd");
    let skip = bundle_dir.strip_prefix(&input_abs).ok().map(|p| p.to_string_lossy().into_owned());
    let files = walk::files(&input_abs, skip.as_deref())?;
    let Some(format) = args.format.or_else(|| detect(&files)) else {
        bail!("No HTML (.html, .htm) or markdown (.md) pages under {}", args.input);
    };
    let name = match &args.name {
        Some(n) => n.clone(),
        None => input_abs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "site".into()),
    };
    let markdown_links = markdown::Links { base: args.base_url.clone(), extension: args.link_ext.clone() };
    let mut builder = SiteBuilder::new(&name);
    let mut invalid_metadata = Vec::new();
    for rel in files.iter().filter(|f| format.is_page(f)) {
        let shown = crate::files::escape(rel.as_bytes());
        // A page that cannot be read (gone, unreadable, a link out, not
        // text in the charset it declares) is skipped.
        let text = match read_page(&input_abs, rel, format) {
            Ok((text, note)) => {
                if let Some(note) = note {
                    eprintln!("Warning: {shown}: {note}");
                }
                text
            }
            Err(e) => {
                walk::warn(&shown, format_args!("{:#}", e.root_cause()));
                continue;
            }
        };
        let mut page: SitePage = match format {
            SiteFormat::Html => {
                let stem = rel.rsplit('/').next().unwrap_or(rel);
                let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
                let url = links::html_url(&args.base_url, rel);
                let path = url.trim_start_matches('/').to_string();
                html::extract(&text, url, path, stem).map_err(|e| anyhow::anyhow!("{rel}: cannot parse HTML: {e}"))?
            }
            SiteFormat::Markdown => markdown::page(rel, text, &markdown_links),
        };
        page.filters.retain(|(key, _)| {
            let reserved = RESERVED_FILTER_KEYS.contains(&key.as_str());
            if reserved {
                eprintln!(
                    "Warning: {shown}: filter key {key:?} left out (a name objects reserve in the page's scripts)"
                );
            }
            !reserved
        });
        if let Some(error) = &page.metadata.error {
            invalid_metadata.push(format!(
                "{}: {}",
                crate::files::escape(rel.as_bytes()),
                qmd_core::display::escape_controls(error)
            ));
        }
        builder.add(page);
    }
    if !invalid_metadata.is_empty() {
        eprintln!(
            "⚠ {} file(s) have invalid qmd.metadata frontmatter and are excluded from filtered search",
            invalid_metadata.len()
        );
        for line in invalid_metadata.iter().take(10) {
            eprintln!("  {line}");
        }
    }
    let pages = builder.len();
    let semantic = if args.semantic { Some(semantic_input(&args, index)?) } else { None };
    let options = SiteOptions { shard_bytes: (args.shard_kb * 1024.0) as usize, semantic };
    let site = builder.finish(&options).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let (terms, shards, semantic, site_words) = (site.terms, site.shards, site.semantic.is_some(), site.site_words);
    let written = bundle::write(out, site)?;
    println!(
        "Indexed {pages} {} pages ({terms} terms in {shards} shards) into {}: {} files, {:.1} KB, in {:.1}s",
        match format {
            SiteFormat::Html => "HTML",
            SiteFormat::Markdown => "markdown",
        },
        written.dir.display(),
        written.files,
        written.bytes as f64 / 1024.0,
        started.elapsed().as_secs_f64()
    );
    if semantic {
        println!(
            "Semantic tier: {} dimensions, {site_words} of the site's words read whole; a query reads its {} nearest clusters and those of its {} best keyword hits",
            args.dims,
            args.probes.max(1),
            qmd_core::site::semantic::KEYWORD_PROBES
        );
    }
    if written.removed > 0 {
        println!("Removed {} files of an earlier build", written.removed);
    }
    println!(
        "Add to a page: <script type=\"module\" src=\"{}/qmd/qmd-search.js\"></script> <qmd-search></qmd-search>",
        args.base_url.trim_end_matches('/')
    );
    Ok(())
}

/// How a static row's values are stored: 4 bits halve the rows a query
/// fetches for ~0.001 nDCG@10 (SciFact train 0.705 → 0.704, NFCorpus dev
/// unchanged).
const ROW_WIDTH: RowWidth = RowWidth::Int4;

/// Rows of the static model per rows shard: a query fetches one shard per
/// distinct shard of its tokens.
const ROWS_PER_SHARD: usize = 16;

/// The embedding model's vocabulary, each token embedded by it.
fn semantic_input(args: &SiteBuildArgs, index: Option<&str>) -> Result<SemanticInput> {
    use crate::models::{ModelRole, ModelSource, ModelSources, Models};
    let mut sources = ModelSources::for_index(&crate::paths::Location::find(index).config)?;
    if let Some(spec) = &args.model {
        sources.embed = ModelSource::resolve(ModelRole::Embed, spec);
    }
    eprintln!("Distilling a static model from {} …", sources.embed.id);
    let models = Models::new(&sources);
    let (vocab, token_vectors) = vocabulary::embedded(&sources.embed, &models)?;
    let source = sources.embed.clone();
    let encode_documents: qmd_core::site::semantic::DocumentEncoder = Box::new(move |texts: &[String]| {
        eprintln!("Embedding pages with {} …", source.id);
        page_vectors::embed(&source, &models, texts)
    });
    Ok(SemanticInput {
        vocab,
        token_vectors,
        dim: args.dims,
        rows_per_shard: ROWS_PER_SHARD,
        row_width: ROW_WIDTH,
        probes: args.probes.max(1),
        min_similarity: args.min_similarity,
        encode_documents,
    })
}
