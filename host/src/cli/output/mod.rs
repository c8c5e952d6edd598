//! Stdout renderings of `search`/`vsearch`/`query`, `get` and `multi-get`,
//! byte for byte as qmd 2.8.3 prints them (recorded under
//! `tests/fixtures/peer/out/`).
//!
//! Every `render_*` function returns the complete stdout text, trailing
//! newline included (qmd prints with `console.log`), so callers `print!` it.
//! The quirks of upstream are kept on purpose, because scripts parse this
//! output: `md`/`xml`/`json`
//! number snippet lines from 1 while `cli`/`csv` number them from the hit's
//! line, and `files` drops the docid under `--full-path`. Where a quirk is a
//! hazard we differ: `xml` escapes every field (qmd copies text in raw, so
//! a page could forge entries), and line ranges print no invented lines.

use std::borrow::Cow;

mod cli;
mod csv;
mod escape;
mod explain;
mod files;
mod json;
mod md;
mod xml;

use cli::*;
use csv::*;
use escape::*;
use files::*;
use json::*;
use md::*;
use xml::*;

pub use escape::escape_controls;
pub use explain::{EXPANDING, Narration, render_expansion, render_explain, strong_signal};

use crate::component::bindings::{Document, MultiGetEntry, SearchHit};

/// Output format of `--format` (and its legacy `--json`/`--csv`/… aliases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Cli,
    Json,
    Csv,
    Md,
    Xml,
    Files,
}

/// Terminal styling; the caller enables colour only when stdout is a TTY and
/// `NO_COLOR` is unset.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// The escape sequence `code` when colouring, else nothing, so the plain
    /// output is the coloured one with the escapes left out.
    fn paint(&self, code: &'static str) -> &'static str {
        if self.color { code } else { "" }
    }
}

const RESET: &str = "\x1b[0m";
const DIM: &str = "\x1b[2m";
const BOLD: &str = "\x1b[1m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const GREEN: &str = "\x1b[32m";

/// Options of a search rendering.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchView {
    /// `--full`: whole bodies instead of snippets.
    pub full: bool,
    /// `--line-numbers`.
    pub line_numbers: bool,
    /// `--full-path`: show `source_path` (rows with an empty one keep
    /// `qmd://` and their docid, as upstream does for unresolved files).
    pub full_path: bool,
    /// The hits were all dropped by `--min-score`; the empty message differs.
    pub min_score_filtered: bool,
}

/// Renders search results (already filtered and limited) in `format`,
/// including the empty-result forms.
pub fn render_search(hits: &[SearchHit], format: Format, view: &SearchView, style: &Style) -> String {
    if hits.is_empty() {
        return render_empty_search(format, view.min_score_filtered);
    }
    match format {
        Format::Cli => search_cli(hits, view, style),
        Format::Json => search_json(hits, view),
        Format::Csv => search_csv(hits, view),
        Format::Md => search_md(hits, view),
        Format::Xml => search_xml(hits, view),
        Format::Files => search_files(hits, view),
    }
}

/// Renders `qmd multi-get` output. `via_list`: the pattern was a comma list
/// or a docid, whose entries upstream names by `qmd://` path; a glob names
/// them by collection-relative path.
pub fn render_multi_get(entries: &[MultiGetEntry], format: Format, via_list: bool, full_path: bool) -> String {
    let rows: Vec<MultiRow> = entries.iter().map(|e| MultiRow::new(e, via_list, full_path)).collect();
    match format {
        Format::Cli => multi_cli(&rows),
        Format::Json => multi_json(&rows),
        Format::Csv => multi_csv(&rows),
        Format::Md => multi_md(&rows),
        Format::Xml => multi_xml(&rows),
        Format::Files => multi_files(&rows),
    }
}

/// Renders `qmd get` output: header `qmd://c/p  #docid` (or `source_path`
/// under `--full-path`), optional `Folder Context: …`, `---`, blank, then
/// the selected lines (`qmd_core::document::slice_lines`). With no line selected (a range
/// past the end, or `-l 0`) nothing follows the blank: qmd printed an
/// invented `N: ` line there.
pub fn render_get(doc: &Document, lines: Option<&str>, full_path: bool) -> String {
    let header = if full_path && !doc.source_path.is_empty() {
        doc.source_path.clone()
    } else if doc.docid.is_empty() {
        qmd_uri(&doc.collection, &doc.path)
    } else {
        format!("{}  #{}", qmd_uri(&doc.collection, &doc.path), doc.docid)
    };
    let mut out = escape_controls(&header).into_owned() + "\n";
    if let Some(ctx) = nonempty(&doc.context) {
        out += &format!("Folder Context: {}\n", escape_controls_in_text(ctx));
    }
    out += "---\n\n";
    match lines {
        Some(lines) => out + lines + "\n",
        None => out,
    }
}

