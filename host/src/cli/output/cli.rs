//! The human format (`cli`): coloured blocks per hit, qmd's layout.

use super::*;

pub(super) fn search_cli(hits: &[SearchHit], view: &SearchView, style: &Style) -> String {
    let blocks: Vec<String> = hits.iter().map(|hit| cli_block(hit, view, style)).collect();
    // console.log('\n') between results: two blank lines.
    blocks.join("\n\n")
}

pub(super) fn cli_block(hit: &SearchHit, view: &SearchView, style: &Style) -> String {
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
pub(super) fn format_score(score: f64, style: &Style) -> String {
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

pub(super) fn multi_cli(rows: &[MultiRow]) -> String {
    let rule = "=".repeat(60);
    let mut out = String::new();
    for row in rows {
        let id = row.docid.map(|d| format!("  #{d}")).unwrap_or_default();
        out += &format!("\n{rule}\nFile: {}{id}\n{rule}\n\n", escape_controls(&row.ident));
        if let Some(reason) = &row.skipped {
            out += &format!("[SKIPPED: {}]\n", escape_controls(reason));
            continue;
        }
        if let Some(ctx) = row.context {
            out += &format!("Folder Context: {}\n---\n\n", escape_controls_in_text(ctx));
        }
        out += row.body;
        out += "\n";
    }
    out
}
