//! `md`: a markdown section per hit or document.

use super::*;

pub(super) fn search_md(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::new();
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let ident = escape_controls(&ident);
        let heading = if hit.title.is_empty() { ident.clone() } else { escape_controls(&hit.title) };
        out += &format!("---\n# {heading}\n**file:** `{ident}`\n");
        if show_docid && !hit.docid.is_empty() {
            out += &format!("**docid:** `#{}`\n", hit.docid);
        }
        if let Some(ctx) = nonempty(&hit.context) {
            out += &format!("**context:** {}\n", escape_controls_in_text(ctx));
        }
        out += &format!("\n{}\n\n", escape_controls_in_text(&numbered(search_content(hit, view), view, 1)));
    }
    out
}

pub(super) fn multi_md(rows: &[MultiRow]) -> String {
    let mut out = String::new();
    for row in rows {
        out += &format!("## {}\n\n", escape_controls(&row.ident));
        if let Some(docid) = row.docid {
            out += &format!("**docid:** `#{docid}`\n\n");
        }
        if !row.title.is_empty() && row.title != row.display {
            out += &format!("**Title:** {}\n\n", escape_controls(&row.title));
        }
        if let Some(ctx) = row.context {
            out += &format!("**Context:** {}\n\n", escape_controls_in_text(ctx));
        }
        match &row.skipped {
            Some(reason) => out += &format!("> {}\n\n", escape_controls(reason)),
            None => out += &format!("```\n{}\n```\n\n", row.body),
        }
    }
    out
}
