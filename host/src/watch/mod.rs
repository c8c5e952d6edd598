//! `qmd update --watch`: the collection folders watched, an update of
//! what changed before, then each batch of changes indexed by one
//! `update` of the collections it touched (one writer, the index lock; one
//! atomic commit per batch), until Ctrl-C or SIGTERM. The update itself
//! decides what changed (size and modification time, then content hash),
//! so an event too many costs a `stat`, never a re-index, and an event
//! lost (an OS queue overflow) costs nothing but a full look.

mod debounce;
mod events;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::manage;
use crate::session::Session;
use debounce::Debouncer;
use events::{Roots, Signal};
use qmd_core::display::escape_controls as shown;

/// How often the collection folders themselves are looked at (one `stat`
/// each): a folder that vanished, came back or was replaced.
const CHECK_EVERY: Duration = Duration::from_secs(1);

pub struct WatchOptions {
    /// Quiet time before a batch is indexed.
    pub debounce: Duration,
    /// Poll at this interval instead of waiting for the OS's events.
    pub poll: Option<Duration>,
    /// Embed new content after each batch.
    pub embed: bool,
}

/// Where a watcher reports: the CLI prints `update`'s reports on stdout;
/// a server (whose stdout may be the MCP channel) one line per batch on
/// stderr.
#[derive(Clone, Copy, PartialEq)]
enum Voice {
    Cli,
    Server,
}

/// `qmd update --watch`.
pub fn run(session: &Session, trusted: bool, options: &WatchOptions) -> Result<ExitCode> {
    let (tx, rx) = mpsc::channel();
    stop_on_signals(tx.clone())?;
    let catch_up = || {
        manage::update(session, false, trusted)?;
        if options.embed {
            embed(session, Voice::Cli);
        }
        Ok(())
    };
    watch(session, trusted, options, Voice::Cli, (tx, rx), catch_up)
}

/// A watcher beside a server (`qmd mcp --watch`): on its own thread until
/// the handle is dropped, which lets the batch in hand finish.
pub struct Background {
    stop: Sender<Signal>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.stop.send(Signal::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn spawn(session: Session, trusted: bool, options: WatchOptions) -> Background {
    let (tx, rx) = mpsc::channel();
    let stop = tx.clone();
    let thread = std::thread::spawn(move || {
        let catch_up = || {
            let roots = manage::updatable_roots(&session, trusted)?;
            index(&session, roots.into_iter().map(|c| c.name).collect(), options.embed, Voice::Server);
            Ok(())
        };
        if let Err(e) = watch(&session, trusted, &options, Voice::Server, (tx, rx), catch_up) {
            eprintln!("qmd watch: stopped: {e:#}");
        }
    });
    Background { stop, thread: Some(thread) }
}

/// Watches the collections `update` scans until told to stop, indexing
/// each batch of changes. `catch_up` indexes what changed while nothing
/// was watching; it runs once the watches are in place, so a change made
/// during it, or just before the first event could be seen, is not lost.
fn watch(
    session: &Session,
    trusted: bool,
    options: &WatchOptions,
    voice: Voice,
    (tx, rx): (Sender<Signal>, mpsc::Receiver<Signal>),
    catch_up: impl FnOnce() -> Result<()>,
) -> Result<ExitCode> {
    let roots: Vec<(String, PathBuf)> =
        manage::updatable_roots(session, trusted)?.into_iter().map(|c| (c.name, PathBuf::from(c.path))).collect();
    if roots.is_empty() {
        say(voice, "No collections to watch.");
        return Ok(ExitCode::FAILURE);
    }
    let mut watched = Roots::watch(&roots, options.poll, tx)?;
    catch_up()?;
    say(voice, &format!("Watching {} collection(s) with {} (Ctrl-C to stop)", roots.len(), watched.mode));
    let mut pending = Debouncer::new(options.debounce);
    let mut last_check = Instant::now();
    loop {
        let until_check = CHECK_EVERY.saturating_sub(last_check.elapsed());
        let wait = pending.wait(Instant::now()).map_or(until_check, |w| w.min(until_check));
        match rx.recv_timeout(wait) {
            Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Signal::Changed(path)) => {
                // The index's own files, when it lives inside a collection.
                if !path.starts_with(&session.index_dir)
                    && let Some(name) = watched.collection_of(&path)
                {
                    pending.changed(name, Instant::now());
                }
            }
            Ok(Signal::Rescan) => watched.names().for_each(|name| pending.changed(name, Instant::now())),
            Err(RecvTimeoutError::Timeout) => {}
        }
        if last_check.elapsed() >= CHECK_EVERY {
            for name in watched.check() {
                pending.changed(&name, Instant::now());
            }
            last_check = Instant::now();
        }
        if let Some(batch) = pending.ready(Instant::now()) {
            index(session, batch, options.embed, voice);
        }
    }
    // Changes seen but not yet indexed are not left behind.
    if let Some(batch) = pending.ready(Instant::now() + Duration::from_secs(3600)) {
        index(session, batch, options.embed, voice);
    }
    say(voice, "Stopped watching.");
    Ok(ExitCode::SUCCESS)
}

fn say(voice: Voice, line: &str) {
    match voice {
        Voice::Cli => println!("{line}"),
        Voice::Server => eprintln!("qmd watch: {line}"),
    }
}

/// One batch: one update of the changed collections, then (with `--embed`)
/// their new content embedded. A failure is reported and watching goes on.
fn index(session: &Session, collections: Vec<String>, embed_after: bool, voice: Voice) {
    let when = crate::clock::clock(crate::clock::now_ms());
    if voice == Voice::Cli {
        println!("\n[{when} UTC] Changes in {}", collections.join(", "));
    }
    match manage::run_update(session, collections, false) {
        Ok((report, roots)) => {
            if voice == Voice::Cli {
                manage::print_report(&report, &roots);
            } else {
                for c in &report.collections {
                    say(
                        voice,
                        &format!(
                            "[{when} UTC] {}: {} new, {} updated, {} unchanged, {} removed",
                            shown(&c.name),
                            c.added,
                            c.updated,
                            c.unchanged,
                            c.removed
                        ),
                    );
                }
                manage::print_file_lines(&report, &roots);
            }
            let changed = report.collections.iter().any(|c| c.added + c.updated > 0);
            if embed_after && changed {
                embed(session, voice);
            }
        }
        Err(e) => eprintln!("Error: {e:#} (still watching)"),
    }
}

fn embed(session: &Session, voice: Voice) {
    let args = crate::cli::args::EmbedArgs {
        force: false,
        collection: None,
        max_docs_per_batch: 64,
        max_batch_mb: 64,
        timeout: "0".into(),
        chunk_strategy: None,
    };
    let result = match voice {
        Voice::Cli => manage::embed(session, args).map(|_| ()),
        Voice::Server => manage::embed_quietly(session, &args).map(|report| {
            if report.chunks > 0 {
                say(voice, &format!("embedded {} chunks from {} documents", report.chunks, report.docs));
            }
        }),
    };
    if let Err(e) = result {
        eprintln!("Error: embedding failed: {e:#} (still watching)");
    }
}

/// The first Ctrl-C or SIGTERM stops the loop after the batch in hand; a
/// second one exits at once.
fn stop_on_signals(tx: Sender<Signal>) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        let mut seen = 0;
        for signal in signals.forever() {
            seen += 1;
            if seen > 1 {
                std::process::exit(128 + signal);
            }
            eprintln!("Stopping after the batch in hand (again to stop now)...");
            let _ = tx.send(Signal::Stop);
        }
    });
    Ok(())
}
