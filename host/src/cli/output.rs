//! Stdout renderings of `search`/`vsearch`/`query`, `get` and `multi-get`,
//! byte for byte as qmd 2.8.3 prints them (recorded under
//! `tests/fixtures/peer/out/`).
//!
//! Every `render_*` function returns the complete stdout text, trailing
//! newline included (qmd prints with `console.log`), so callers `print!` it.
//! The quirks of upstream are kept on purpose, because scripts parse this
//! output: search `xml` escapes only `"` in attributes, `md`/`xml`/`json`
//! number snippet lines from 1 while `cli`/`csv` number them from the hit's
//! line, and `files` drops the docid under `--full-path`.

use std::borrow::Cow;

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
/// under `--full-path`), optional `Folder Context: …`, `---`, blank, body.
/// The body arrives already sliced and numbered by the engine.
pub fn render_get(doc: &Document, full_path: bool) -> String {
    let header = if full_path && !doc.source_path.is_empty() {
        doc.source_path.clone()
    } else if doc.docid.is_empty() {
        qmd_uri(&doc.collection, &doc.path)
    } else {
        format!("{}  #{}", qmd_uri(&doc.collection, &doc.path), doc.docid)
    };
    let mut out = escape_controls(&header).into_owned() + "\n";
    if let Some(ctx) = nonempty(&doc.context) {
        out += &format!("Folder Context: {ctx}\n");
    }
    out + "---\n\n" + &doc.body + "\n"
}

/// Prefixes each line with `N: `, counting from `start` (qmd's
/// `addLineNumbers`; an empty text is one empty line).
pub fn add_line_numbers(text: &str, start: u32) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| format!("{}: {line}", u64::from(start) + i as u64))
        .collect::<Vec<_>>()
        .join("\n")
}

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

fn search_cli(hits: &[SearchHit], view: &SearchView, style: &Style) -> String {
    let blocks: Vec<String> = hits.iter().map(|hit| cli_block(hit, view, style)).collect();
    // console.log('\n') between results: two blank lines.
    blocks.join("\n\n")
}

fn cli_block(hit: &SearchHit, view: &SearchView, style: &Style) -> String {
    let (reset, dim, bold) = (style.paint(RESET), style.paint(DIM), style.paint(BOLD));
    let (ident, show_docid) = search_ident(hit, view);
    let ident = escape_controls(&ident);
    // `:LINE` only when a query term occurs in the snippet (engine decides).
    let line_info = if hit.line_matched { format!(":{}", hit.line) } else { String::new() };
    let docid =
        if show_docid && !hit.docid.is_empty() { format!(" {dim}#{}{reset}", hit.docid) } else { String::new() };
    let mut out = format!("{}{ident}{dim}{line_info}{reset}{docid}\n", style.paint(CYAN));
    if !hit.title.is_empty() {
        out += &format!("{bold}Title: {}{reset}\n", escape_controls(&hit.title));
    }
    if let Some(ctx) = nonempty(&hit.context) {
        out += &format!("{dim}Context: {}{reset}\n", escape_controls_in_text(ctx));
    }
    out += &format!("Score: {bold}{}{reset}\n\n", format_score(hit.score, style));
    let content = numbered(search_content(hit, view), view, cli_start(hit, view));
    out + &escape_controls_in_text(&content) + "\n"
}

/// `NN%` right-aligned to three columns, coloured by strength.
fn format_score(score: f64, style: &Style) -> String {
    let pct = format!("{:>3}%", to_fixed(score * 100.0, 0));
    let color = if score >= 0.7 {
        GREEN
    } else if score >= 0.4 {
        YELLOW
    } else {
        DIM
    };
    format!("{}{pct}{}", style.paint(color), style.paint(RESET))
}

fn search_json(hits: &[SearchHit], view: &SearchView) -> String {
    let objects: Vec<Vec<(&str, String)>> = hits.iter().map(|hit| search_json_object(hit, view)).collect();
    json_array(&objects) + "\n"
}

