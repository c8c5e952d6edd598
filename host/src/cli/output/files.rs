//! `files`: one `#docid,score,path,context` line per hit.

use super::*;

pub(super) fn search_files(hits: &[SearchHit], view: &SearchView) -> String {
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

pub(super) fn multi_files(rows: &[MultiRow]) -> String {
    let mut out = String::new();
    for row in rows {
        let id = row.docid.map(|d| format!("#{d},")).unwrap_or_default();
        let ctx = row.context.map(|c| quoted_context(&escape_controls_in_text(c))).unwrap_or_default();
        let status = if row.skipped.is_some() { ",[SKIPPED]" } else { "" };
        out += &format!("{id}{}{ctx}{status}\n", escape_controls(&row.ident));
    }
    out
}
