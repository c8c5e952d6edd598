//! `xml`: qmd's elements, escaping only what qmd escapes.

use super::*;

pub(super) fn search_xml(hits: &[SearchHit], view: &SearchView) -> String {
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

pub(super) fn multi_xml(rows: &[MultiRow]) -> String {
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

pub(super) fn escape_xml(value: &str) -> String {
    value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}