fn search_json_object(hit: &SearchHit, view: &SearchView) -> Vec<(&'static str, String)> {
    let (ident, show_docid) = search_ident(hit, view);
    let mut fields = Vec::new();
    if show_docid && !hit.docid.is_empty() {
        fields.push(("docid", json_str(&format!("#{}", hit.docid))));
    }
    fields.push(("score", js_number(js_round(hit.score * 100.0) / 100.0)));
    fields.push(("file", json_str(&ident)));
    fields.push(("line", hit.line.to_string()));
    fields.push(("title", json_str(&hit.title)));
    if let Some(ctx) = nonempty(&hit.context) {
        fields.push(("context", json_str(ctx)));
    }
    // JSON numbers from 1 and leaves out empty texts (JS truthiness).
    let content = search_content(hit, view);
    if !content.is_empty() {
        let key = if view.full { "body" } else { "snippet" };
        fields.push((key, json_str(&numbered(content, view, 1))));
    }
    fields
}

fn search_csv(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::from("docid,score,file,title,context,line,snippet\n");
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let docid = if show_docid && !hit.docid.is_empty() { format!("#{}", hit.docid) } else { String::new() };
        let content = numbered(search_content(hit, view), view, cli_start(hit, view));
        out += &format!(
            "{docid},{},{},{},{},{},{}\n",
            to_fixed(hit.score, 4),
            escape_csv(&ident),
            escape_csv(&hit.title),
            escape_csv(nonempty(&hit.context).unwrap_or_default()),
            hit.line,
            escape_csv(&content),
        );
    }
    out
}

fn search_md(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::new();
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let heading = if hit.title.is_empty() { ident.as_str() } else { hit.title.as_str() };
        out += &format!("---\n# {heading}\n**file:** `{ident}`\n");
        if show_docid && !hit.docid.is_empty() {
            out += &format!("**docid:** `#{}`\n", hit.docid);
        }
        if let Some(ctx) = nonempty(&hit.context) {
            out += &format!("**context:** {ctx}\n");
        }
        out += &format!("\n{}\n\n", numbered(search_content(hit, view), view, 1));
    }
    out
}

fn search_xml(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::new();
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let docid = if show_docid { format!(" docid=\"#{}\"", hit.docid) } else { String::new() };
        // Upstream escapes only `"`, and only in these two attributes.
        let title = if hit.title.is_empty() { String::new() } else { format!(" title=\"{}\"", quot(&hit.title)) };
        let context = nonempty(&hit.context).map(|c| format!(" context=\"{}\"", quot(c))).unwrap_or_default();
        let content = numbered(search_content(hit, view), view, 1);
        out += &format!("<file{docid} name=\"{ident}\"{title}{context}>\n{content}\n</file>\n\n");
    }
    out
}

