//! Collection, context, ls, update and status commands.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use super::args::{CollectionCommand, ContextCommand};
use crate::clock::{ago, human_size, ls_date, now_ms};
use crate::component::bindings::{CollectionInfo, CollectionRoot, Listing, UpdateReport};
use crate::session::{Session, engine_result};
// A user-controlled field (name, path, pattern, command, context) as it
// may reach a terminal.
use qmd_core::display::escape_controls as shown;

fn collections(session: &Session) -> Result<Vec<CollectionInfo>> {
    session.read(|store, engine| engine_result(engine.call_collection_list(store)))
}

/// A progress bar on a terminal; nothing otherwise (logs stay clean).
fn progress_bar() -> Option<crate::component::ProgressFn> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} files ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    Some(Box::new(move |phase: &str, done: u64, total: u64| {
        // The phase is a collection name.
        bar.set_message(shown(phase).into_owned());
        bar.set_length(total);
        bar.set_position(done);
        if done == total {
            bar.finish_and_clear();
        }
    }))
}

/// Runs `update` for `only` (all when empty), or a rebuild, with the
/// collection folders mounted; returns the report and those folders (for
/// [`print_report`]). Reads the config only, never the index, so a rebuild
/// works on a damaged one.
pub(crate) fn run_update(
    session: &Session,
    only: Vec<String>,
    rebuild: bool,
) -> Result<(UpdateReport, Vec<CollectionRoot>)> {
    let roots: Vec<CollectionRoot> =
        collection_roots(session)?.into_iter().filter(|c| only.is_empty() || only.contains(&c.name)).collect();
    let mounts = roots.iter().map(|c| PathBuf::from(&c.path)).collect();
    let report = session.call(true, mounts, progress_bar(), |store, engine| {
        engine_result(if rebuild { engine.call_rebuild(store) } else { engine.call_update(store, &only) })
    })?;
    Ok((report, roots))
}

fn collection_roots(session: &Session) -> Result<Vec<CollectionRoot>> {
    session.read(|store, engine| engine_result(engine.call_collection_roots(store)))
}

/// Prints the report; returns whether every collection could be scanned.
/// `roots` are the folders scanned, to name entries the engine could not
/// (see [`named_skips`]).
pub(crate) fn print_report(report: &UpdateReport, roots: &[CollectionRoot]) -> bool {
    let sum =
        |f: fn(&crate::component::bindings::CollectionReport) -> u32| report.collections.iter().map(f).sum::<u32>();
    println!(
        "Indexed: {} new, {} updated, {} unchanged, {} removed",
        sum(|c| c.added),
        sum(|c| c.updated),
        sum(|c| c.unchanged),
        sum(|c| c.removed)
    );
    for note in &report.notes {
        println!("{note}");
    }
    print_file_lines(report, roots)
}

/// What `update` has to say about single files and collections, all on
/// stderr (a server's stdout is its protocol): skipped files, text read
/// with invalid bytes, invalid metadata, collections not scanned. Returns
/// whether every collection could be scanned.
pub(crate) fn print_file_lines(report: &UpdateReport, roots: &[CollectionRoot]) -> bool {
    for c in &report.collections {
        let root = roots.iter().find(|r| r.name == c.name).map(|r| Path::new(&r.path));
        for (path, reason) in named_skips(&c.skipped, root) {
            eprintln!("Skipped qmd://{}/{path} ({reason})", shown(&c.name));
        }
    }
    for c in &report.collections {
        for file in &c.lossy_text {
            eprintln!("Warning: qmd://{}/{}: {}", shown(&c.name), shown(&file.path), shown(&file.reason));
        }
    }
    print_invalid_metadata(report);
    for c in &report.collections {
        if let Some(error) = &c.error {
            eprintln!("Error: collection '{}' was not updated: {}", shown(&c.name), shown(error));
        }
    }
    report.collections.iter().all(|c| c.error.is_none())
}

