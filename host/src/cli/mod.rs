//! Parses the command line, runs it against a component instance, prints
//! qmd's output.

pub(crate) mod args;
mod bench;
mod doctor;
mod hook;
pub(crate) mod manage;
pub mod output;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use clap::Parser;
use qmd_core::display::escape_controls;

use crate::component::bindings::{self, GetError};
use crate::paths;
use crate::session::{Session, engine_result};
use args::{Cli, Command, GetArgs, McpAction, MultiGetArgs, QueryArgs, SearchArgs};
use output::{Format, SearchView, Style};

pub fn run() -> Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return Ok(ExitCode::from(code));
        }
    };
    if !matches!(cli.command, Command::Mcp(_) | Command::Web(_)) {
        die_quietly_on_closed_pipe();
    }
    let one_off = matches!(cli.command, Command::Search(_) | Command::Vsearch(_) | Command::Query(_));
    crate::models::set_policy(crate::models::RunPolicy {
        workload: if one_off { crate::models::Workload::OneOffQuery } else { crate::models::Workload::Sustained },
        no_gpu: cli.no_gpu,
    });
    match &cli.command {
        Command::Init => return manage::init(),
        Command::Trust { action } => {
            return crate::trust::command(&paths::Location::find(cli.index.as_deref()).config, action.as_deref());
        }
        _ => {}
    }
    if let Command::Skill(action) = cli.command {
        crate::skill::skill(action)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Skills { action, json } = cli.command {
        crate::skill::skills(action, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Site(args::SiteCommand::Build(args)) = cli.command {
        crate::site::build(args, cli.index.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Web(args) = cli.command {
        // The app runs its own engine in the browser: no component here.
        let location = paths::Location::find(cli.index.as_deref());
        let models = crate::models::ModelSources::for_index(&location.config)?;
        return crate::web::run(&models, crate::web::WebOptions { port: args.port, dir: args.dir });
    }
    let location = paths::Location::find(cli.index.as_deref());
    // qmd asks about a project's own config before the commands that use
    // its gated fields (hooks, paths outside it, models), before the
    // models are chosen. `update` prints the notice on stdout as qmd does;
    // the others keep stdout for their results.
    let trusted = match cli.command {
        Command::Update { .. } => crate::trust::Gate::read(&location.config)?.resolve(&mut std::io::stdout())?,
        // A watching server (`mcp --watch`) updates the index as `update` does.
        Command::Embed(_)
        | Command::Pull(_)
        | Command::Vsearch(_)
        | Command::Query(_)
        | Command::Mcp(args::McpArgs { watch: true, .. }) => {
            crate::trust::Gate::read(&location.config)?.resolve(&mut std::io::stderr())?
        }
        _ => true,
    };
    let session = Session::at(location)?;
    match cli.command {
        Command::Collection(cmd) => manage::collection(&session, cmd),
        Command::Context(cmd) => manage::context(&session, cmd),
        Command::Ls { target } => manage::ls(&session, target),
        Command::Update { rebuild, watch: true, debounce_ms, poll, embed, .. } => {
            if rebuild {
                anyhow::bail!("--watch and --rebuild do not go together: rebuild first, then watch");
            }
            let options = crate::watch::WatchOptions {
                debounce: std::time::Duration::from_millis(debounce_ms),
                poll: poll.map(|ms| std::time::Duration::from_millis(ms.max(100))),
                embed,
            };
            crate::watch::run(&session, trusted, &options)
        }
        Command::Update { rebuild, .. } => manage::update(&session, rebuild, trusted),
        Command::Status => manage::status(&session),
        Command::Cleanup { dry_run } => manage::cleanup(&session, dry_run),
        Command::Doctor => doctor::run(&session),
        Command::Bench { fixture, json, collection } => bench::run(&session, &fixture, json, collection),
        Command::Search(args) => search(&session, args),
        Command::Vsearch(args) => vsearch(&session, args),
        Command::Embed(args) => manage::embed(&session, args),
        Command::Pull(args) => crate::models::pull::run(&session.models, args.refresh),
        Command::Query(args) => query(&session, args),
        Command::Get(args) => get(&session, args),
        Command::MultiGet(args) => multi_get(&session, args),
        Command::Edge(args::EdgeCommand::Build(args)) => crate::edge::build(&session, args).map(|()| ExitCode::SUCCESS),
        Command::Mcp(args) => match args.action {
            Some(McpAction::Stop) => crate::mcp::stop(&session),
            None => crate::mcp::run(
                &session,
                crate::mcp::McpOptions {
                    http: args.http,
                    port: args.port,
                    host: args.host,
                    daemon: args.daemon,
                    watch: args.watch.then_some(crate::watch::WatchOptions {
                        debounce: std::time::Duration::from_millis(args::DEFAULT_DEBOUNCE_MS),
                        poll: None,
                        embed: args.embed,
                    }),
                    trusted,
                },
            ),
        },
        Command::Web(_)
        | Command::Site(_)
        | Command::Skill(_)
        | Command::Skills { .. }
        | Command::Init
        | Command::Trust { .. } => {
            unreachable!("handled before the session is opened")
        }
    }
}

/// `qmd search x | head` closes stdout early: like `cat`, end quietly
/// instead of panicking in `println!`. Servers keep Rust's default (the
/// signal ignored), so a client that hangs up mid-reply cannot kill them.
fn die_quietly_on_closed_pipe() {
    // SAFETY: resetting a signal disposition to its default has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

fn style() -> Style {
    Style { color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
}

fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// qmd shows on-disk paths as `./rel` when under the current directory.
fn display_path(source: &str) -> String {
    if let Ok(cwd) = std::env::current_dir()
        && let Some(rest) = source.strip_prefix(&format!("{}/", cwd.display()))
    {
        return format!("./{rest}");
    }
    source.to_string()
}

/// `--chunk-strategy`, with qmd's error for a value it does not take.
fn chunk_strategy(value: Option<&str>) -> Result<Option<bindings::ChunkStrategy>> {
    let Some(value) = value else { return Ok(None) };
    Ok(Some(match qmd_core::chunk::ChunkStrategy::parse(value).map_err(|e| anyhow!(e))? {
        qmd_core::chunk::ChunkStrategy::Regex => bindings::ChunkStrategy::Regex,
        qmd_core::chunk::ChunkStrategy::Auto => bindings::ChunkStrategy::Auto,
    }))
}

/// Result limit and engine options shared by `search` and `query`.
fn search_options(args: &SearchArgs, format: Format, all_limit: u32, min_score: f64) -> bindings::SearchOptions {
    let limit = if args.all {
        all_limit
    } else {
        let default = if matches!(format, Format::Json | Format::Files) { 20 } else { 5 };
        // qmd reads `-n 0` as "not given".
        let limit = args.limit.filter(|&n| n > 0).unwrap_or(default);
        // Past 32 bits means "all of them", not a wrap to 0.
        u32::try_from(limit).unwrap_or(u32::MAX)
    };
    bindings::SearchOptions {
        collections: args.collections.clone(),
        limit,
        min_score: args.min_score.unwrap_or(min_score),
        snippet_max_len: if format == Format::Json { 300 } else { 500 },
        full: args.full,
        filter: args.filter.clone(),
    }
}

fn print_hits(mut hits: Vec<bindings::SearchHit>, args: &SearchArgs, format: Format, min_score: f64) -> Result<()> {
    if args.output.full_path {
        for hit in &mut hits {
            hit.source_path = display_path(&hit.source_path);
        }
    }
    let view = SearchView {
        full: args.full,
        line_numbers: args.line_numbers,
        full_path: args.output.full_path,
        min_score_filtered: hits.is_empty() && min_score > 0.0,
    };
    print(&output::render_search(&hits, format, &view, &style()))
}

fn search(session: &Session, args: SearchArgs) -> Result<ExitCode> {
    let format = args.output.format()?;
    let query = args.query.join(" ");
    let options = search_options(&args, format, 100_000, 0.0);
    let hits = session.read(|store, engine| engine_result(engine.call_search(store, &query, &options)))?;
    print_hits(hits, &args, format, options.min_score)?;
    Ok(ExitCode::SUCCESS)
}

/// qmd's index health notes before a vector search (contents without
/// vectors, a stale index); says whether there are any vectors to search.
fn index_health_notes(
    store: &mut wasmtime::Store<crate::component::HostState>,
    engine: &bindings::Engine,
) -> Result<bool> {
    let status = engine_result(engine.call_status(store))?;
    let (pending, total) = (status.needs_embedding, status.total_documents);
    if pending > 0 && total > 0 {
        let percent = (f64::from(pending) / f64::from(total) * 100.0).round();
        if percent >= 10.0 {
            eprintln!("Warning: {pending} documents ({percent}%) need embeddings. Run 'qmd embed' for better results.");
        } else {
            eprintln!("Tip: {pending} documents need embeddings. Run 'qmd embed' to index them.");
        }
    }
    // qmd's staleness hint: the newest document is two weeks old or more.
    if let Some(newest) = status.newest_document {
        let days = (crate::clock::now_ms() - newest).div_euclid(86_400_000);
        if days >= 14 {
            eprintln!("Tip: Index last updated {days} days ago. Run 'qmd update' to refresh.");
        }
    }
    Ok(status.has_vector_index)
}

fn vsearch(session: &Session, args: SearchArgs) -> Result<ExitCode> {
    let format = args.output.format()?;
    let query = args.query.join(" ");
    let options = search_options(&args, format, 500, 0.3);
    let hits = session.read(|store, engine| {
        // Nothing embedded: nothing to find, and no model to load for it.
        if !index_health_notes(store, engine)? {
            return Ok(Vec::new());
        }
        let narrate = Some(output::Narration::Vsearch);
        store.data_mut().set_expansion(crate::component::Expansion { off: false, narrate });
        engine_result(engine.qmd_engine_vectors().call_vsearch(store, &query, &options))
    })?;
    // qmd's vector search filters by score itself: an empty answer is
    // plain "No results found." whatever the threshold.
    print_hits(hits, &args, format, 0.0)?;
    Ok(ExitCode::SUCCESS)
}

fn query(session: &Session, args: QueryArgs) -> Result<ExitCode> {
    let format = args.search.output.format()?;
    let request = bindings::QueryRequest {
        query: Some(args.search.query.join(" ")),
        parse_document: true,
        searches: Vec::new(),
        options: search_options(&args.search, format, 500, 0.0),
        intent: args.intent,
        candidate_limit: args.candidate_limit,
        rerank: !args.no_rerank,
        chunk_strategy: chunk_strategy(args.chunk_strategy.as_deref())?,
    };
    let result = session.read(|store, engine| {
        index_health_notes(store, engine)?;
        let narrate = Some(output::Narration::Query);
        store.data_mut().set_expansion(crate::component::Expansion { off: args.no_expand, narrate });
        engine_result(engine.call_query(store, &request))
    })?;
    if args.explain {
        eprint!("{}", output::render_explain(&result));
    } else if let Some(score) = result.strong_signal {
        eprintln!("{}", output::strong_signal(score));
    }
    let min_score = request.options.min_score;
    print_hits(result.hits.into_iter().map(|h| h.hit).collect(), &args.search, format, min_score)?;
    Ok(ExitCode::SUCCESS)
}

fn get(session: &Session, args: GetArgs) -> Result<ExitCode> {
    // The engine finds the document and returns it whole; the lines are
    // chosen here, so a range past the end or of 0 lines prints no invented
    // `N: ` line (qmd printed `FILE:999` as `999: `).
    let (_, suffix_from, suffix_count) = qmd_core::lookup::split_line_suffix(args.file.trim());
    let (from, count) = (args.from.or(suffix_from), args.lines.or(suffix_count));
    let request =
        bindings::GetRequest { file: args.file, from_line: Some(1), max_lines: Some(u32::MAX), line_numbers: false };
    let result =
        session.read(|store, engine| engine.call_get(store, &request).map_err(crate::component::call_failed))?;
    match result {
        Ok(mut doc) => {
            if args.full_path {
                doc.source_path = display_path(&doc.source_path);
            }
            let lines = qmd_core::document::slice_lines(&doc.body, from, count, !args.no_line_numbers);
            if lines.is_none() && count != Some(0) {
                let name = output::escape_controls(&format!("qmd://{}/{}", doc.collection, doc.path)).into_owned();
                let total = doc.body.split('\n').count();
                eprintln!("{name} ends at line {total}: nothing from line {}.", from.unwrap_or(1).max(1));
            }
            print(&output::render_get(&doc, lines.as_deref(), args.full_path))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(GetError::NotFound(info)) => {
            eprintln!("Document not found: {}", escape_controls(&info.query));
            if !info.similar.is_empty() {
                eprintln!("Similar files:");
                for path in &info.similar {
                    eprintln!("  {}", escape_controls(path));
                }
            }
            Ok(ExitCode::FAILURE)
        }
        Err(GetError::Excluded(info)) => {
            eprintln!(
                "Document is excluded by ignore rule: {}\nCollection: {}\nMatched path: {}\nIgnore rule: {}",
                escape_controls(&info.query),
                escape_controls(&info.collection),
                escape_controls(&info.matched_path),
                escape_controls(&info.rule)
            );
            Ok(ExitCode::FAILURE)
        }
        Err(GetError::Failed(e)) => Err(anyhow!(e.message)),
    }
}

fn multi_get(session: &Session, args: MultiGetArgs) -> Result<ExitCode> {
    let format = args.output.format()?;
    let request = bindings::MultiGetRequest {
        pattern: args.pattern,
        max_lines: args.lines,
        max_bytes: args.max_bytes,
        line_numbers: !args.no_line_numbers,
    };
    let mut result = session.read(|store, engine| engine_result(engine.call_multi_get(store, &request)))?;
    // One line each: a name holding a newline must not forge another.
    for message in &result.errors {
        eprintln!("{}", escape_controls(message));
    }
    // A comma list whose names are all missing is not an error in qmd
    // (each is reported); a pattern that matches nothing is.
    if result.entries.is_empty() && !result.errors.is_empty() && !result.by_list {
        return Ok(ExitCode::FAILURE);
    }
    if args.output.full_path {
        for entry in &mut result.entries {
            entry.doc.source_path = display_path(&entry.doc.source_path);
        }
    }
    print(&output::render_multi_get(&result.entries, format, result.by_list, args.output.full_path))?;
    Ok(ExitCode::SUCCESS)
}