fn search_files(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::new();
    for hit in hits {
        let (ident, _) = search_ident(hit, view);
        let ident = escape_controls(&ident);
        let ctx = nonempty(&hit.context).map(|c| quoted_context(&escape_controls_in_text(c))).unwrap_or_default();
        let score = to_fixed(hit.score, 2);
        // Upstream drops the docid under --full-path even for unresolved rows.
        if view.full_path {
            out += &format!("{score},{ident}{ctx}\n");
        } else {
            out += &format!("#{},{score},{ident}{ctx}\n", hit.docid);
        }
    }
    out
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

fn multi_cli(rows: &[MultiRow]) -> String {
    let rule = "=".repeat(60);
    let mut out = String::new();
    for row in rows {
        let id = row.docid.map(|d| format!("  #{d}")).unwrap_or_default();
        out += &format!("\n{rule}\nFile: {}{id}\n{rule}\n\n", escape_controls(&row.ident));
        if let Some(reason) = &row.skipped {
            out += &format!("[SKIPPED: {reason}]\n");
            continue;
        }
        if let Some(ctx) = row.context {
            out += &format!("Folder Context: {ctx}\n---\n\n");
        }
        out += row.body;
        out += "\n";
    }
    out
}

fn multi_json(rows: &[MultiRow]) -> String {
    let objects: Vec<Vec<(&str, String)>> = rows.iter().map(multi_json_object).collect();
    json_array(&objects) + "\n"
}

fn multi_json_object(row: &MultiRow) -> Vec<(&'static str, String)> {
    let mut fields = vec![("file", json_str(&row.ident))];
    if let Some(docid) = row.docid {
        fields.push(("docid", json_str(&format!("#{docid}"))));
    }
    fields.push(("title", json_str(&row.title)));
    if let Some(ctx) = row.context {
        fields.push(("context", json_str(ctx)));
    }
    match &row.skipped {
        Some(reason) => {
            fields.push(("skipped", "true".to_string()));
            fields.push(("reason", json_str(reason)));
        }
        None => fields.push(("body", json_str(row.body))),
    }
    fields
}

fn multi_csv(rows: &[MultiRow]) -> String {
    let mut out = String::from("docid,file,title,context,skipped,body\n");
    for row in rows {
        let docid = row.docid.map(|d| format!("#{d}")).unwrap_or_default();
        let skipped = if row.skipped.is_some() { "true" } else { "false" };
        let body = row.skipped.as_deref().unwrap_or(row.body);
        let fields: [&str; 6] =
            [docid.as_str(), &row.ident, &row.title, row.context.unwrap_or_default(), skipped, body];
        out += &fields.map(escape_csv).join(",");
        out += "\n";
    }
    out
}

fn multi_md(rows: &[MultiRow]) -> String {
    let mut out = String::new();
    for row in rows {
        out += &format!("## {}\n\n", row.ident);
        if let Some(docid) = row.docid {
            out += &format!("**docid:** `#{docid}`\n\n");
        }
        if !row.title.is_empty() && row.title != row.display {
            out += &format!("**Title:** {}\n\n", row.title);
        }
        if let Some(ctx) = row.context {
            out += &format!("**Context:** {ctx}\n\n");
        }
        match &row.skipped {
            Some(reason) => out += &format!("> {reason}\n\n"),
            None => out += &format!("```\n{}\n```\n\n", row.body),
        }
    }
    out
}

fn multi_xml(rows: &[MultiRow]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<documents>\n");
    for row in rows {
        let docid = row.docid.map(|d| format!(" docid=\"#{d}\"")).unwrap_or_default();
        out += &format!("  <document{docid}>\n");
        out += &format!("    <file>{}</file>\n", escape_xml(&row.ident));
        out += &format!("    <title>{}</title>\n", escape_xml(&row.title));
        if let Some(ctx) = row.context {
            out += &format!("    <context>{}</context>\n", escape_xml(ctx));
        }
        match &row.skipped {
            Some(reason) => {
                out += "    <skipped>true</skipped>\n";
                out += &format!("    <reason>{}</reason>\n", escape_xml(reason));
            }
            None => out += &format!("    <body>{}</body>\n", escape_xml(row.body)),
        }
        out += "  </document>\n";
    }
    out + "</documents>\n"
}

fn multi_files(rows: &[MultiRow]) -> String {
    let mut out = String::new();
    for row in rows {
        let id = row.docid.map(|d| format!("#{d},")).unwrap_or_default();
        let ctx = row.context.map(|c| quoted_context(&escape_controls_in_text(c))).unwrap_or_default();
        let status = if row.skipped.is_some() { ",[SKIPPED]" } else { "" };
        out += &format!("{id}{}{ctx}{status}\n", escape_controls(&row.ident));
    }
    out
}

// ---------------------------------------------------------------------------
// Shared helpers

/// `text` with control characters made visible (`\x1b`, `\r`, `\n`, …), for
/// one-line fields of human and line formats: a file name or title must not
/// move the cursor, recolour or rewrite the user's terminal, or forge a line.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// As [`escape_controls`], keeping line breaks and tabs (snippets, bodies).
fn escape_controls_in_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

fn qmd_uri(collection: &str, path: &str) -> String {
    format!("qmd://{collection}/{path}")
}

/// Upstream tests contexts for truthiness, so an empty one counts as none.
fn nonempty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// RFC 4180 quoting, applied only when the field needs it.
fn escape_csv(value: &str) -> Cow<'_, str> {
    if value.contains([',', '"', '\n']) {
        Cow::Owned(format!("\"{}\"", value.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(value)
    }
}

/// The trailing `,"context"` of the `files` format: always quoted.
fn quoted_context(ctx: &str) -> String {
    format!(",\"{}\"", ctx.replace('"', "\"\""))
}

fn quot(value: &str) -> String {
    value.replace('"', "&quot;")
}

fn escape_xml(value: &str) -> String {
    value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

fn json_str(value: &str) -> String {
    // serde_json escapes exactly as JSON.stringify does for valid UTF-8.
    serde_json::Value::from(value).to_string()
}

/// `JSON.stringify(objects, null, 2)` for flat objects whose values are
/// already JSON text; hand-written because serde_json's map sorts keys.
fn json_array(objects: &[Vec<(&str, String)>]) -> String {
    if objects.is_empty() {
        return "[]".to_string();
    }
    let items: Vec<String> = objects
        .iter()
        .map(|fields| {
            let lines: Vec<String> = fields.iter().map(|(k, v)| format!("    {}: {v}", json_str(k))).collect();
            format!("  {{\n{}\n  }}", lines.join(",\n"))
        })
        .collect();
    format!("[\n{}\n]", items.join(",\n"))
}

/// `Math.round`: halves go up, also for negative numbers.
fn js_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

/// A number as JavaScript prints it, for the small values used here
/// (Rust's `Display` also drops `.0` and picks the shortest round trip).
fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string();
    }
    if x == 0.0 {
        // JS prints -0 as 0.
        return "0".to_string();
    }
    x.to_string()
}

/// `Number.prototype.toFixed`: Rust rounds exact decimal ties to even, JS
/// away from zero, so a tie is nudged up before formatting.
fn to_fixed(x: f64, digits: usize) -> String {
    let magnitude = x.abs();
    let magnitude = if is_decimal_tie(magnitude, digits) { magnitude.next_up() } else { magnitude };
    let sign = if x < 0.0 { "-" } else { "" };
    format!("{sign}{magnitude:.digits$}")
}

/// Whether `x` lies exactly halfway between two `digits`-place decimals.
/// 80 places hold the exact expansion of every double above 2^-27, and a
/// tie at four places or fewer is far above that.
fn is_decimal_tie(x: f64, digits: usize) -> bool {
    let exact = format!("{x:.80}");
    let Some((_, frac)) = exact.split_once('.') else {
        return false;
    };
    let rest = &frac[digits..];
    rest.starts_with('5') && rest[1..].bytes().all(|b| b == b'0')
}

/// `--explain`: what ran, then how each result was ranked.
pub fn render_explain(result: &crate::component::bindings::QueryResult) -> String {
    use crate::component::bindings::SearchType;
    let kind = |k: SearchType| match k {
        SearchType::Lex => "lex",
        SearchType::Vec => "vec",
        SearchType::Hyde => "hyde",
    };
    let mut out = String::new();
    if let Some(score) = result.strong_signal {
        out += &format!("Strong BM25 signal ({score:.2}) — skipping expansion\n");
    }
    if !result.expansion.is_empty() {
        out += "Expansion:\n";
        for s in &result.expansion {
            out += &format!("  ├─ {}: {}\n", kind(s.kind), s.query);
        }
    }
    if let Some(intent) = &result.intent {
        out += &format!("Intent: {intent}\n");
    }
    out += "Ranked lists:\n";
    for (i, list) in result.lists.iter().enumerate() {
        let scope = list.collection.as_deref().map(|c| format!(" in {c}")).unwrap_or_default();
        out += &format!(
            "  [{i}] {} {} \"{}\"{scope}: {} hits, weight {}\n",
            list.source, list.query_type, list.query, list.hits, list.weight
        );
    }
    for note in &result.notes {
        out += &format!("Note: {note}\n");
    }
    for h in &result.hits {
        out += &format!(
            "qmd://{}/{}  score {:.4} = position 1/{} (weight {:.2}); rrf {:.4} (top-rank bonus {:.2})",
            h.hit.collection, h.hit.path, h.hit.score, h.rrf_rank, h.blend_weight, h.rrf_score, h.top_rank_bonus
        );
        if let Some(rerank) = h.rerank_score {
            out += &format!("; rerank {rerank:.4}");
        }
        out.push('\n');
        for c in &h.contributions {
            out += &format!(
                "    list [{}] rank {} × weight {} → {:.4} (backend score {:.4})\n",
                c.list_index, c.rank, c.weight, c.rrf, c.backend_score
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOURNAL_CONTEXT: &str = "Personal knowledge base\n\nDaily journals";
    const KB: &str = "Personal knowledge base";
    const SRC_CONTEXT: &str = "Personal knowledge base\n\nSource code for error utilities";

    /// The stdout section of a recorded upstream run.
    fn recorded(name: &str) -> String {
        let path = format!("{}/../tests/fixtures/peer/out/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (_, rest) = text.split_once('\n').expect("command line");
        let end = rest.find("--- stderr ---\n").expect("stderr marker");
        rest[..end].to_string()
    }

    /// A file of the recorded corpus, as the engine would return its body.
    fn corpus(path: &str) -> String {
        let path = format!("{}/../tests/fixtures/peer/corpus/{path}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[allow(clippy::too_many_arguments)]
    fn hit(
        docid: &str,
        coll: &str,
        path: &str,
        title: &str,
        ctx: &str,
        score: f64,
        line: u32,
        snippet: &str,
    ) -> SearchHit {
        SearchHit {
            docid: docid.into(),
            collection: coll.into(),
            path: path.into(),
            title: title.into(),
            context: Some(ctx.into()),
            score,
            line,
            line_matched: true,
            snippet: snippet.into(),
            body: None,
            source_path: format!("/corpus/{coll}/{path}"),
        }
    }

    fn journal_hits() -> Vec<SearchHit> {
        let one = |docid, date, title, text, score| {
            let snippet = format!("@@ -1,3 @@ (0 before, 1 after)\n# {title}\n\n{text}");
            hit(docid, "notes", &format!("journals/{date}.md"), title, JOURNAL_CONTEXT, score, 1, &snippet)
        };
        vec![
            one("68db8b", "2025-05-02", "May 2 Journal", "Continued work on the index format.", 0.6490),
            one("0caf6d", "2025-05-01", "May 1 Journal", "Today I worked on the search engine.", 0.6489),
            one("c00322", "2025-04-30", "April 30 Journal", "Planned the week and reviewed open issues.", 0.6489),
        ]
    }

    fn view() -> SearchView {
        SearchView::default()
    }

    fn plain() -> Style {
        Style { color: false }
    }

    fn search(hits: &[SearchHit], format: Format, view: &SearchView) -> String {
        render_search(hits, format, view, &plain())
    }

    #[test]
    fn search_journal_every_format() {
        let hits = journal_hits();
        for (format, file) in [
            (Format::Cli, "search-journal.txt"),
            (Format::Json, "search-journal-json.txt"),
            (Format::Csv, "search-journal-csv.txt"),
            (Format::Md, "search-journal-md.txt"),
            (Format::Xml, "search-journal-xml.txt"),
            (Format::Files, "search-journal-files.txt"),
        ] {
            assert_eq!(search(&hits, format, &view()), recorded(file), "{file}");
        }
    }

    #[test]
    fn search_empty_forms() {
        assert_eq!(search(&[], Format::Cli, &view()), recorded("search-nothingmatches.txt"));
        assert_eq!(search(&[], Format::Json, &view()), recorded("search-nothingmatches-json.txt"));
        assert_eq!(search(&[], Format::Files, &view()), recorded("search-nothingmatches-files.txt"));
        let filtered = SearchView { min_score_filtered: true, ..view() };
        assert_eq!(search(&[], Format::Cli, &filtered), recorded("search-journal-min-score-0.99.txt"));
        assert_eq!(search(&[], Format::Csv, &view()), "docid,score,file,title,context,line,snippet\n");
        assert_eq!(search(&[], Format::Xml, &view()), "<results></results>\n");
        assert_eq!(search(&[], Format::Md, &view()), "");
    }

    #[test]
    fn search_line_numbers_start_at_hit_line() {
        let hits = [
            hit(
                "405518",
                "myproject",
                "src/errors.ts",
                "errors",
                SRC_CONTEXT,
                0.68,
                1,
                "@@ -1,3 @@ (0 before, 2 after)\nexport function handleError(err: Error) {\n  console.error(err.message);\n  throw err;",
            ),
            hit(
                "0160b9",
                "myproject",
                "docs/errors.md",
                "Error Handling Guide",
                KB,
                0.67,
                7,
                "@@ -6,4 @@ (5 before, 5 after)\n\nAll errors are passed to handleError, which logs the message and rethrows.\n\n## Best Practices",
            ),
        ];
        let numbered = SearchView { line_numbers: true, ..view() };
        assert_eq!(search(&hits, Format::Cli, &numbered), recorded("search-handleError-line-numbers.txt"));
    }

    #[test]
    fn search_full_prints_bodies() {
        let mut guide = hit("0160b9", "myproject", "docs/errors.md", "Error Handling Guide", KB, 0.85, 1, "");
        guide.body = Some(corpus("myproject/docs/errors.md"));
        let mut code = hit("405518", "myproject", "src/errors.ts", "errors", SRC_CONTEXT, 0.83, 1, "");
        code.body = Some(corpus("myproject/src/errors.ts"));
        let full = SearchView { full: true, ..view() };
        assert_eq!(search(&[guide.clone(), code], Format::Cli, &full), recorded("search-error-handling-full.txt"));

        // JSON swaps the snippet key for the body.
        let json = search(std::slice::from_ref(&guide), Format::Json, &full);
        assert!(json.contains("\"body\": \"# Error Handling Guide\\n"), "{json}");
        assert!(!json.contains("\"snippet\""), "{json}");
    }

    #[test]
    fn search_without_term_match_has_no_line_suffix() {
        let mut hit = journal_hits().remove(1);
        hit.score = 0.8;
        hit.line_matched = false;
        assert_eq!(search(&[hit], Format::Cli, &view()), recorded("search-phrase-may1.txt"));
    }

    #[test]
    fn search_snippet_with_trailing_blank_lines() {
        let hits = [
            hit(
                "0caf6d",
                "notes",
                "journals/2025-05-01.md",
                "May 1 Journal",
                JOURNAL_CONTEXT,
                0.81,
                3,
                "@@ -2,3 @@ (1 before, 0 after)\n\nToday I worked on the search engine.\n",
            ),
            hit(
                "9e1671",
                "notes",
                "meeting.md",
                "Team Meeting Notes",
                KB,
                0.73,
                41,
                "@@ -40,4 @@ (39 before, 0 after)\n\n- Alice: finish the search engine review\n- Bob: update the index format doc\n",
            ),
        ];
        assert_eq!(search(&hits, Format::Cli, &view()), recorded("search-search-engine-n3.txt"));
    }

    #[test]
    fn search_line_numbers_in_other_formats() {
        let hits = &journal_hits()[..1];
        let numbered = SearchView { line_numbers: true, ..view() };
        let json = search(hits, Format::Json, &numbered);
        assert!(
            json.contains("\"snippet\": \"1: @@ -1,3 @@ (0 before, 1 after)\\n2: # May 2 Journal\\n3: \\n4: Continued")
        );
        let csv = search(hits, Format::Csv, &numbered);
        assert!(csv.contains(",1,\"1: @@ -1,3 @@ (0 before, 1 after)\n2: # May 2 Journal\n3: \n4: Continued"));
        let md = search(hits, Format::Md, &numbered);
        assert!(md.ends_with(
            "\n\n1: @@ -1,3 @@ (0 before, 1 after)\n2: # May 2 Journal\n3: \n4: Continued work on the index format.\n\n"
        ));
    }

    #[test]
    fn search_full_path_replaces_uri_and_docid() {
        let hits = &journal_hits()[..1];
        let full_path = SearchView { full_path: true, ..view() };
        let cli = search(hits, Format::Cli, &full_path);
        assert!(cli.starts_with("/corpus/notes/journals/2025-05-02.md:1\nTitle:"), "{cli}");
        let files = search(hits, Format::Files, &full_path);
        assert!(files.starts_with("0.65,/corpus/notes/journals/2025-05-02.md,\"Personal"), "{files}");
        let csv = search(hits, Format::Csv, &full_path);
        assert!(csv.contains("\n,0.6490,/corpus/notes/"), "{csv}");
        let json = search(hits, Format::Json, &full_path);
        assert!(!json.contains("docid"), "{json}");

        // Unresolved rows keep the qmd:// name and docid.
        let mut lost = hits[0].clone();
        lost.source_path.clear();
        let cli = search(&[lost], Format::Cli, &full_path);
        assert!(cli.starts_with("qmd://notes/journals/2025-05-02.md:1 #68db8b\n"), "{cli}");
    }

    #[test]
    fn search_colour_wraps_path_and_score() {
        let mut hits = journal_hits();
        hits[0].score = 0.91;
        let out = render_search(&hits[..1], Format::Cli, &view(), &Style { color: true });
        assert!(out.starts_with("\x1b[36mqmd://notes/journals/2025-05-02.md\x1b[2m:1\x1b[0m \x1b[2m#68db8b\x1b[0m\n"));
        assert!(out.contains("Score: \x1b[1m\x1b[32m 91%\x1b[0m\x1b[0m\n"), "{out:?}");
    }

    #[test]
    fn search_xml_escapes_only_attribute_quotes() {
        let mut hit = journal_hits().remove(0);
        hit.title = "A \"quoted\" <title>".into();
        hit.snippet = "a < b & c".into();
        let out = search(&[hit], Format::Xml, &view());
        assert!(out.contains(" title=\"A &quot;quoted&quot; <title>\""), "{out}");
        assert!(out.contains(">\na < b & c\n</file>\n\n"), "{out}");
    }

    fn document(docid: &str, coll: &str, path: &str, title: &str, ctx: Option<&str>, body: &str) -> Document {
        Document {
            docid: docid.into(),
            collection: coll.into(),
            path: path.into(),
            title: title.into(),
            context: ctx.map(Into::into),
            body: body.into(),
            source_path: format!("/corpus/{coll}/{path}"),
            size: body.len() as u64,
        }
    }

    fn entry(doc: Document) -> MultiGetEntry {
        MultiGetEntry { doc, skipped: None }
    }

    fn journal_entries() -> Vec<MultiGetEntry> {
        [("0caf6d", "2025-05-01", "May 1 Journal"), ("68db8b", "2025-05-02", "May 2 Journal")]
            .map(|(docid, date, title)| {
                let path = format!("journals/{date}.md");
                let body = add_line_numbers(&corpus(&format!("notes/{path}")), 1);
                entry(document(docid, "notes", &path, title, Some(JOURNAL_CONTEXT), &body))
            })
            .into()
    }

    fn data_entries() -> Vec<MultiGetEntry> {
        let mut large = entry(document("db4a7e", "myproject", "data/large.json", "Large", Some(KB), ""));
        large.skipped = Some("File too large (12KB > 5KB)".into());
        let small_body = add_line_numbers(&corpus("myproject/data/small.json"), 1);
        let small = entry(document("80af32", "myproject", "data/small.json", "small", Some(KB), &small_body));
        vec![large, small]
    }

    #[test]
    fn multi_get_glob_every_format() {
        for (entries, stem) in [(journal_entries(), "journals"), (data_entries(), "data-maxbytes")] {
            let cli = if stem == "journals" {
                "multi-get-journals-glob.txt".to_string()
            } else {
                format!("multi-get-{stem}.txt")
            };
            assert_eq!(render_multi_get(&entries, Format::Cli, false, false), recorded(&cli), "{cli}");
            for (format, name) in [
                (Format::Json, "json"),
                (Format::Csv, "csv"),
                (Format::Md, "md"),
                (Format::Xml, "xml"),
                (Format::Files, "files"),
            ] {
                let file = format!("multi-get-{stem}-format-{name}.txt");
                assert_eq!(render_multi_get(&entries, format, false, false), recorded(&file), "{file}");
            }
        }
    }

    #[test]
    fn multi_get_list_uses_qmd_paths() {
        let api = add_line_numbers(&corpus("myproject/docs/api.md"), 1);
        let entries = [entry(document("fa00fd", "myproject", "docs/api.md", "API Reference", Some(KB), &api))];
        assert_eq!(render_multi_get(&entries, Format::Cli, true, false), recorded("multi-get-missing-and-api.txt"));
    }

    #[test]
    fn multi_get_glob_source_context() {
        let code = |docid, path| {
            let body = add_line_numbers(&corpus(&format!("myproject/{path}")), 1);
            entry(document(docid, "myproject", path, "x", Some(SRC_CONTEXT), &body))
        };
        let entries = [code("cd9f6f", "src/utils.ts"), code("405518", "src/errors.ts")];
        assert_eq!(render_multi_get(&entries, Format::Cli, false, false), recorded("multi-get-doublestar.txt"));
    }

    #[test]
    fn multi_get_full_path_drops_docid() {
        let entries = data_entries();
        let files = render_multi_get(&entries, Format::Files, false, true);
        assert_eq!(
            files,
            "/corpus/myproject/data/large.json,\"Personal knowledge base\",[SKIPPED]\n\
             /corpus/myproject/data/small.json,\"Personal knowledge base\"\n"
        );
        let json = render_multi_get(&entries, Format::Json, false, true);
        assert!(!json.contains("docid"), "{json}");
        // The hint still names the file the way `qmd get` accepts it.
        assert!(json.contains("Use 'qmd get data/large.json' to retrieve."), "{json}");
    }

    #[test]
    fn multi_get_empty() {
        assert_eq!(render_multi_get(&[], Format::Json, true, false), "[]\n");
        assert_eq!(render_multi_get(&[], Format::Cli, true, false), "");
        assert_eq!(
            render_multi_get(&[], Format::Xml, true, false),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<documents>\n</documents>\n"
        );
    }

    #[test]
    fn get_renders_header_context_and_body() {
        let errors = add_line_numbers(&corpus("myproject/docs/errors.md"), 1);
        let doc = document("0160b9", "myproject", "docs/errors.md", "Error Handling Guide", Some(KB), &errors);
        assert_eq!(render_get(&doc, false), recorded("get-docs-errors.txt"));

        let meeting = corpus("notes/meeting.md").split('\n').take(3).collect::<Vec<_>>().join("\n");
        let doc =
            document("9e1671", "notes", "meeting.md", "Team Meeting Notes", Some(KB), &add_line_numbers(&meeting, 1));
        assert_eq!(render_get(&doc, false), recorded("get-meeting-l3.txt"));

        let doc = document(
            "405518",
            "myproject",
            "src/errors.ts",
            "errors",
            Some(SRC_CONTEXT),
            &corpus("myproject/src/errors.ts"),
        );
        assert_eq!(render_get(&doc, false), recorded("get-src-errors-no-line-numbers.txt"));
        assert!(render_get(&doc, true).starts_with("/corpus/myproject/src/errors.ts\nFolder Context:"));
    }

    #[test]
    fn line_numbers_match_add_line_numbers() {
        assert_eq!(add_line_numbers("a\n\nb", 100), "100: a\n101: \n102: b");
        assert_eq!(add_line_numbers("", 1), "1: ");
    }

    #[test]
    fn numbers_follow_javascript() {
        assert_eq!(to_fixed(0.125, 2), "0.13");
        assert_eq!(to_fixed(12.5, 0), "13");
        assert_eq!(to_fixed(0.649, 4), "0.6490");
        assert_eq!(to_fixed(-0.125, 2), "-0.13");
        assert_eq!(js_number(js_round(0.649 * 100.0) / 100.0), "0.65");
        assert_eq!(js_number(js_round(100.0) / 100.0), "1");
        assert_eq!(js_number(-0.0), "0");
        assert_eq!(format_score(1.0, &plain()), "100%");
        assert_eq!(format_score(0.05, &plain()), "  5%");
    }
}