/// Prefixes each line with `N: `, counting from `start` (qmd's
/// `addLineNumbers`; an empty text is one empty line).
pub use qmd_core::document::number_lines as add_line_numbers;

// ---------------------------------------------------------------------------
// Search

/// What a search row is called and whether its docid is still shown: with
/// `--full-path` the on-disk path replaces both, when there is one.
fn search_ident(hit: &SearchHit, view: &SearchView) -> (String, bool) {
    if view.full_path && !hit.source_path.is_empty() {
        (hit.source_path.clone(), false)
    } else {
        (qmd_uri(&hit.collection, &hit.path), true)
    }
}

/// The text a row shows: the body with `--full`, else the snippet.
fn search_content<'a>(hit: &'a SearchHit, view: &SearchView) -> &'a str {
    if view.full { hit.body.as_deref().unwrap_or_default() } else { &hit.snippet }
}

/// The content, numbered from `start` when `--line-numbers` is on.
fn numbered<'a>(content: &'a str, view: &SearchView, start: u32) -> Cow<'a, str> {
    if view.line_numbers { Cow::Owned(add_line_numbers(content, start)) } else { Cow::Borrowed(content) }
}

/// cli/csv number snippets from the hit's line, bodies from 1.
fn cli_start(hit: &SearchHit, view: &SearchView) -> u32 {
    if view.full { 1 } else { hit.line }
}

fn render_empty_search(format: Format, min_score_filtered: bool) -> String {
    let text = match format {
        Format::Json => "[]\n",
        Format::Csv => "docid,score,file,title,context,line,snippet\n",
        Format::Xml => "<results></results>\n",
        Format::Md | Format::Files => "",
        Format::Cli if min_score_filtered => "No results found above minimum score threshold.\n",
        Format::Cli => "No results found.\n",
    };
    text.to_string()
}

// ---------------------------------------------------------------------------
// Multi-get

/// One multi-get entry as upstream's formatters see it.
struct MultiRow<'a> {
    /// Name shown: `source_path` under `--full-path`, else `display`.
    ident: String,
    /// `qmd://c/p` for lists, `p` for globs; also used in the skip hint.
    display: String,
    /// Shown unless `--full-path` replaced it.
    docid: Option<&'a str>,
    title: String,
    context: Option<&'a str>,
    /// Full reason, with the `qmd get` hint.
    skipped: Option<String>,
    body: &'a str,
}

impl<'a> MultiRow<'a> {
    fn new(entry: &'a MultiGetEntry, via_list: bool, full_path: bool) -> Self {
        let doc = &entry.doc;
        let display = if via_list { qmd_uri(&doc.collection, &doc.path) } else { doc.path.clone() };
        let resolved = full_path && !doc.source_path.is_empty();
        let basename = display.rsplit('/').next().filter(|b| !b.is_empty()).unwrap_or(&display).to_string();
        // Upstream titles skipped files by basename: their title is never read.
        let title = if entry.skipped.is_some() || doc.title.is_empty() { basename } else { doc.title.clone() };
        MultiRow {
            ident: if resolved { doc.source_path.clone() } else { display.clone() },
            docid: Some(doc.docid.as_str()).filter(|d| !resolved && !d.is_empty()),
            title,
            context: nonempty(&doc.context),
            skipped: entry.skipped.as_deref().map(|r| skip_reason(r, &display)),
            body: &doc.body,
            display,
        }
    }
}

/// The engine's reason plus the CLI's hint on how to get the file anyway.
fn skip_reason(reason: &str, display: &str) -> String {
    if reason.contains("qmd get") {
        return reason.to_string();
    }
    format!("{}. Use 'qmd get {display}' to retrieve.", reason.trim_end_matches('.'))
}

// ---------------------------------------------------------------------------
// Shared helpers

#[cfg(test)]
mod tests;