/// qmd's warning for files whose `qmd.metadata` frontmatter is invalid
/// (indexed, left out of filtered searches), then the first few of them
/// with the reason, which qmd keeps to itself.
fn print_invalid_metadata(report: &UpdateReport) {
    const SHOWN: usize = 10;
    let invalid: Vec<_> =
        report.collections.iter().flat_map(|c| c.invalid_metadata.iter().map(move |f| (&c.name, f))).collect();
    if invalid.is_empty() {
        return;
    }
    eprintln!(
        "⚠ {} file(s) have invalid qmd.metadata frontmatter and are excluded from filtered search",
        invalid.len()
    );
    for (collection, file) in invalid.iter().take(SHOWN) {
        eprintln!("  qmd://{}/{}: {}", shown(collection), shown(&file.path), shown(&file.reason));
    }
    if invalid.len() > SHOWN {
        eprintln!("  … and {} more", invalid.len() - SHOWN);
    }
}

/// The skipped entries as lines to print: `(path, reason)`, escaped. Inside
/// the component a name that is not UTF-8 cannot be seen (WASI names are
/// strings), so the engine reports its folder; the folder is listed here
/// and each such name shown with its bytes escaped (`caf\xff.md`).
fn named_skips(skipped: &[crate::component::bindings::SkippedFile], root: Option<&Path>) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for s in skipped {
        if s.reason == qmd_core::source::NAME_NOT_UTF8 && (s.path.is_empty() || s.path.ends_with('/')) {
            let names = root.map(|root| names_not_utf8(&root.join(&s.path))).unwrap_or_default();
            if !names.is_empty() {
                let why = "NAME_NOT_UTF8: a name must be UTF-8 to be indexed; the rest of its folder was";
                lines.extend(names.into_iter().map(|name| (format!("{}{name}", shown(&s.path)), why.to_string())));
                continue;
            }
        }
        let reason = if s.path.ends_with('/') || s.path.is_empty() {
            format!("{}; documents indexed under it are kept", shown(&s.reason))
        } else {
            shown(&s.reason).into_owned()
        };
        lines.push((shown(&s.path).into_owned(), reason));
    }
    lines
}

/// The entries of `dir` whose names are not UTF-8, bytes escaped, sorted.
fn names_not_utf8(dir: &Path) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name())
        .filter(|name| name.to_str().is_none())
        .map(|name| qmd_core::display::escape_bytes(name.as_bytes()))
        .collect();
    names.sort();
    names
}

