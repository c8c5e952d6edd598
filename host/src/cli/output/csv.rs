//! `csv`: qmd's columns and quoting.

use super::*;

pub(super) fn search_csv(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::from("docid,score,file,title,context,line,snippet\n");
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let docid = if show_docid && !hit.docid.is_empty() { format!("#{}", hit.docid) } else { String::new() };
        let content = numbered(search_content(hit, view), view, cli_start(hit, view));
        out += &format!(
            "{docid},{},{},{},{},{},{}\n",
            to_fixed(hit.score, 4),
            escape_csv(&escape_controls(&ident)),
            escape_csv(&escape_controls(&hit.title)),
            escape_csv(&escape_controls_in_text(nonempty(&hit.context).unwrap_or_default())),
            hit.line,
            escape_csv(&escape_controls_in_text(&content)),
        );
    }
    out
}

pub(super) fn multi_csv(rows: &[MultiRow]) -> String {
    let mut out = String::from("docid,file,title,context,skipped,body\n");
    for row in rows {
        let docid = row.docid.map(|d| format!("#{d}")).unwrap_or_default();
        let skipped = if row.skipped.is_some() { "true" } else { "false" };
        let body = row.skipped.as_deref().unwrap_or(row.body);
        // One-line fields shown escaped; the body is the file's own text, as `get` prints it.
        let (ident, title) = (escape_controls(&row.ident), escape_controls(&row.title));
        let context = escape_controls_in_text(row.context.unwrap_or_default());
        let fields: [&str; 6] = [docid.as_str(), &ident, &title, &context, skipped, body];
        out += &fields.map(escape_csv).join(",");
        out += "\n";
    }
    out
}

/// RFC 4180 quoting, applied only when the field needs it.
pub(super) fn escape_csv(value: &str) -> Cow<'_, str> {
    if value.contains([',', '"', '\n']) {
        Cow::Owned(format!("\"{}\"", value.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(value)
    }
}
