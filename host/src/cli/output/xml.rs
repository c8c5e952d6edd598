//! `xml`: qmd's elements, with every attribute and text escaped by
//! [`escape_xml`]. qmd copies titles, paths and page text in unescaped, so a
//! document holding `</file><file name="x">` forged result entries; here a
//! document without `<`, `>`, `&`, quotes or control characters prints
//! byte for byte as in qmd, and one with them cannot break the structure.

use super::*;

pub(super) fn search_xml(hits: &[SearchHit], view: &SearchView) -> String {
    let mut out = String::new();
    for hit in hits {
        let (ident, show_docid) = search_ident(hit, view);
        let docid = if show_docid { format!(" docid=\"#{}\"", escape_xml(&hit.docid)) } else { String::new() };
        let title = if hit.title.is_empty() { String::new() } else { format!(" title=\"{}\"", escape_xml(&hit.title)) };
        let context = nonempty(&hit.context).map(|c| format!(" context=\"{}\"", escape_xml(c))).unwrap_or_default();
        let content = numbered(search_content(hit, view), view, 1);
        out += &format!(
            "<file{docid} name=\"{}\"{title}{context}>\n{}\n</file>\n\n",
            escape_xml(&ident),
            escape_xml(&content)
        );
    }
    out
}

pub(super) fn multi_xml(rows: &[MultiRow]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<documents>\n");
    for row in rows {
        let docid = row.docid.map(|d| format!(" docid=\"#{}\"", escape_xml(d))).unwrap_or_default();
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

/// The one escape of every XML attribute value and text: control and
/// reordering characters shown as the terminal formats show them
/// (`\x1b`, `\r`, `\u{202e}`; XML 1.0 cannot hold most of them anyway),
/// then `&`, `<`, `>`, `"` and `'` as entities and U+FFFE/U+FFFF (not XML
/// characters) as `\u{fffe}`, so the output is always well-formed.
pub(super) fn escape_xml(value: &str) -> Cow<'_, str> {
    let shown = escape_controls_in_text(value);
    let special = |c: char| matches!(c, '&' | '<' | '>' | '"' | '\'' | '\u{fffe}' | '\u{ffff}');
    if !shown.contains(special) {
        return shown;
    }
    let mut out = String::with_capacity(shown.len() + 16);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\u{fffe}' | '\u{ffff}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}