/// `trusted`: whether a project config's gated fields may be used (see
/// `trust::Gate::resolve`, asked before the session opened).
pub fn update(session: &Session, rebuild: bool, trusted: bool) -> Result<ExitCode> {
    let list = collection_roots(session)?;
    if list.is_empty() && !rebuild {
        println!("No collections found. Run 'qmd collection add .' to index markdown files.");
        return Ok(ExitCode::SUCCESS);
    }
    if rebuild {
        println!("Rebuilding the index from {} collection folders", list.len());
        for (i, c) in list.iter().enumerate() {
            println!("[{}/{}] {} ({})", i + 1, list.len(), shown(&c.name), shown(&c.pattern));
        }
        let (report, roots) = run_update(session, Vec::new(), true)?;
        println!();
        let complete = print_report(&report, &roots);
        return Ok(if complete { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    // As qmd: each collection's hook, then its scan, one at a time (each
    // scan commits on its own, so a failing hook keeps the ones before).
    println!("Updating {} collection(s)...\n", list.len());
    let mut complete = true;
    for (i, c) in list.iter().enumerate() {
        println!("[{}/{}] {} ({})", i + 1, list.len(), shown(&c.name), shown(&c.pattern));
        if !updatable(session, trusted, c) {
            println!(
                "Skipping collection '{}' — path {} is outside this project and this .qmd config is not trusted.",
                shown(&c.name),
                shown(&c.path)
            );
            println!("Approve with 'qmd trust'.\n");
            continue;
        }
        if trusted
            && let Some(command) = &c.update_command
            && let Some(code) = super::hook::run(command, Path::new(&c.path))
        {
            return Ok(ExitCode::from(code));
        }
        println!("Collection: {} ({})", shown(&c.path), shown(&c.pattern));
        let (report, roots) = run_update(session, vec![c.name.clone()], false)?;
        println!();
        complete &= print_report(&report, &roots);
        println!();
    }
    if !complete {
        return Ok(ExitCode::FAILURE);
    }
    println!("✓ All collections updated.");
    if let Some(hint) = embed_hint(session)? {
        println!("\n{hint}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `update` scans collection `c`: not when its folder is outside
/// the project of an untrusted project config.
fn updatable(session: &Session, trusted: bool, c: &CollectionRoot) -> bool {
    trusted || session.config.project_root().is_none_or(|root| crate::trust::inside(root, &c.path))
}

/// The collections `update` scans (see [`updatable`]).
pub(crate) fn updatable_roots(session: &Session, trusted: bool) -> Result<Vec<CollectionRoot>> {
    Ok(collection_roots(session)?.into_iter().filter(|c| updatable(session, trusted, c)).collect())
}

/// qmd's closing line after indexing when contents lack vectors.
fn embed_hint(session: &Session) -> Result<Option<String>> {
    let status = session.read(|store, engine| engine_result(engine.call_status(store)))?;
    Ok((status.needs_embedding > 0).then(|| {
        format!("Run 'qmd embed' to update embeddings ({} unique hashes need vectors)", status.needs_embedding)
    }))
}

pub fn collection(session: &Session, cmd: CollectionCommand) -> Result<ExitCode> {
    match cmd {
        CollectionCommand::Add { path, name, mask } => {
            let resolved = crate::paths::absolute(&path);
            if !resolved.exists() {
                bail!(
                    "Collection path does not exist.\n  Received: {path}\n  Resolved: {}\nProvide an existing directory and run 'qmd collection add <path>' again.",
                    resolved.display()
                );
            }
            if !resolved.is_dir() {
                bail!("Collection path is not a directory.\n  Received: {path}\n  Resolved: {}", resolved.display());
            }
            let real = std::fs::canonicalize(&resolved)?;
            let real = real.to_string_lossy().to_string();
            let before = crate::trust::Gate::read(&session.config)?;
            let info = session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_collection_add(store, &real, name.as_deref(), mask.as_deref()))
            })?;
            println!("Creating collection '{}'...", shown(&info.name));
            println!("Collection: {} ({})\n", shown(&info.path), shown(&info.pattern));
            let (report, roots) = run_update(session, vec![info.name.clone()], false)?;
            if !print_report(&report, &roots) {
                return Ok(ExitCode::FAILURE);
            }
            if let Some(hint) = embed_hint(session)? {
                println!("\n{hint}");
            }
            // The user just typed it: it needs no separate approval, but
            // what was gated before stays gated.
            crate::trust::Gate::approve_edit(&before, &session.config, &mut std::io::stdout())?;
            println!("✓ Collection '{}' created successfully", shown(&info.name));
        }
        CollectionCommand::List => {
            let list = collections(session)?;
            let now = now_ms();
            println!("Collections ({}):\n", list.len());
            for c in list {
                let excluded = if c.include_by_default { "" } else { " [excluded]" };
                println!("{} (qmd://{}/){excluded}", shown(&c.name), shown(&c.name));
                println!("  Pattern:  {}", shown(&c.pattern));
                if !c.ignore.is_empty() {
                    println!("  Ignore:   {}", shown(&c.ignore.join(", ")));
                }
                println!("  Files:    {}", c.documents);
                if let Some(t) = c.last_updated {
                    println!("  Updated:  {}", ago(t, now));
                }
                println!();
            }
        }
        CollectionCommand::Remove { name } => {
            let info = session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_collection_remove(store, &name))
            })?;
            println!("✓ Removed collection '{}'", shown(&info.name));
            println!("  Deleted {} documents", info.documents);
        }
        CollectionCommand::Rename { old, new } => {
            let info = session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_collection_rename(store, &old, &new))
            })?;
            let (old, new) = (shown(&old), shown(&info.name));
            println!("✓ Renamed collection '{old}' to '{new}'");
            println!("  Virtual paths updated: qmd://{old}/ → qmd://{new}/");
        }
        CollectionCommand::Show { name } => {
            let list = collections(session)?;
            let Some(c) = list.iter().find(|c| c.name == name) else {
                bail!(
                    "Collection not found: {}\nRun 'qmd collection list' to see available collections.",
                    shown(&name)
                );
            };
            println!("Collection: {}", shown(&c.name));
            println!("  Path:     {}", shown(&c.path));
            println!("  Pattern:  {}", shown(&c.pattern));
            println!("  Include:  {}", if c.include_by_default { "yes (default)" } else { "no" });
            if let Some(command) = &c.update_command {
                println!("  Update:   {}", shown(command));
            }
            if c.contexts > 0 {
                println!("  Contexts: {}", c.contexts);
            }
        }
        CollectionCommand::UpdateCmd { name, command } => {
            let command = Some(command.join(" ")).filter(|c| !c.trim().is_empty());
            let before = crate::trust::Gate::read(&session.config)?;
            session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_collection_set_update(store, &name, command.as_deref()))
            })?;
            let name = shown(&name);
            match &command {
                Some(command) => println!("✓ Set update command for '{name}': {}", shown(command)),
                None => println!("✓ Cleared update command for '{name}'"),
            }
            crate::trust::Gate::approve_edit(&before, &session.config, &mut std::io::stdout())?;
        }
        CollectionCommand::Include { name } => set_include(session, &name, true)?,
        CollectionCommand::Exclude { name } => set_include(session, &name, false)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `qmd cleanup [--dry-run]`, in qmd's words where they apply (this index
/// has no response cache and no separate content table).
pub fn cleanup(session: &Session, dry_run: bool) -> Result<ExitCode> {
    let r =
        session.call(!dry_run, Vec::new(), None, |store, engine| engine_result(engine.call_cleanup(store, dry_run)))?;
    let (verb, done) = if dry_run { ("Would remove", "") } else { ("Removed", "✓ ") };
    if dry_run {
        println!("Dry run — no changes made.\n");
    }
    if r.orphaned_vectors > 0 {
        println!("{done}{verb} {} orphaned embedding chunks", r.orphaned_vectors);
    } else {
        println!("No orphaned embeddings to remove");
    }
    if r.inactive_documents > 0 {
        println!("{done}{verb} {} inactive document records", r.inactive_documents);
    }
    if dry_run {
        println!("Would compact the index ({} segments, {})", r.segments_before, human_size(r.bytes_before));
    } else {
        println!(
            "✓ Index compacted: {} → {} segments, {} → {}",
            r.segments_before,
            r.segments_after,
            human_size(r.bytes_before),
            human_size(r.bytes_after)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `qmd init`: a project-local index in the current folder.
pub fn init() -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let same = |a: &Path, b: &Path| a.canonicalize().ok().zip(b.canonicalize().ok()).is_some_and(|(a, b)| a == b);
    if same(&cwd, &crate::paths::home()) {
        bail!(
            "Refusing to initialize a local index in $HOME. The global index is automatically created; run `qmd collection add <path>` for the global index, or run `qmd init` inside a project folder."
        );
    }
    let dir = cwd.join(crate::paths::LOCAL_DIR);
    let config = crate::paths::config_in(&dir).unwrap_or(crate::paths::ConfigFile { dir, name: "index.yml".into() });
    let location = crate::paths::Location::local(config);
    std::fs::create_dir_all(&location.index_dir)
        .with_context(|| format!("cannot create {}", location.index_dir.display()))?;
    let config = location.config.path();
    if !config.exists() {
        std::fs::write(&config, "collections: {}\n").with_context(|| format!("cannot write {}", config.display()))?;
    }
    println!("ready to go with new local index");
    Ok(ExitCode::SUCCESS)
}

fn set_include(session: &Session, name: &str, include: bool) -> Result<()> {
    session.call(true, Vec::new(), None, |store, engine| {
        engine_result(engine.call_collection_set_include(store, name, include))
    })?;
    let name = shown(name);
    if include {
        println!("✓ Collection '{name}' included in default queries");
    } else {
        println!("✓ Collection '{name}' excluded from default queries");
    }
    Ok(())
}

/// qmd's context targets: `/`, `qmd://…`, or a filesystem path.
fn context_target(raw: &str) -> String {
    if raw == "/" || raw.starts_with("qmd://") {
        return raw.to_string();
    }
    let path = crate::paths::absolute(raw);
    std::fs::canonicalize(&path).unwrap_or(path).to_string_lossy().to_string()
}

pub fn context(session: &Session, cmd: ContextCommand) -> Result<ExitCode> {
    match cmd {
        ContextCommand::Add { args } => {
            let (target, text) = match args.as_slice() {
                [text] => (context_target("."), text.clone()),
                [path, text] => (context_target(path), text.clone()),
                _ => bail!("Usage: qmd context add [path] \"text\""),
            };
            let entry = session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_context_add(store, &target, &text))
            })?;
            if entry.collection == "*" {
                println!("✓ Set global context");
            } else {
                println!(
                    "✓ Added context for: qmd://{}/{}",
                    shown(&entry.collection),
                    shown(entry.prefix.trim_start_matches('/'))
                );
            }
            println!("Context: {}", shown(&entry.text));
        }
        ContextCommand::List => {
            let entries = session.read(|store, engine| engine_result(engine.call_context_list(store)))?;
            if entries.is_empty() {
                println!("No contexts configured. Add one with 'qmd context add <path> \"text\"'.");
                return Ok(ExitCode::SUCCESS);
            }
            println!("\nConfigured Contexts\n");
            let mut last = String::new();
            for e in entries {
                if e.collection != last {
                    println!("{}", shown(&e.collection));
                    last = e.collection.clone();
                }
                println!("  {}\n    {}", shown(&e.prefix), shown(&e.text));
            }
        }
        ContextCommand::Rm { path } => {
            let target = context_target(&path);
            let entry = session.call(true, Vec::new(), None, |store, engine| {
                engine_result(engine.call_context_remove(store, &target))
            })?;
            println!(
                "✓ Removed context for {}",
                if entry.collection == "*" {
                    "/".to_string()
                } else {
                    format!("qmd://{}/{}", shown(&entry.collection), shown(entry.prefix.trim_start_matches('/')))
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn ls(session: &Session, target: Option<String>) -> Result<ExitCode> {
    let listing = session.read(|store, engine| engine_result(engine.call_ls(store, target.as_deref())))?;
    match listing {
        Listing::Collections(list) => {
            println!("Collections:\n");
            for c in list {
                println!("  qmd://{}/  ({} files)", shown(&c.name), c.files);
            }
        }
        Listing::Files(listing) => {
            let files = listing.files;
            if files.is_empty() {
                let collection = shown(&listing.collection);
                if listing.prefix.is_empty() {
                    println!("No files found in collection: {collection}");
                } else {
                    println!("No files found under qmd://{collection}/{}", shown(&listing.prefix));
                }
                return Ok(ExitCode::SUCCESS);
            }
            let now = now_ms();
            // Sizes are right-aligned to the widest one listed, as qmd does.
            let sizes: Vec<String> = files.iter().map(|f| human_size(f.size)).collect();
            let width = sizes.iter().map(|s| s.chars().count()).max().unwrap_or(0);
            for (f, size) in files.iter().zip(&sizes) {
                println!(
                    "{size:>width$}  {}  qmd://{}/{}",
                    ls_date(f.modified, now),
                    shown(&f.collection),
                    shown(&f.path)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn status(session: &Session) -> Result<ExitCode> {
    let s = session.read(|store, engine| engine_result(engine.call_status(store)))?;
    let now = now_ms();
    println!("QMD Status\n");
    println!("Index: {}", shown(&session.index_dir.to_string_lossy()));
    println!("Size:  {}\n", human_size(s.index_bytes));
    println!("Documents");
    println!("  Total:    {} files indexed", s.total_documents);
    println!("  Vectors:  {} embedded", s.vectors);
    if matches!(s.chunk_strategy, crate::component::bindings::ChunkStrategy::Auto) {
        println!("  Chunking: auto (code files cut at their declarations)");
    }
    if s.needs_embedding > 0 {
        println!("  Pending:  {} need embedding (run 'qmd embed')", s.needs_embedding);
    }
    if s.with_metadata > 0 || s.invalid_metadata > 0 {
        let invalid = match s.invalid_metadata {
            0 => String::new(),
            n => format!(" ({n} with invalid qmd.metadata frontmatter, excluded from --filter searches)"),
        };
        println!("  Metadata: {} documents with qmd.metadata{invalid}", s.with_metadata);
    }
    println!("  Segments: {} (generation {})", s.segments, s.generation);
    if let Some(latest) = s.collections.iter().filter_map(|c| c.last_updated).max() {
        println!("  Updated:  {}", ago(latest, now));
    }
    println!("\nCollections");
    for c in &s.collections {
        let excluded = if c.include_by_default { "" } else { " [excluded]" };
        println!("  {} (qmd://{}/){excluded}", shown(&c.name), shown(&c.name));
        println!("    Pattern:  {}", shown(&c.pattern));
        match c.chunk_strategy {
            Some(crate::component::bindings::ChunkStrategy::Auto) => {
                println!("    Chunking: auto (its chunk_strategy in index.yml)")
            }
            Some(crate::component::bindings::ChunkStrategy::Regex) => {
                println!("    Chunking: regex (its chunk_strategy in index.yml)")
            }
            None => {}
        }
        let updated = c.last_updated.map(|t| format!(" (updated {})", ago(t, now))).unwrap_or_default();
        println!("    Files:    {}{updated}", c.documents);
        let contexts: Vec<_> = s.contexts.iter().filter(|e| e.collection == c.name).collect();
        if !contexts.is_empty() {
            println!("    Contexts: {}", contexts.len());
            for e in contexts {
                let preview: String = e.text.chars().take(57).collect();
                let more = if e.text.chars().count() > 57 { "..." } else { "" };
                println!(
                    "      {}: {}{more}",
                    if e.prefix == "/" { "/".to_string() } else { format!("/{}", shown(&e.prefix)) },
                    shown(&preview)
                );
            }
        }
    }
    if let Some(global) = &s.global_context {
        println!("\nGlobal context: {}", shown(global));
    }
    println!("\nModels");
    let (embed, rerank, generate) = (&session.models.embed, &session.models.rerank, &session.models.generate);
    for (role, source) in [("Embedding", embed), ("Reranking", rerank), ("Generation", generate)] {
        // A spec that names no model, or an endpoint that cannot be read,
        // is not something `pull` can fix: say what is wrong.
        let state = match (&source.invalid, &source.endpoint) {
            (Some(why), _) | (_, Some(Err(why))) => format!(" (not usable: {})", shown(why)),
            _ if source.is_present() => String::new(),
            _ => " (not downloaded: run 'qmd pull')".to_string(),
        };
        let link = match &source.gguf {
            Some(gguf) if source.remote => format!("{} ({})", source.id, gguf.path.display()),
            _ if source.remote => format!("https://huggingface.co/{}", source.id),
            _ => source.id.clone(),
        };
        println!("  {role}: {}{state}", shown(&link));
    }
    if let Some(model) = s.embed_model.as_ref().filter(|m| **m != embed.id) {
        println!("  Vectors in the index are from {}: run 'qmd embed -f' to re-embed.", shown(model));
    }
    // Named, not probed: opening a GPU costs a second and wakes drivers
    // (and their noise) for a command that runs no model.
    println!("  Device:    {}", crate::models::device_summary());
    Ok(ExitCode::SUCCESS)
}

/// The engine's embed options from `qmd embed`'s flags, and the time cap
/// in minutes (0: none).
fn embed_options(args: &super::args::EmbedArgs) -> Result<(crate::component::bindings::EmbedOptions, f64)> {
    let chunk_strategy = super::chunk_strategy(args.chunk_strategy.as_deref())?;
    let minutes: f64 = args
        .timeout
        .trim()
        .parse()
        .ok()
        .filter(|m: &f64| m.is_finite() && *m >= 0.0)
        .ok_or_else(|| anyhow::anyhow!("--timeout must be a non-negative number of minutes (0 = no limit)"))?;
    let options = crate::component::bindings::EmbedOptions {
        force: args.force,
        collection: args.collection.clone(),
        max_docs_per_batch: args.max_docs_per_batch.max(1),
        max_batch_bytes: args.max_batch_mb.max(1).saturating_mul(1 << 20),
        max_duration_ms: (minutes > 0.0).then_some((minutes * 60_000.0) as u64),
        chunk_strategy,
    };
    Ok((options, minutes))
}

/// `embed` with nothing printed (a server's watcher, whose stdout may be
/// the MCP channel).
pub(crate) fn embed_quietly(
    session: &Session,
    args: &super::args::EmbedArgs,
) -> Result<crate::component::bindings::EmbedReport> {
    let (options, _) = embed_options(args)?;
    session.call(true, Vec::new(), None, |store, engine| {
        engine_result(engine.qmd_engine_vectors().call_embed(store, &options))
    })
}

/// qmd `embed`: vectors for every content without them, in committed
/// batches (an interrupted run resumes where it stopped).
pub fn embed(session: &Session, args: super::args::EmbedArgs) -> Result<ExitCode> {
    let (options, minutes) = embed_options(&args)?;
    if args.force {
        println!("Force re-indexing: clearing all vectors...");
    }
    println!("Model: {}\n", session.models.embed.id);
    let started = std::time::Instant::now();
    let report = session.call(true, Vec::new(), embed_progress(), |store, engine| {
        engine_result(engine.qmd_engine_vectors().call_embed(store, &options))
    })?;
    for fallback in &report.fallbacks {
        eprintln!("⚠ {}", shown(fallback));
    }
    if report.rechunked > 0 {
        println!("Chunk strategy changed: {} code files chunked the other way are embedded again.", report.rechunked);
    }
    if report.pending == 0 {
        println!("✓ All content hashes already have embeddings.");
    } else if report.chunks == 0 {
        if !report.stopped {
            println!("✓ No non-empty documents to embed.");
        }
    } else {
        let secs = started.elapsed().as_secs_f64();
        println!(
            "✓ Done! Embedded {} chunks from {} documents in {:.1}s ({:.0} chunks/s)",
            report.chunks,
            report.docs,
            secs,
            report.chunks as f64 / secs.max(1e-9)
        );
        if report.resplit > 0 {
            println!("  {} chunks were split again to fit the model's window", report.resplit);
        }
        // The device was chosen when the run loaded the model, so naming
        // it costs nothing now. The engine's kernels run the embedding
        // model (a GGUF file, or a repository quantized at load) on the
        // GPU where there is one (its WGSL kernels), else on the CPU's
        // quantized kernels, never on burn's CPU backend (which only a
        // repository whose widths are not whole Q8_0 blocks falls to). An
        // `openai:` model's vectors came from its server: that is what ran.
        match (&session.models.embed.endpoint, crate::models::device()) {
            (Some(Ok(endpoint)), _) => {
                println!("  Device: the server at {} (OpenAI-compatible)", shown(&endpoint.base_url))
            }
            (_, Ok(device)) if device.gpu.is_some() => println!("  Device: {}", device.description),
            _ => println!("  Device: CPU (quantized kernels, {})", qmd_core::kernels::instruction_set()),
        }
    }
    if report.stopped {
        println!(
            "⚠ Stopped at the --timeout of {minutes} minutes: {} of {} documents embedded. Run 'qmd embed' again to continue.",
            report.docs, report.pending
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// qmd's embed progress: input bytes, throughput and ETA (terminals only).
fn embed_progress() -> Option<crate::component::ProgressFn> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "[{bar:30}] {percent:>3}% input · {bytes}/{total_bytes} · {bytes_per_sec} · ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    Some(Box::new(move |_phase: &str, done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
        if done >= total {
            bar.finish_and_clear();
        }
    }))
}
